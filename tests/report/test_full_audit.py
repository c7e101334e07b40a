"""bf.audit: the whole audit in one call, the same report as the command line, and every
part that does not run named with its reason and the argument that would run it."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import bayesfair as bf
from bayesfair.cli import main


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 1500
    df = pd.DataFrame(
        {
            "race": rng.choice(["a", "b", "c"], n, p=[0.6, 0.3, 0.1]),
            "sex": rng.choice(["F", "M"], n),
            "charge": rng.choice(["F", "M"], n),
            "y": rng.integers(0, 2, n),
            "p": rng.random(n),
        }
    )
    return df


@pytest.fixture(scope="module")
def audited(frame):
    """One audit of the frame with decisions, shared by the tests that read it: the data,
    the result and the steps it reported."""
    seen: list[str] = []
    data = bf.AuditData(frame, ["race", "sex"], "y", score="p", threshold=0.5)
    res = bf.audit(data, name="d.csv", n_resamples=19, progress=seen.append)
    return data, res, seen


def _titles(html: str) -> list[str]:
    return re.findall(r"<h2>(.*?)</h2>", html)


def test_the_python_call_and_the_command_line_write_the_same_sections(frame, audited, tmp_path):
    csv = tmp_path / "d.csv"
    frame.to_csv(csv, index=False)
    out = tmp_path / "cli.html"
    argv = ["audit", str(csv), "--protected", "race", "sex", "--outcome", "y", "--score", "p"]
    assert main([*argv, "--threshold", "0.5", "--out", str(out), "--n-resamples", "19"]) == 0
    data, res, _ = audited
    assert _titles(res.report().to_html()) == _titles(out.read_text())
    # the Bayesian models, not asked for, then how the audit ran (its seed, to repeat it)
    assert _titles(out.read_text())[-2:] == ["Not run", "Settings"]
    summary = res.summary()
    assert summary["ran"].tolist() == [True, False, True, True, True]
    assert (
        "bayes=True (command line: --bayes)" in summary.set_index("part").loc["bayesian", "detail"]
    )
    pd.testing.assert_frame_equal(res.fairness_table(), bf.run_audit(data).fairness_table())


def test_without_a_decision_the_result_says_what_did_not_run_and_how_to_run_it(frame):
    res = bf.audit(bf.AuditData(frame, ["race", "sex"], "y", score="p"), n_resamples=19)
    s = res.summary().set_index("part")
    assert not s.loc[["tests", "scans", "per_group"], "ran"].any()
    for part in ("tests", "scans", "per_group"):
        assert "no decision; give decision=" in s.loc[part, "detail"]
        assert "--score with --threshold" in s.loc[part, "detail"]
    assert res.tests is None and res.scans is None and res.per_group is None
    html = res.report().to_html()
    # the three parts one reason stops, on one line with it
    assert (
        "Permutation tests of error rates (frequentist); conditional bias scans of false "
        "positive rates; per-group estimates for small groups: the data have no decision"
    ) in html
    assert res.not_run_lines()[0].startswith(
        "Bayesian models of labels and decisions (Dirichlet-multinomial, HLR): not asked for"
    )


def test_a_count_table_runs_the_tests_and_names_what_needs_rows(frame):
    table = bf.aggregate_counts(
        frame.assign(d=(frame.p > 0.5).astype(int)), ["race"], "y", decision="d"
    )
    res = bf.audit(bf.AuditData.from_counts(table, "race"), n_resamples=19)
    s = res.summary().set_index("part")
    assert s.loc["tests", "ran"] and not s.loc["scans", "ran"] and not s.loc["per_group", "ran"]
    assert "per-intersection count table" in s.loc["scans", "detail"]
    assert len(res.tests) == 2  # fpr and fnr over race


def test_progress_is_called_for_each_step(audited):
    seen = audited[2]
    steps = [re.sub(r"^\[ *[0-9.]+ s\] ", "", s) for s in seen]
    assert steps == [
        "intervals of epsilon-DF and gamma-SF, checked on replicate tables",
        "permutation tests",
        "conditional bias scans of false positive rates",
        "per-group estimates",
        "writing the report",
    ]


def test_progress_true_prints_the_steps_as_the_command_line_does(frame, capsys):
    """progress=True: each step on stderr as it starts, with the time since the start, in
    the command line's words; nothing on stdout."""
    data = bf.AuditData(frame, ["race"], "y")  # labels only: the shortest audit
    bf.audit(data, n_resamples=9, random_state=0, progress=True)
    out, err = capsys.readouterr()
    steps = re.findall(r"^bayesfair: \[ *[0-9.]+ s\] (.*)$", err, re.M)
    assert steps[0] == "intervals of epsilon-DF and gamma-SF, checked on replicate tables"
    assert steps[-1] == "writing the report" and out == ""


@pytest.mark.parametrize(
    "kw, named",
    [
        ({"bayes": "yes"}, "bayes"),
        ({"n_resamples": 0}, "n_resamples"),
        ({"random_state": -1}, "random_state"),
        ({"draws": 0}, "draws"),
        ({"hb_main_effects": "x"}, "hb_main_effects"),
        ({"progress": 5}, "progress"),
        ({"level": 1.5}, "level"),
        ({"alpha": -1.0}, "alpha"),
        ({"n_jobs": 0}, "n_jobs"),
        ({"n_jobs": 1.5}, "n_jobs"),
    ],
)
def test_audit_refuses_bad_arguments_by_name(frame, kw, named):
    data = bf.AuditData(frame, ["race"], "y")
    with pytest.raises((ValueError, TypeError), match=named):
        bf.audit(data, **kw)
    with pytest.raises(TypeError, match="data"):
        bf.audit(frame)


def test_the_summary_gives_the_default_interval_and_the_adjusted_scan(audited):
    """The summary's one line on fairness is what the answers lead with: each table's
    default (calibrated) estimate and interval, not the plug-in EDF; its line on the scans
    gives the smallest p-value with its Holm adjustment."""
    from bayesfair.report import scans_table

    res = audited[1]
    detail = res.summary().set_index("part")["detail"]
    for role in ("outcome", "decision"):
        iv = res.intervals[role].intervals.set_index(["metric", "method"])
        c = iv.loc[("epsilon-DF", "calibrated")]
        words = f"{role}: epsilon-DF {c['estimate']:.3g} [{c['lower']:.3g}, {c['upper']:.3g}]"
        assert words + " (default 90% interval" in detail["fairness"]
    top = scans_table(res.scans).sort_values("pvalue").iloc[0]
    assert f"{top['pvalue_holm']:.3g} adjusted for the 5 (Holm)" in detail["scans"]


def test_the_audit_does_not_depend_on_n_jobs(audited):
    """Two jobs give the audit of one (its seed repeated): the intervals' checks, the
    permutation tests and the scans run their chunks of replicates and permutations with
    fixed seeds, whichever worker runs them."""
    data, res, _ = audited
    two = bf.audit(data, name="d.csv", n_resamples=19, random_state=res.random_state, n_jobs=2)
    assert set(two.intervals) == set(res.intervals)
    for table, cal in res.intervals.items():
        pd.testing.assert_frame_equal(two.intervals[table].summary(), cal.summary())
    pd.testing.assert_frame_equal(two.tests, res.tests)
    assert [s.pvalue for s in two.scans] == [s.pvalue for s in res.scans]
    pd.testing.assert_frame_equal(two.per_group.table, res.per_group.table)


def test_the_scan_answer_is_adjusted_for_the_classes_scanned(audited):
    """The audit scans every value of every protected attribute; its answer gives the
    smallest p-value with its Holm adjustment for the number of scans, and flags a
    subgroup only where the adjusted p-value is below 0.05, and says when too few
    permutations let none get there. The report's scan table has both p-values."""
    from bayesfair.report import scans_table

    res = audited[1]
    t = scans_table(res.scans)
    assert len(t) == 5  # race (3 values) and sex (2)
    assert (t["pvalue_holm"] >= t["pvalue"]).all()
    assert t["pvalue"].is_monotonic_increasing  # the most significant scan first
    answers = bf.report.audit_answers(res)
    (row,) = answers[answers["question"] == "Which subgroup does the bias scan flag?"].itertuples()
    top = t.loc[t["pvalue"].idxmin()]
    assert f"{top['pvalue_holm']:.3g} adjusted for the 5 classes scanned (Holm)" in row.interval
    assert row.answer.startswith("no subgroup") == (not top["pvalue_holm"] < 0.05)
    assert "pvalue_holm" in res.report().to_html()
    # 19 permutations: no p-value below 1/20, no adjusted one below 5/20, and it says so
    assert res.n_resamples == 19
    assert row.interval.endswith(
        "with 19 permutations no adjusted p-value can be below 0.25: n_resamples of at "
        "least 100 let a scan reach 0.05"
    )


@pytest.mark.slow  # 100 null data sets, each scanned 8 times
def test_the_scan_answer_keeps_its_level_over_the_classes_scanned():
    """Decisions independent of the attributes (3 x 2 x 3 values: 8 classes scanned): the
    smallest raw p-value is below 0.05 in about a third of the data sets, the Holm-adjusted
    one in at most 5% of them (100 data sets; three standard errors above 0.05: 0.115)."""
    from bayesfair.report import scan_audit_data, scans_table

    rng = np.random.default_rng(0)
    raw = adjusted = 0
    for r in range(100):
        n = 600
        df = pd.DataFrame(
            {
                "a": rng.choice(["x", "y", "z"], n),
                "b": rng.choice(["u", "v"], n),
                "c": rng.choice(["p", "q", "s"], n),
                "y": rng.integers(0, 2, n),
                "d": (rng.random(n) < 0.3).astype(int),
            }
        )
        data = bf.AuditData(df, ["a", "b", "c"], "y", decision="d")
        t = scans_table(scan_audit_data(data, random_state=r))
        raw += t["pvalue"].min() < 0.05
        adjusted += t["pvalue_holm"].min() < 0.05
    print(f"smallest p below 0.05: raw {raw / 100}, Holm-adjusted {adjusted / 100}")
    assert adjusted / 100 <= 0.115
    assert raw / 100 >= 0.2  # what the adjustment is for


def test_the_report_answers_first(audited):
    res = audited[1]  # what the answers say, not their statistics
    answers = bf.report.audit_answers(res)
    assert answers["question"].drop_duplicates().tolist() == [
        "How unequal are outcomes (labels) across intersections?",
        "How unequal are decisions across intersections?",
        "Do the decisions amplify the labels' inequality?",
        "Which error-rate gaps are largest?",
        "How unequal are error rates (equalized odds)?",
        "Which subgroup does the bias scan flag?",
        "Which small groups can the data not speak for?",
    ]
    q = answers["question"]  # each question's answers together, as the CLI prints them
    assert (q != q.shift()).sum() == q.nunique()
    # every interval says its kind and level
    shown = answers.loc[answers["interval"] != "—", "interval"]
    assert shown.str.contains(r"\(90% (?:CI|posterior|HDI)|p = ").all()
    # the gap of the extreme intersections' FPR: the rates of the table, and Newcombe's
    # interval contains the difference
    gap = answers[answers["answer"].str.startswith("false positive rate")].iloc[0]
    lo, hi = map(
        float,
        re.search(r"\[([-0-9.e]+), ([-0-9.e]+)\] \(90% CI, Newcombe", gap["interval"]).groups(),
    )
    assert lo <= gap["estimate"] <= hi
    assert res.report().sections[0].title == "Answers"


def test_the_gap_of_the_extreme_pair_has_an_interval_that_allows_for_its_choice():
    """Eight intersections of 40 to 80 rows with one false positive rate, 0.2: the pair
    with the highest and the lowest rate differs by chance, and its own 90% interval holds
    the true 0 far less often than 90% (it was chosen for being extreme). The answer's
    interval holds for all 28 pairs at once, so for the chosen one at least 90% of the time
    (300 tables; three standard errors: 0.848); its kind says so."""
    from types import SimpleNamespace

    from bayesfair.metrics import newcombe_difference
    from bayesfair.report.answers import _gap_row

    rng = np.random.default_rng(4)
    labels = pd.Series([f"g{i}" for i in range(8)])
    held = naive = 0
    for _ in range(300):
        den = rng.integers(40, 81, 8).astype(float)
        k = rng.binomial(den.astype(int), 0.2).astype(float)
        row = _gap_row(SimpleNamespace(tests=None), "fpr", "fpr", labels, k, den, 0.9)
        lo, hi = map(float, re.search(r"\[([-0-9.e]+), ([-0-9.e]+)\]", row["interval"]).groups())
        held += lo <= 0 <= hi
        i, j = int(np.argmax(k / den)), int(np.argmin(k / den))
        n_lo, n_hi = newcombe_difference(k[i], den[i], k[j], den[j], 0.9)
        naive += n_lo <= 0 <= n_hi
    print(f"true gap 0 held: simultaneous {held / 300:.3f}, the pair alone {naive / 300:.3f}")
    assert held / 300 >= 0.848
    assert naive / 300 < 0.75
    assert "simultaneous over the 28 pairs (Bonferroni)" in row["interval"]
    assert "Jeffreys, this pair alone" in row["interval"]


def test_without_a_gap_the_answer_says_so_and_names_two_intersections():
    """Every intersection's false positive rate 0 (a classifier without errors): the
    answer says there is no gap instead of comparing an intersection with itself, and its
    interval is that of the two smallest intersections, the widest."""
    from types import SimpleNamespace

    from bayesfair.report.answers import _gap_row

    labels = pd.Series(["a", "b", "c", "d"])
    den = np.array([50.0, 31.0, 80.0, 35.0])
    row = _gap_row(SimpleNamespace(tests=None), "fpr", "fpr", labels, np.zeros(4), den, 0.9)
    assert "0 in every one of the 4 intersections, no gap" in row["answer"]
    assert row["estimate"] == 0
    assert "of the two smallest intersections, b and d" in row["interval"]
    lo, hi = map(float, re.search(r"\[([-0-9.e]+), ([-0-9.e]+)\]", row["interval"]).groups())
    assert lo < 0 < hi


def test_newcombe_interval_by_hand():
    from bayesfair.metrics import newcombe_difference, wilson_interval

    # Newcombe (1998), Table II, example (a): 56/70 - 48/80, 95%: 0.0524 to 0.3339
    lo, hi = newcombe_difference(56, 70, 48, 80, 0.95)
    assert (round(lo, 4), round(hi, 4)) == (0.0524, 0.3339)
    # Wilson: 0 of 10 at 95% is [0, 0.2775]
    assert wilson_interval(0, 10, 0.95)[1] == pytest.approx(0.2775, abs=1e-4)


@pytest.mark.slow
def test_the_report_passes_the_browser_check(frame, tmp_path):
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    if not shutil.which("chromium"):
        pytest.skip("Chromium is not installed; `make browser-check` installs it and runs this")
    out = tmp_path / "r.html"
    data = bf.AuditData(frame, ["race", "sex"], "y", score="p", threshold=0.5)
    bf.audit(data, n_resamples=99).report().save(out)
    script = Path(__file__).resolve().parents[2] / "scripts" / "check_report_in_browser.py"
    proc = subprocess.run([sys.executable, str(script), str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("ok ") == 5


def test_the_command_line_has_the_calls_options(frame, tmp_path, capsys):
    """--covariates (the scans' further attributes) and --n-resamples (here 11, not the
    default) reach the audit."""
    csv = tmp_path / "d.csv"
    frame.to_csv(csv, index=False)
    out = tmp_path / "r.html"
    argv = ["audit", str(csv), "--protected", "race", "sex", "--outcome", "y", "--score", "p"]
    argv += ["--threshold", "0.5", "--out", str(out)]
    assert main([*argv, "--covariates", "charge", "--n-resamples", "11"]) == 0
    html = out.read_text()
    assert "11 permutations drawn" in html
    data = bf.AuditData(frame, ["race", "sex"], "y", score="p", threshold=0.5, covariates="charge")
    res = bf.audit(data, n_resamples=11, name="d.csv")
    assert _titles(res.report().to_html()) == _titles(html)
    assert all("charge" in s.scan.attributes for s in res.scans)  # scanned over the covariate
    assert main([*argv, "--covariates", "nope"]) == 2
    assert "nope" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*argv, "--n-resamples", "0"])


@pytest.mark.slow
def test_a_seeded_bayesian_audit_repeats_and_reports_at_its_level(frame):
    """The seed and the level reach the Bayesian section and the answers too: the same
    seed gives the same answers (gamma's Bayesian bootstrap included), and a level of
    0.8 is the level of the section's HDIs."""
    data = bf.AuditData(frame, ["race", "sex"], "y", score="p", threshold=0.5)
    kw = dict(bayes=True, draws=100, n_resamples=19, level=0.8, random_state=7)
    with pytest.warns(UserWarning):  # short chains: the sampler says so
        first, again = bf.audit(data, **kw), bf.audit(data, **kw)
    pd.testing.assert_frame_equal(bf.report.audit_answers(first), bf.report.audit_answers(again))
    html = first.report().to_html()
    tables = re.compile(r"<table.*?</table>", re.S)
    assert tables.findall(html) == tables.findall(again.report().to_html())
    assert "Intervals are 80% HDIs" in html and "Intervals are 90% HDIs" not in html
    assert "80% HDI, hierarchical logistic regression, not checked for coverage" in (
        bf.report.audit_answers(first)["interval"].str.cat()
    )
    detail = first.summary().set_index("part").loc["bayesian", "detail"]
    assert detail.startswith("Dirichlet-multinomial and hierarchical logistic regression fitted")


def test_an_infinite_empirical_epsilon_says_why_and_where_a_finite_one_is():
    """A small group whose every row is positive: the EDF's epsilon-DF is infinite, and
    its answer says so, why, and that the smoothed EDF is finite (as the amplification's
    answer already did); the default interval stays finite."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"g": np.repeat(["a", "b", "c"], [100, 100, 6])})
    df["y"] = (rng.random(len(df)) < 0.3).astype(int)
    df.loc[df.g == "c", "y"] = 1
    res = bf.audit(df, protected="g", outcome="y", n_resamples=19, random_state=0)
    answers = bf.report.audit_answers(res).set_index("answer")
    edf = "epsilon-DF of outcome = inf (infinite: a rate of 0 or 1 in some intersection; "
    assert any(a.startswith(edf) for a in answers.index)
    eps = res.fairness_table().query("metric == 'epsilon-DF'").set_index("method")["value"]
    assert np.isinf(eps["EDF"]) and np.isfinite(eps["smoothed EDF (pseudo_count=0.5)"])
    default = answers.loc[answers.index.str.contains("bias-corrected posterior median")]
    assert np.isfinite(default["estimate"]).all()
