"""Open a bayesfair report in headless Chromium at 1,400 x 900 and check its layout.

Checks: the report opens with the "Answers" section, whose heading and table start above
the fold (y < 900); no page-level horizontal scrolling (the document is no wider than the
window); every table either fits the page or scrolls inside its own box, whose right edge
lies within the page.  Writes a screenshot beside the report.  Exit status 0 when every
check passes, 1 otherwise.

Usage: python scripts/check_report_in_browser.py report.html [--chromium PATH]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

WIDTH, HEIGHT = 1400, 900
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    f"--window-size={WIDTH},{HEIGHT}",
]
PROBE = """
<script>
window.addEventListener("load", () => {
  const page = document.documentElement.clientWidth;
  const first = document.querySelector("section");
  const answers = first && first.querySelector("h2").textContent;
  const answersTable = first && first.querySelector("table");
  const boxes = [...document.querySelectorAll("table")].map((t) => {
    const box = t.closest(".scroll") || t;
    return {right: box.getBoundingClientRect().right, scrolls: box !== t};
  });
  const out = {
    page: page,
    documentWidth: document.documentElement.scrollWidth,
    firstSection: answers,
    answersTop: first ? first.getBoundingClientRect().top : null,
    answersTableTop: answersTable ? answersTable.getBoundingClientRect().top : null,
    boxesOutside: boxes.filter((b) => b.right > page + 1).length,
    tables: boxes.length,
  };
  const pre = document.createElement("pre");
  pre.id = "layout-check";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def _chromium(given: str | None) -> str:
    for name in [given, "chromium", "chromium-browser", "google-chrome"]:
        if name and shutil.which(name):
            return shutil.which(name)
    sys.exit("no Chromium found: install it (Debian: apt-get install chromium) or pass --chromium")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report")
    parser.add_argument("--chromium")
    args = parser.parse_args()
    report = Path(args.report).resolve()
    browser = _chromium(args.chromium)
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.html"
        probe.write_text(report.read_text().replace("</body>", PROBE + "</body>"))
        common = [browser, *FLAGS, f"--user-data-dir={tmp}/profile"]
        dom = subprocess.run(
            [*common, "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120
        ).stdout
        shot = report.with_suffix(".png")
        subprocess.run(
            [*common, f"--screenshot={shot}", report.as_uri()], capture_output=True, timeout=120
        )
    found = re.search(r'<pre id="layout-check">(.*?)</pre>', dom, flags=re.S)
    if not found:
        print("the layout probe did not run", file=sys.stderr)
        return 1
    m = json.loads(found.group(1).replace("&quot;", '"'))
    checks = {
        "the report opens with Answers": m["firstSection"] == "Answers",
        f"Answers starts above the fold (top {m['answersTop']:.0f} px < {HEIGHT})": (
            m["answersTop"] is not None and m["answersTop"] < HEIGHT
        ),
        f"its table starts above the fold (top {m['answersTableTop']:.0f} px)": (
            m["answersTableTop"] is not None and m["answersTableTop"] < HEIGHT
        ),
        f"no page-wide horizontal scroll ({m['documentWidth']} <= {m['page']} px)": (
            m["documentWidth"] <= m["page"]
        ),
        f"every one of {m['tables']} tables fits or scrolls in its own box": (
            m["boxesOutside"] == 0
        ),
    }
    for what, ok in checks.items():
        print(f"{'ok  ' if ok else 'FAIL'} {what}")
    print(f"screenshot: {shot}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
