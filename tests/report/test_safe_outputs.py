"""Outputs that lose nothing: atomic reports, checked output paths, one audit per tables
folder, CSV cells a spreadsheet will not run, and a CLI that answers a user's mistake in one
line and leaves the previous report intact when it is stopped."""

from __future__ import annotations

import os
import resource
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayesfair._output import check_output_file, neutralise_formulas
from bayesfair.cli import main
from bayesfair.report import Report, Table, Text

COMMON = ["--protected", "g", "s", "--outcome", "y", "--score", "p", "--threshold", "0.5"]
#: few resamples and replicate tables: these tests are about the outputs, not the statistics
QUICK = ["--n-resamples", "9"]
#: a stand-in for a report an earlier audit wrote: the package's generator tag is what lets
#: the CLI replace it
PREVIOUS_REPORT = '<meta name="generator" content="bayesfair previous"/>'


@pytest.fixture
def csv(tmp_path) -> Path:
    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame(
        {
            "g": rng.choice(["a", "b", "c"], n),
            "s": rng.choice(["F", "M"], n),
            "y": rng.integers(0, 2, n),
            "p": rng.random(n),
        }
    )
    path = tmp_path / "data.csv"
    df.to_csv(path, index=False)
    return path


def _report(text: str = "x") -> Report:
    rep = Report("Audit")
    rep.section("S").add(Text(text)).add(Table(pd.DataFrame({"v": [1, 2]})))
    return rep


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith((".part", ".old")))


# ------------------------------------------------------------------ atomic report writing
def test_failed_write_leaves_the_previous_report(tmp_path, monkeypatch):
    out = tmp_path / "r.html"
    _report("first").save(out)
    before = out.read_bytes()

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space"):
        _report("second").save(out)
    assert out.read_bytes() == before
    assert _leftovers(tmp_path) == []


def _interrupted_after(real, suffix):
    """``real`` (os.open, os.mkdir) that creates a name ending in ``suffix`` and then gets
    a SIGINT, as on the instant after a temporary file or folder is created."""

    def create(name, *args, **kwargs):
        out = real(name, *args, **kwargs)
        if str(name).endswith(suffix):
            raise KeyboardInterrupt
        return out

    return create


def test_a_signal_as_the_temporary_file_is_created_leaves_nothing(tmp_path, monkeypatch):
    out = tmp_path / "r.html"
    _report("first").save(out)
    before = out.read_bytes()
    monkeypatch.setattr(os, "open", _interrupted_after(os.open, ".part"))
    with pytest.raises(KeyboardInterrupt):
        _report("second").save(out)
    assert out.read_bytes() == before
    assert _leftovers(tmp_path) == []


@pytest.mark.parametrize("suffix", [".part", ".old"])
def test_a_signal_as_a_tables_folder_is_created_leaves_the_previous_set(
    tmp_path, monkeypatch, suffix
):
    folder = tmp_path / "t"
    _report().save_tables(folder)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    monkeypatch.setattr(os, "mkdir", _interrupted_after(os.mkdir, suffix))
    with pytest.raises(KeyboardInterrupt):
        _report("new").save_tables(folder)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert _leftovers(tmp_path) == []


def test_a_temporary_name_another_process_holds_is_skipped_and_kept(tmp_path, monkeypatch):
    names = iter(["0" * 12, "1" * 12])
    monkeypatch.setattr("bayesfair._output.secrets.token_hex", lambda n: next(names))
    theirs = tmp_path / f".r.html.{'0' * 12}.part"
    theirs.write_text("another run's file")
    _report("mine").save(tmp_path / "r.html")
    assert theirs.read_text() == "another run's file"
    assert "mine" in (tmp_path / "r.html").read_text()
    assert _leftovers(tmp_path) == [theirs.name]


def test_report_keeps_the_umask_mode_and_replaces_only_its_own_files(tmp_path):
    out = tmp_path / "r.html"
    _report().save(out)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~_umask()
    _report("again").save(out)  # a previous report is replaced
    assert "again" in out.read_text()
    notes = tmp_path / "notes.html"
    notes.write_text("my notes")
    with pytest.raises(ValueError, match=r"not a bayesfair report.*overwrite=True"):
        _report().save(notes)
    assert notes.read_text() == "my notes"
    _report().save(notes, overwrite=True)
    assert "bayesfair" in notes.read_text()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@pytest.mark.parametrize(
    "make, pattern",
    [
        (lambda d: d, "is a folder"),
        (lambda d: (d / "afile").touch() or d / "afile" / "r.html", "is a file, not a folder"),
        (lambda d: Path("/dev/full"), "not a regular file"),
        (lambda d: Path("/dev/null"), "not a regular file"),
    ],
    ids=["folder", "under-a-file", "dev-full", "dev-null"],
)
def test_output_paths_that_cannot_be_written_are_refused(tmp_path, make, pattern):
    with pytest.raises(ValueError, match=pattern):
        check_output_file(make(tmp_path), argument="--out")


def test_to_html_with_a_path_names_save(tmp_path):
    """``to_html(path)``, as pandas takes it, is refused with the call that writes a file."""
    with pytest.raises(TypeError, match=r"report.save\(.*r.html'\)"):
        _report().to_html(str(tmp_path / "r.html"))
    assert not (tmp_path / "r.html").exists()
    assert _report().to_html().startswith("<!DOCTYPE html>")


def test_output_in_a_read_only_folder_is_refused(tmp_path, monkeypatch):
    # the suite runs as root in CI, who may write anywhere: the folder's permission is
    # what os.access reports
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != tmp_path)
    with pytest.raises(ValueError, match="no permission to write in"):
        check_output_file(tmp_path / "r.html")
    with pytest.raises(ValueError, match="no permission to write in"):
        check_output_file(tmp_path / "new" / "r.html")  # the folder would be made there


# ------------------------------------------------------------------ tables folders
def test_a_tables_folder_holds_one_audit(tmp_path):
    folder = tmp_path / "t"
    rep = _report()
    rep.section("Second").add(Table(pd.DataFrame({"w": [3]})))
    rep.save_tables(folder)
    assert sorted(p.name for p in folder.iterdir()) == [
        "01-1_s.csv",
        "02-1_second.csv",
        "index.csv",
    ]
    _report().save_tables(folder)  # a smaller audit replaces the whole set
    assert sorted(p.name for p in folder.iterdir()) == ["01-1_s.csv", "index.csv"]
    assert _leftovers(tmp_path) == []


def test_a_folder_with_other_files_is_refused_and_left_alone(tmp_path):
    (tmp_path / "index.csv").write_text("x,y\n1,2\n")
    with pytest.raises(ValueError, match="not a previous set of bayesfair tables"):
        _report().save_tables(tmp_path)
    assert (tmp_path / "index.csv").read_text() == "x,y\n1,2\n"
    folder = tmp_path / "t"
    _report().save_tables(folder)
    (folder / "mine.txt").write_text("keep")
    with pytest.raises(ValueError, match=r"mine\.txt"):
        _report().save_tables(folder)
    assert (folder / "mine.txt").read_text() == "keep"


def test_a_failed_tables_write_keeps_the_previous_set(tmp_path, monkeypatch):
    folder = tmp_path / "t"
    _report().save_tables(folder)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}

    def boom(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", boom)
    with pytest.raises(OSError):
        _report("new").save_tables(folder)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert _leftovers(tmp_path) == []


def test_tables_neutralise_spreadsheet_formulas(tmp_path):
    frame = pd.DataFrame(
        {
            "=cmd": ["=HYPERLINK(1)", "+1", "-2+3", "@SUM(A1)", "\tx", "plain", "-"],
            "number": [-1.5, 2, 3, 4, 5, 6, 7],
        }
    )
    rep = Report("Audit")
    rep.section("=evil").add(Table(frame, caption="@caption"))
    index = pd.read_csv(rep.save_tables(tmp_path / "t"), keep_default_na=False)
    assert index.loc[0, "caption"] == "'@caption" and index.loc[0, "section"] == "'=evil"
    back = pd.read_csv(tmp_path / "t" / index.loc[0, "file"], keep_default_na=False)
    assert list(back.columns) == ["'=cmd", "number"]
    assert back["'=cmd"].tolist() == [
        "'=HYPERLINK(1)",
        "'+1",
        "'-2+3",
        "'@SUM(A1)",
        "'\tx",
        "plain",
        "'-",
    ]
    assert back["number"].tolist() == [-1.5, 2, 3, 4, 5, 6, 7]  # numbers stay numbers


def test_neutralise_formulas_leaves_the_frame_alone():
    frame = pd.DataFrame({"a": ["=1"], "b": pd.Categorical(["+x"])})
    out = neutralise_formulas(frame)
    assert frame.loc[0, "a"] == "=1" and out.loc[0, "a"] == "'=1" and out.loc[0, "b"] == "'+x"


# ------------------------------------------------------------------ the command line
@pytest.mark.parametrize(
    "extra, message",
    [
        (["--out", "{csv}"], "is the input file"),
        (["--out", "{tmp}"], "is a folder"),
        (["--out", "/dev/full"], "not a regular file"),
        (["--out", "{tmp}/afile/r.html"], "is a file, not a folder"),
        (["--out", "{tmp}/notes.html"], "not a bayesfair report; pass --force"),
        (["--out", "{tmp}/r.html", "--tables", "{tmp}/afile"], "is a file; give a folder"),
        (["--out", "{tmp}/r.html", "--tables", "{tmp}"], "not a previous set"),
        (["--out", "{tmp}/r.html", "--tables", "{tmp}/r.html"], "same path"),
    ],
    ids=[
        "input",
        "folder",
        "dev-full",
        "under-file",
        "foreign",
        "tables-file",
        "tables-foreign",
        "same",
    ],
)
def test_cli_refuses_output_paths_before_any_work(
    tmp_path, csv, capsys, monkeypatch, extra, message
):
    (tmp_path / "afile").write_text("a file")
    (tmp_path / "notes.html").write_text("my notes")
    import bayesfair.cli as cli

    def no_audit(*args, **kwargs):  # the check must come before the computation
        raise AssertionError("the audit ran")

    monkeypatch.setattr(cli, "audit", no_audit)
    args = [a.format(csv=csv, tmp=tmp_path) for a in extra]
    assert main(["audit", str(csv), *COMMON, *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert (tmp_path / "notes.html").read_text() == "my notes"
    assert pd.read_csv(csv).shape == (400, 4)


def test_cli_force_replaces_a_foreign_file_but_never_the_input(tmp_path, csv, capsys):
    notes = tmp_path / "notes.html"
    notes.write_text("my notes")
    assert main(["audit", str(csv), *COMMON, *QUICK, "--out", str(notes), "--force"]) == 0
    assert "bayesfair" in notes.read_text()
    assert main(["audit", str(csv), *COMMON, *QUICK, "--out", str(csv), "--force"]) == 2
    assert "is the input file" in capsys.readouterr().err


def test_cli_reads_na_like_categories_as_categories(tmp_path, capsys):
    rng = np.random.default_rng(1)
    n = 300
    df = pd.DataFrame(
        {
            "g": rng.choice(["NA", "None", "null", "x"], n),
            "y": rng.integers(0, 2, n),
        }
    )
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "r.html"
    argv = ["audit", str(path), "--protected", "g", "--outcome", "y", *QUICK, "--out", str(out)]
    assert main(argv) == 0
    html = out.read_text()
    assert all(f"<td>{v}</td>" in html for v in ("NA", "None", "null"))
    # an empty cell is still missing, and said so by name
    df.loc[0, "g"] = None
    df.to_csv(path, index=False)
    assert main(["audit", str(path), "--protected", "g", "--outcome", "y", "--out", str(out)]) == 2
    assert "protected column 'g' has 1 missing value" in capsys.readouterr().err


def test_cli_encoding(tmp_path, capsys):
    df = pd.DataFrame({"g": ["é", "ü"] * 50, "y": [0, 1] * 50})
    path = tmp_path / "latin.csv"
    df.to_csv(path, index=False, encoding="latin-1")
    args = ["audit", str(path), "--protected", "g", "--outcome", "y", *QUICK, "--out"]
    assert main([*args, str(tmp_path / "a.html")]) == 2
    assert "--encoding" in capsys.readouterr().err
    assert main([*args, str(tmp_path / "b.html"), "--encoding", "latin-1"]) == 0
    assert "é" in (tmp_path / "b.html").read_text()


@pytest.mark.parametrize(
    "text, flags, message",
    [
        ("audit = 5\n", [], "audit must be a table"),
        ('data = "csv"\n', [], "data must be a table"),
        ("published = 3\n", [], "published must be an array of tables"),
        ('[audit]\nname = 5\n[data]\ndataset = "compas"\n', [], "name must be a string"),
        ('[data]\ndataset = "compas"\n[columns]\noutcome = 1\n', [], "outcome must be a column"),
        ('[data]\ndataset = "compas"\n[columns]\nprotected = [1]\n', [], "protected must be"),
        ('[data]\ndataset = "compas"\n', ["--threshold", "0.5"], "--threshold cannot be used"),
        ('[data]\ndataset = "compas"\n', ["--counts"], "--counts cannot be used"),
        ('[data]\ndataset = "compas"\n', ["--protected", "a"], "--protected cannot be used"),
        ("[data\n", [], "not valid TOML"),
    ],
)
def test_cli_refuses_bad_specs_by_name(tmp_path, capsys, text, flags, message):
    spec = tmp_path / "s.TOML"  # the suffix is matched whatever its case
    spec.write_text(text)
    assert main(["audit", str(spec), *flags, "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_cli_internal_errors_print_a_traceback_and_exit_1(csv, tmp_path, capsys, monkeypatch):
    import bayesfair.cli as cli

    def bug(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(cli, "audit", bug)
    assert main(["audit", str(csv), *COMMON, *QUICK, "--out", str(tmp_path / "r.html")]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "internal error" in err
    # an input error shows its traceback with --debug only
    assert main(["audit", str(tmp_path / "no.csv"), "--debug"]) == 2
    assert "Traceback" in capsys.readouterr().err


@pytest.mark.parametrize("stop, code", [(KeyboardInterrupt, 130), (None, 143)])
def test_cli_a_stop_wrapped_by_c_code_is_still_a_stop(
    csv, tmp_path, capsys, monkeypatch, stop, code
):
    """A signal's exception raised while C code calls back into Python (numba loading a
    cached kernel) comes back as ``SystemError ... returned a result with an exception set``
    caused by the stop (seen in CI: SIGTERM mid-audit exited 1 with a traceback); the
    command line exits as for the stop itself (130 or 143), saying nothing was written."""
    import bayesfair.cli as cli
    from bayesfair._output import Terminated

    def interrupted(*args, **kwargs):
        try:
            raise (stop or Terminated)(*(() if stop else (143,)))
        except BaseException as err:
            raise SystemError(
                "<function _numba_unpickle> returned a result with an exception set"
            ) from err

    monkeypatch.setattr(cli, "audit", interrupted)
    out = tmp_path / "r.html"
    assert main(["audit", str(csv), *COMMON, *QUICK, "--out", str(out)]) == code
    err = capsys.readouterr().err
    assert "nothing was written" in err and "Traceback" not in err and not out.exists()


#: a stop whose handler runs inside a finalizer (the collector frees garbage with a
#: ``__del__`` at the moment the signal is handled), then a step after it
SWALLOWED_STOP = """
import gc, signal, sys, time
from bayesfair._output import stop_on_signals
class Finalised:
    def __del__(self):
        signal.raise_signal(signal.{sig})
with stop_on_signals():
    a = Finalised(); a.cycle = a; del a
    gc.collect()
    {after}
print("not stopped", flush=True)
"""


@pytest.mark.parametrize("after", ["time.sleep(20)", "pass"], ids=["blocking-call", "no-step"])
@pytest.mark.parametrize("sig, code", [("SIGTERM", 143), ("SIGINT", -signal.SIGINT)])
def test_a_stop_swallowed_by_a_finalizer_still_stops(sig, code, after):
    """The handler's exception cannot leave a ``__del__``, where Python may run it: the
    signal is delivered again, so a blocking call after it (a download's read, here a
    sleep of 20 s) is interrupted at once, and a block that ends first raises the stop as
    it ends. Seen in a full run: SIGTERM sent to a stalled download exited 1 after the
    server's 30 s time-out, not 143."""
    script = SWALLOWED_STOP.format(sig=sig, after=after)
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert (proc.returncode, proc.stdout) == (code, ""), proc.stderr
    assert time.monotonic() - start < 15  # the sleep did not run out


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_stop_raised_as_the_block_ends_is_not_delivered_again_after_it(sig):
    """A swallowed stop that the block's end raises is not sent again once the block is
    over: the caller's clean-up after it (here 0.5 s, ten times the delay) runs to its end
    under the handlers the block restored, which would otherwise end the process."""
    script = SWALLOWED_STOP.format(sig=sig, after="pass").replace(
        'print("not stopped", flush=True)', ""
    )
    caught = (
        "try:\n"
        + textwrap.indent(script, "    ")
        + (
            "\nexcept (KeyboardInterrupt, SystemExit) as stop:\n"
            "    time.sleep(0.5)\n"
            "    print('cleaned up after', type(stop).__name__, flush=True)\n"
        )
    )
    proc = subprocess.run(
        [sys.executable, "-c", "import time\n" + caught],
        capture_output=True,
        text=True,
        timeout=60,
    )
    stop = "Terminated" if sig == "SIGTERM" else "KeyboardInterrupt"
    assert (proc.returncode, proc.stdout) == (0, f"cleaned up after {stop}\n"), proc.stderr


def test_cli_write_failure_leaves_the_previous_report(tmp_path, csv):
    """A file-size limit makes the report's write fail (as a full disk would): the CLI
    says so in one line, exits 2, and the previous report is intact."""
    out = tmp_path / "r.html"
    out.write_text(PREVIOUS_REPORT)
    before = out.read_bytes()

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bayesfair.cli",
            "audit",
            str(csv),
            *COMMON,
            *QUICK,
            "--out",
            str(out),
        ],
        preexec_fn=limit,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    assert "File too large" in proc.stderr and "Traceback" not in proc.stderr
    assert out.read_bytes() == before
    assert _leftovers(tmp_path) == []


@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_cli_stopped_mid_audit_leaves_the_previous_report(tmp_path, csv, sig, code):
    out = tmp_path / "r.html"
    out.write_text(PREVIOUS_REPORT)
    before = out.read_bytes()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bayesfair.cli",
            "audit",
            str(csv),
            *COMMON,
            "--bayes",
            "--out",
            str(out),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    # wait until the audit is under way (it announces its steps on stderr)
    line = proc.stderr.readline()
    assert "bayesfair: [" in line, line
    time.sleep(0.5)
    proc.send_signal(sig)
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == code, err
    assert "nothing was written" in err and "Traceback" not in err
    assert out.read_bytes() == before
    assert _leftovers(tmp_path) == []


def test_concurrent_tables_writes_leave_one_whole_audit(tmp_path):
    """Two runs writing the same --tables folder at once: the folder ends up holding one of
    the two sets whole (its files are exactly those its index lists), never a mix: the runs
    build their sets apart and swap them in one at a time."""
    import threading

    folder = tmp_path / "t"
    small, large = _report("small"), _report("large")
    large.section("Second").add(Table(pd.DataFrame({"w": range(50)})))
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def write(rep):
        barrier.wait()
        try:
            rep.save_tables(folder)
        except (OSError, ValueError) as err:
            errors.append(err)

    for _ in range(20):
        threads = [threading.Thread(target=write, args=(r,)) for r in (small, large)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        index = pd.read_csv(folder / "index.csv")
        assert {p.name for p in folder.iterdir()} == {*index["file"], "index.csv"}
        assert set(index["file"]) in ({"01-1_s.csv"}, {"01-1_s.csv", "02-1_second.csv"})
        assert _leftovers(tmp_path) == []
    assert errors == []  # the swaps take turns: each run replaces the set before it


def test_a_report_of_an_earlier_version_is_replaced(tmp_path):
    """Reports written before the generator tag (their version line is near the top) are
    bayesfair's too: `make demo` run again over an old report.html replaces it."""
    old = _report("old").to_html()
    old = old.replace(old[old.index('<meta name="generator"') : old.index("<title>")], "")
    assert "generator" not in old
    out = tmp_path / "report.html"
    out.write_text(old)
    _report("new").save(out)
    assert "new" in out.read_text()
