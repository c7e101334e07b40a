"""The ``bayesfair`` command: ``demo`` and ``audit``."""

from __future__ import annotations

import argparse
import sys
import traceback
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ._csv_input import read_csv
from ._output import (
    Terminated,
    check_output_file,
    check_output_folder,
    raise_if_stopped,
    stop_in_chain,
    stop_on_signals,
)
from ._sampling import SamplerWarning
from ._validation import check_n_jobs
from ._vocabulary import LEVEL, N_RESAMPLES, PSEUDO_COUNT
from .data import AuditData
from .datasets import make_gaussian_threshold
from .full_audit import audit
from .report import Report, Table, Text
from .spec import load_spec, run_study

__all__ = ["main"]

DEMO_LEVELS = {
    "race": ["Group A", "Group B", "Group C", "Group D"],
    "sex": ["Female", "Male"],
    "age": ["under 25", "25-45", "over 45"],
}


def demo_dataset(n_rows: int = 20_000, seed: int = 2024):
    """The demo's synthetic data: 24 intersections of very unequal size, one of them empty."""
    rng = np.random.default_rng(seed)
    n_groups = int(np.prod([len(v) for v in DEMO_LEVELS.values()]))
    sizes = rng.multinomial(n_rows, rng.dirichlet(np.full(n_groups, 0.6)))
    sizes[-1] = 0  # an intersection absent from the sample: the report must show it
    return make_gaussian_threshold(DEMO_LEVELS, group_sizes=sizes, random_state=rng)


def _whole_audit(data: AuditData, args: argparse.Namespace, *, bayes: bool, **kw):
    """:func:`bayesfair.audit` with the command line's options."""
    return audit(
        data,
        bayes=bayes,
        random_state=args.seed,
        draws=args.draws,
        hb_main_effects=args.hb_main_effects,
        n_resamples=args.n_resamples,
        level=args.level,
        progress=True,  # each step on stderr: a large audit with --bayes runs for minutes
        n_jobs=args.n_jobs,
        **kw,
    )


def _check_outputs(args: argparse.Namespace, inputs: Sequence[Path] = ()) -> None:
    """Refuse, before any computation, output paths that cannot or must not be written:
    an input file, a folder, a path under a file, a device, another program's file
    (without ``--force``), a ``--tables`` folder holding other files."""
    check_output_file(args.out, inputs=inputs, overwrite=args.force, argument="--out")
    if args.tables:
        check_output_folder(args.tables, argument="--tables")
        if Path(args.tables).expanduser().resolve() == Path(args.out).expanduser().resolve():
            raise ValueError("--tables and --out name the same path; give each its own")


def _finish(rep: Report, result, args: argparse.Namespace) -> int:
    """Save the report (and its tables, with ``--tables``), print the answers (the report's
    first section), the parts that did not run and why, and where the report is."""
    raise_if_stopped()
    path = rep.save(args.out, overwrite=args.force)
    print(answers_text(result.to_frame()))
    if result.not_run:
        print("Not run:\n" + "\n".join(f"  - {line}" for line in result.not_run_lines()))
    print(f"\nreport written to {path}")
    if args.tables:
        print(f"tables written to {rep.save_tables(args.tables).parent} (see index.csv)")
    return 0


def answers_text(answers: pd.DataFrame) -> str:
    """The audit's answers (:meth:`FullAuditResult.to_frame`) as lines for a terminal: each
    question, then each of its answers with its interval.

    Parameters
    ----------
    answers : pandas.DataFrame
        Columns ``question``, ``answer`` and ``interval``.

    Returns
    -------
    str

    Examples
    --------
    >>> import pandas as pd
    >>> print(answers_text(pd.DataFrame({"question": ["Q?"], "answer": ["a = 1"],
    ...                                  "interval": ["[0, 2] (90% CI)"]})))
    Q?
      - a = 1; [0, 2] (90% CI)
    """
    lines = []
    for question, rows in answers.groupby("question", sort=False):
        lines.append(str(question))
        for answer, interval in zip(rows["answer"], rows["interval"], strict=True):
            shown = isinstance(interval, str) and interval not in ("", "—")
            lines.append(f"  - {answer}" + (f"; {interval}" if shown else ""))
    return "\n".join(lines)


def _demo(args: argparse.Namespace) -> int:
    _check_outputs(args)
    ds = demo_dataset(args.n_rows, args.seed)
    data = ds.audit_data()
    result = _whole_audit(
        data,
        args,
        bayes=not args.no_bayes,
        pseudo_count=args.pseudo_count,
        name="synthetic demo",
        truth=ds.truth,
    )
    rep = result.report()
    # the data set's description names the model (Foulds et al.'s Gaussian threshold model)
    rep.subtitle = "Synthetic data with known ground truth. " + ds.description
    truth = ds.truth["table"].copy()
    truth.insert(len(DEMO_LEVELS), "intersection", data.group_labels)
    sec = rep.section("Ground truth of the synthetic data")
    sec.add(
        Text(
            f"True epsilon-DF = {ds.truth['epsilon']:.4f}, true gamma-SF = {ds.truth['gamma']:.4f}."
        )
    )
    sec.add(Table(truth, float_format="{:.4f}"))
    return _finish(rep, result, args)


def _cli_label(label: str | None, column: pd.Series | None):
    """The command line gives ``--pos-label`` as text; a CSV column read as numbers needs
    it as a number (``--pos-label 1`` on a 0/1 or 1/2 column)."""
    if label is None or column is None or not pd.api.types.is_numeric_dtype(column.dtype):
        return label
    try:
        value = float(label)
    except ValueError:
        return label
    return int(value) if value.is_integer() else value


#: flags that name columns or code them: a spec says these itself
_ROW_FLAGS = (
    "protected",
    "outcome",
    "score",
    "decision",
    "threshold",
    "pos_label",
    "covariates",
    "counts",
)


def _read_csv(source: Path, args: argparse.Namespace) -> pd.DataFrame:
    """Read a CSV file with the command line's ``--encoding``, ``--sep`` and ``--decimal``
    (:func:`bayesfair._csv_input.read_csv`: an audit spec's CSV is read alike)."""
    return read_csv(
        source,
        encoding=args.encoding,
        sep=args.sep,
        decimal=args.decimal,
        protected=args.protected or (),
        how=_flag,
    )


def _flag(option: str, value: str) -> str:
    """How the command line sets a CSV option: ``--sep ';'``, ``--decimal ,``."""
    return f"--{option} '{value}'" if option == "sep" else f"--{option} {value}"


def _audit(args: argparse.Namespace) -> int:
    source = Path(args.source)
    if not source.exists():
        raise FileNotFoundError(f"{source} does not exist")
    if not source.is_file():
        raise ValueError(f"{source} is not a file; give a CSV file or a .toml audit spec")
    published = []
    is_spec = source.suffix.lower() == ".toml"
    if args.data_home is not None and not is_spec:
        raise ValueError(
            "--data-home applies to specs (which load a packaged data set); a CSV file is "
            "read from its own path: remove --data-home"
        )
    if is_spec:
        given = [f for f in _ROW_FLAGS if getattr(args, f) not in (None, False)]
        if given:
            flags = ", ".join("--" + f.replace("_", "-") for f in given)
            raise ValueError(
                f"{flags} cannot be used with a spec ({source.name}), which names its own "
                "data and columns: edit its [columns] section, or audit the CSV file instead"
            )
    elif args.counts:
        if not args.protected:
            raise ValueError("a count table's audit needs --protected")
        if args.threshold is not None or args.pos_label is not None or args.covariates:
            raise ValueError(
                "--threshold and --pos-label apply to rows (as does --covariates); a count "
                "table has counted its decisions and positives already"
            )
    elif not args.protected or not args.outcome:
        raise ValueError("a CSV audit needs --protected and --outcome")
    _check_outputs(args, inputs=[source])
    if is_spec:
        spec = load_spec(source)
        data = spec.audit_data(data_home=args.data_home)
        pseudo_count = float(spec.metrics.get("pseudo_count", args.pseudo_count))
        name = spec.name
        published = spec.published
    elif args.counts:
        data = AuditData.from_counts(
            _read_csv(source, args),
            args.protected,
            outcome=args.outcome or "outcome",
            decision=args.decision,
            score=args.score,
        )
        pseudo_count = args.pseudo_count
        name = source.name
    else:
        frame = _read_csv(source, args)
        data = AuditData(
            frame,
            protected=args.protected,
            outcome=args.outcome,
            score=args.score,
            decision=args.decision,
            threshold=args.threshold,
            covariates=args.covariates,
            pos_label=_cli_label(args.pos_label, frame.get(args.outcome)),
        )
        pseudo_count = args.pseudo_count
        name = source.name
    result = _whole_audit(data, args, bayes=args.bayes, pseudo_count=pseudo_count, name=name)
    rep = result.report()
    if published:
        sec = rep.section("Published numbers this spec reproduces")
        sec.add(Table(pd.DataFrame(published)))
    return _finish(rep, result, args)


def _reproduce(args: argparse.Namespace) -> int:
    from ._output import atomic_file

    spec = load_spec(args.spec)
    if not spec.study:
        raise ValueError(f"{args.spec} has no [study] section; use `bayesfair audit`")
    if args.csv:
        csv = Path(args.csv).expanduser()
        check_output_file(csv, inputs=[args.spec], overwrite=True, argument="--csv")
    table = run_study(spec, data_home=args.data_home, small=args.small)
    with pd.option_context("display.width", 200, "display.max_columns", 50):
        print(f"{spec.name}\n")
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    if args.csv:
        csv.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(csv, "w", newline="") as fh:
            table.to_csv(fh, index=False)
        print(f"\ntable written to {csv.resolve()}")
    return 0


_TABLES_HELP = (
    "also write every table of the report in full (the HTML shows at most 200 rows of each) "
    "as CSV files to this folder, listed in its index.csv; the folder must be new, empty or "
    "a previous --tables folder, which is replaced whole"
)
_FORCE_HELP = (
    "replace an existing --out file that is not a bayesfair report (a previous report is "
    "always replaced; the input file never is)"
)
_EPILOG = """exit status:
  0    the report was written
  1    an internal error (a bug: the traceback is printed; please report it)
  2    a usage or input error, named in one line on stderr (--debug adds the traceback)
  130  interrupted (Ctrl-C); 143 terminated (SIGTERM): the previous report is left intact
"""


def _int_at_least(minimum: int, what: str):
    """An argparse ``type``: a whole number of at least ``minimum`` (``what`` names it in
    the error, e.g. "a positive integer")."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    return parse


_positive_int = _int_at_least(1, "a positive integer")


def _n_jobs(text: str) -> int:
    """joblib's n_jobs, for --n-jobs: a non-zero integer (-1: every core), as
    check_n_jobs takes it."""
    try:
        value = int(text)
        check_n_jobs(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a non-zero integer (-1: every core), got {text!r}"
        ) from None
    return value


def _probability(text: str) -> float:
    """A number strictly between 0 and 1, for --level."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}")
    return value


_non_negative_int = _int_at_least(0, "a non-negative integer")


def _add_audit_options(p: argparse.ArgumentParser, seed: int | None) -> None:
    """The options of :func:`bayesfair.audit` that ``demo`` and ``audit`` share: the
    vocabulary's (random_state as --random-state, or --seed; level, resamples,
    pseudo-count) and the Bayesian fits' (the names
    the SamplerWarning's advice uses are those of the Python API: HierarchicalBayes'
    draws are --draws, its main_effects --hb-main-effects)."""
    p.add_argument(
        "--pseudo-count",
        type=float,
        default=PSEUDO_COUNT,
        help=f"Dirichlet pseudo-count of the smoothed EDF (default {PSEUDO_COUNT:g})",
    )
    p.add_argument(
        "--random-state",
        "--seed",
        dest="seed",
        metavar="SEED",
        type=_non_negative_int,
        default=seed,
        help="random_state: the seed of every random step: permutations, scans, samplers "
        + (
            f"(default {seed})" if seed is not None else "(default: drawn, and shown in the report)"
        ),
    )
    p.add_argument(
        "--level",
        type=_probability,
        default=LEVEL,
        help=f"level of every interval in the report (default {LEVEL:g})",
    )
    p.add_argument(
        "--n-resamples",
        type=_positive_int,
        default=N_RESAMPLES,
        help=f"resamples of each permutation test, scan and bootstrap (default {N_RESAMPLES})",
    )
    p.add_argument(
        "--draws",
        type=_positive_int,
        default=1000,
        help="NUTS draws and tuning steps per chain of the HLR fits and of hierarchical "
        "Bayes per group (default 1000; raise it when a SamplerWarning reports R-hat)",
    )
    p.add_argument(
        "--hb-main-effects",
        choices=["auto", "non-centred", "centred"],
        default="auto",
        help="coordinates of hierarchical Bayes' main effects (default auto; "
        "non-centred when a SamplerWarning suggests it)",
    )
    p.add_argument(
        "--n-jobs",
        type=_n_jobs,
        default=1,
        help="replicate tables and permutations run this many at a time (-1: every core; "
        "default 1); the report does not depend on it",
    )


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error in one line (what is wrong, and where the help is)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="bayesfair",
        description="Audit predictive models for intersectional bias.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--debug", action="store_true", help="print the traceback of an input error too"
    )
    d = sub.add_parser(
        "demo", parents=[common], help="audit synthetic data with known truth and write a report"
    )
    d.add_argument("--out", default="report.html", help="report path (default: report.html)")
    d.add_argument("--tables", help=_TABLES_HELP)
    d.add_argument("--force", action="store_true", help=_FORCE_HELP)
    d.add_argument(
        "--n-rows", type=_positive_int, default=20_000, help="rows of the demo's data (20,000)"
    )
    d.add_argument("--no-bayes", action="store_true", help="skip the Bayesian models (faster)")
    _add_audit_options(d, seed=2024)
    a = sub.add_parser(
        "audit", parents=[common], help="audit a CSV file or run a spec from models/specs/"
    )
    a.add_argument("source", help="a CSV file, or a .toml audit spec")
    a.add_argument("--protected", nargs="+", help="sensitive attribute columns")
    a.add_argument("--outcome", help="binary outcome column")
    a.add_argument("--score", help="score column (probability in [0, 1])")
    a.add_argument("--decision", help="binary decision column")
    a.add_argument("--threshold", type=float, help="decision = score >= threshold")
    a.add_argument(
        "--covariates",
        nargs="+",
        help="further columns the bias scans search over (categorical; bin numeric ones first)",
    )
    a.add_argument("--pos-label", help="outcome value that means 1 (for non-0/1 codings)")
    a.add_argument("--data-home", help="folder with the reference data (default $BAYESFAIR_DATA)")
    a.add_argument(
        "--counts",
        action="store_true",
        help="the CSV is a per-intersection count table (the protected columns, n, positives "
        "and optionally tp, fp, fn, tn, score_sum, as aggregate_counts writes it); "
        "--outcome, --decision and --score then only name them",
    )
    a.add_argument(
        "--bayes",
        action="store_true",
        help="add the Bayesian section (Dirichlet-multinomial and HLR fits) and hierarchical "
        "Bayes per group",
    )
    _add_audit_options(a, seed=None)
    a.add_argument("--out", default="report.html", help="report path (default: report.html)")
    a.add_argument("--tables", help=_TABLES_HELP)
    a.add_argument("--force", action="store_true", help=_FORCE_HELP)
    a.add_argument(
        "--encoding",
        default="utf-8",
        help="text encoding of the CSV file (default utf-8; e.g. latin-1, cp1252)",
    )
    a.add_argument(
        "--sep",
        default=",",
        help="field separator of the CSV file (default ','; e.g. ';', or '\\t' for tabs)",
    )
    a.add_argument(
        "--decimal",
        default=".",
        help="decimal mark of the CSV file's numbers (default '.'; ',' for decimal commas)",
    )
    r = sub.add_parser(
        "reproduce", parents=[common], help="run a paper reproduction spec ([study] section)"
    )
    r.add_argument("spec", help="a .toml spec with a [study] section, from models/specs/")
    r.add_argument("--data-home", help="folder with the reference data (default $BAYESFAIR_DATA)")
    r.add_argument("--small", action="store_true", help="few draws and replicates (smoke run)")
    r.add_argument("--csv", help="also write the table to this CSV file")
    return parser


#: errors a user's input or environment causes: one line on stderr, exit status 2
USER_ERRORS = (ValueError, TypeError, OSError)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``bayesfair`` console script.

    Returns the exit status (see ``bayesfair --help``): a user's mistake is one line on
    stderr naming what to change (status 2), a bug a traceback (status 1).
    """
    args = build_parser().parse_args(argv)
    run = {"demo": _demo, "reproduce": _reproduce, "audit": _audit}[args.command]
    try:
        with stop_on_signals(), warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return run(args)
    except (KeyboardInterrupt, Terminated) as stop:
        return _stopped(stop)
    except Exception as err:
        if (stop := stop_in_chain(err)) is not None:  # wrapped by C code it interrupted
            return _stopped(stop)
        if not isinstance(err, USER_ERRORS):
            return _internal_error()
        if args.debug:
            traceback.print_exc()
        print(f"bayesfair: error: {_one_line(err)}", file=sys.stderr)
        return 2


def _stopped(stop: BaseException) -> int:
    """Exit status 130 (Ctrl-C) or 143 (SIGTERM), said in one line."""
    if isinstance(stop, Terminated):
        print("bayesfair: terminated; nothing was written", file=sys.stderr)
        return 143
    print("bayesfair: interrupted; nothing was written", file=sys.stderr)
    return 130


def _internal_error() -> int:
    """A bug: its traceback, then what to do with it (exit status 1)."""
    traceback.print_exc()  # of the exception being handled (called in main's except)
    print(
        "bayesfair: internal error (a bug, not your input): please report it with the "
        "traceback above",
        file=sys.stderr,
    )
    return 1


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning on the command line: one line, as an error is (``bayesfair: warning:``),
    not Python's two (the file and line of the call, then its source)."""
    kind = "" if category is UserWarning else f"{category.__name__}: "
    text = " ".join(str(message).split())
    if issubclass(category, SamplerWarning):  # its advice names the Python arguments
        text += " (command line: --draws; --hb-main-effects for hierarchical Bayes)"
    print(f"bayesfair: warning: {kind}{text}", file=sys.stderr)


def _one_line(err: BaseException) -> str:
    """An exception's message on one line (an OSError's with its file name)."""
    if isinstance(err, OSError) and err.strerror:
        where = f" {err.filename!r}" if err.filename else ""
        text = f"{err.strerror}{where}"
    else:
        text = str(err) or type(err).__name__
    return " ".join(text.split())


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
