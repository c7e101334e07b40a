"""Run every benchmark in this folder and print one table of ratios against named baselines.

Usage: ``python benchmarks/run.py [--quick] [name ...]`` (``make bench``).  Each
``bench_*.py`` module has ``run(quick: bool) -> list[dict]`` returning rows with
``benchmark``, ``bayesfair_s``, ``baseline``, ``baseline_s`` (and optional ``note``),
all measured in the same process, in the same run.
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("names", nargs="*", help="benchmark modules to run (default: all)")
    args = parser.parse_args()
    rows = []
    for path in sorted(HERE.glob("bench_*.py")):
        if args.names and path.stem.removeprefix("bench_") not in args.names:
            continue
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        print(f"running {path.name} ...", file=sys.stderr, flush=True)
        rows.extend(module.run(quick=args.quick))
    print(f"\nbayesfair benchmarks — python {platform.python_version()}, {platform.machine()}")
    header = (
        f"{'benchmark':<52} {'bayesfair':>11} {'baseline':<34} {'baseline':>11} {'speed-up':>9}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        ratio = r["baseline_s"] / r["bayesfair_s"] if r.get("baseline_s") else float("nan")
        base_s = f"{r['baseline_s']:.3f} s" if r.get("baseline_s") else "—"
        print(
            f"{r['benchmark']:<52} {r['bayesfair_s']:>9.3f} s {r.get('baseline', '—'):<34} "
            f"{base_s:>11} {ratio:>8.1f}x"
        )
        if r.get("note"):
            print(f"    {r['note']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
