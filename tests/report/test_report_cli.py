"""Report, CLI and audit specs."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayesfair import (
    AuditData,
    bias_amplification,
    empirical_fairness,
    fairness_confidence_interval,
    run_audit,
)
from bayesfair.cli import main
from bayesfair.report import Report, Table, Text, scan_audit_data
from bayesfair.spec import load_spec

REPO = Path(__file__).resolve().parents[2]


def test_demo_writes_a_self_contained_report_with_every_section(tmp_path, capsys):
    """``bayesfair demo --no-bayes``: one self-contained HTML file (no address on the
    network, figures inline) with every section an audit without the Bayesian models has,
    and no figure left in pyplot's registry."""
    import matplotlib.pyplot as plt

    out = tmp_path / "report.html"
    before = set(plt.get_fignums())
    argv = ["demo", "--out", str(out), "--n-rows", "4000", "--no-bayes", "--n-resamples", "19"]
    assert main(argv) == 0
    # the report's figures stay out of pyplot's registry: writing reports leaks none
    assert set(plt.get_fignums()) == before
    html = out.read_text()
    assert "report written to" in capsys.readouterr().out
    assert "Per-intersection counts" in html and "epsilon-DF" in html and "gamma-SF" in html
    assert "data:image/png;base64," in html
    assert "Ground truth" in html
    assert "Frequentist companions" in html
    assert not re.search(r"(src|href)=\"https?://", html)  # nothing from the network
    assert "Group D, Male, over 45" in html  # the empty intersection is shown, not dropped
    # ... and the max-T tests say how many groups they leave out (no rate defined)
    assert re.search(r"max-T over \d+ of 24 groups \(fpr undefined in the rest\)", html)
    assert "Subgroup scan (Conditional Bias Scan)" in html
    assert "Per-group estimates for small groups" in html and "structured" in html
    # the caveat on structured regression's intervals
    assert "StructuredRegression(ridge=&#x27;rows&#x27;)" in html
    assert "P(flagged rate higher | data)" in html


def test_audit_lists_empty_intersections_one_by_one():
    # intersection labels hold ", " themselves, so the note separates them with "; "
    df = pd.DataFrame({"a": list("xxyz"), "b": list("uvuu"), "y": [0, 1, 1, 0]})
    (note,) = run_audit(AuditData(df, ["a", "b"], "y")).notes
    assert note.endswith("P(s) > 0): y, v; z, v")


def test_per_group_section_keeps_every_protected_column():
    # the section's frame once held the outcome as "_y", overwriting a protected column of
    # that name: its groups were the outcome's "0, f", "1, m", ...
    from bayesfair.full_audit import _per_group

    rng = np.random.default_rng(0)
    n = 800
    df = pd.DataFrame({"_y": rng.choice(["u", "v", "w"], n), "b": rng.choice(["f", "m"], n)})
    df["y"], df["d"] = rng.integers(0, 2, n), rng.integers(0, 2, n)
    data = AuditData(df, ["_y", "b"], "y", decision="d")
    res = _per_group(data, False, 0, 10, "auto", 50)
    assert sorted(res.table.group.unique()) == data.group_labels
    assert res.table.n.sum() == 3 * n * len(res.table.estimator.unique())


def test_report_blocks_and_sections_refuse_what_they_cannot_show():
    """A block or a section given the wrong kind of object says so when it is built (a
    Table of None failed only when the report was written; the sections failed on a
    missing attribute)."""
    from matplotlib.figure import Figure as MplFigure

    from bayesfair.report import (
        Figure,
        add_disaggregated_section,
        add_frequentist_section,
        add_scan_section,
    )

    df = pd.DataFrame({"a": list("xxyy"), "y": [0, 1, 1, 0], "d": [0, 1, 0, 0]})
    data = AuditData(df, "a", "y", decision="d")
    with pytest.raises(TypeError, match="`frame` must be a pandas DataFrame, got NoneType"):
        Table(None)
    assert list(Table(df["a"]).frame.columns) == ["a"]  # a Series is a one-column table
    with pytest.raises(TypeError, match="`figure` must be a matplotlib Figure"):
        Figure("plot.png")
    Figure(MplFigure())
    for call in (
        lambda: add_disaggregated_section(Report("t"), data),
        lambda: add_frequentist_section(Report("t"), df),
        lambda: add_scan_section(Report("t"), [data]),
        lambda: add_scan_section(Report("t"), None),
        lambda: add_disaggregated_section("t", data),
    ):
        with pytest.raises(
            TypeError, match=r"must be (a|an) (DisaggregatedResult|AuditData|list|Report)"
        ):
            call()
    with pytest.raises(TypeError, match="`data` must be a FairnessEstimate"):
        bias_amplification(empirical_fairness(data, pseudo_count=0), df)


def test_user_strings_are_escaped(tmp_path):
    evil = "<script>alert(1)</script>"
    df = pd.DataFrame({evil: ["a&b", "<i>x</i>", "a&b", "<i>x</i>"], "y": [0, 1, 1, 1]})
    result = run_audit(AuditData(df, evil, "y"), name=evil)
    html = result.report().to_html()
    assert "<script>" not in html and "<i>x</i>" not in html
    assert "&lt;script&gt;" in html and "a&amp;b" in html
    rep = Report("t")
    rep.section("<b>s</b>").add(Text("<b>")).add(
        Table(pd.DataFrame({"<c>": ["<d>"]}), caption="<e>")
    )
    assert "<b>" not in rep.to_html() and "<d>" not in rep.to_html()
    assert rep.save(tmp_path / "r.html").is_file()
    # the table of contents links to every section, a repeated title included
    rep.section("<b>s</b>")
    html = rep.to_html()
    for i in (1, 2):
        assert f'<a href="#section-{i}">&lt;b&gt;s&lt;/b&gt;</a>' in html
        assert f'<section id="section-{i}"><h2>&lt;b&gt;s&lt;/b&gt;</h2>' in html


def test_table_of_a_pivot_has_no_empty_leading_column():
    """A pivot's column-axis name ("metric") is not rendered as the header of an extra,
    empty first column (pandas does that even with index=False); the demo's error-rate
    table had one."""
    long = pd.DataFrame({"g": ["a", "a", "b", "b"], "metric": ["x", "y"] * 2, "v": [1, 2, 3, 4]})
    wide = long.pivot_table(index="g", columns="metric", values="v").reset_index()
    assert wide.columns.name == "metric"
    html = Table(wide).to_html()
    header = html.split("<thead>")[1].split("</thead>")[0]
    assert header.count("<th") == 3 and "metric" not in header
    assert html.count("<td") == 6


def test_diagnostic_counts_render_as_whole_numbers():
    """Effective sample sizes and divergences show as 1498, not 1.5e+03 or 1498.000; a
    missing one (a conjugate model has none) shows as the table's missing mark."""
    from bayesfair.report.html import DIAGNOSTIC_COUNTS, whole_numbers

    diag = pd.DataFrame(
        {
            "model": ["HLR", "EDF"],
            "divergences": [0.0, np.nan],
            "r_hat_max": [1.0104, np.nan],
            "ess_bulk_min": [1498.4, np.nan],
            "ess_tail_min": [1470.0, np.inf],
        }
    )
    out = whole_numbers(diag, DIAGNOSTIC_COUNTS)
    assert out["ess_bulk_min"].iloc[0] == "1498" and out["divergences"].iloc[0] == "0"
    assert out[["divergences", "ess_bulk_min", "ess_tail_min"]].iloc[1].isna().all()
    assert out["r_hat_max"].equals(diag["r_hat_max"])  # other columns untouched
    html = Table(out, float_format="{:.3f}").to_html()
    assert "<td>1498</td>" in html and "<td>1.010</td>" in html
    assert "1.5e+03" not in html and "1498.000" not in html and html.count("<td>—</td>") == 4


def test_audit_csv(tmp_path, capsys):
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "g": rng.choice(["a", "b"], 300),
            "h": rng.choice(["u", "v", "w"], 300),
            "label": rng.choice(["yes", "no"], 300),
            "p": rng.random(300),
        }
    )
    csv = tmp_path / "d.csv"
    df.to_csv(csv, index=False)
    out = tmp_path / "r.html"
    argv = [
        "audit",
        str(csv),
        "--protected",
        "g",
        "h",
        "--outcome",
        "label",
        "--pos-label",
        "yes",
        "--score",
        "p",
        "--threshold",
        "0.5",
        "--out",
        str(out),
        "--tables",
        str(tmp_path / "tables"),
        "--n-resamples",
        "19",
    ]
    assert main(argv) == 0
    html = out.read_text()
    assert "Per-intersection AUC" in html
    # --tables: every table of the report as CSV, listed in index.csv
    index = pd.read_csv(tmp_path / "tables" / "index.csv")
    assert html.count("<table") == len(index) and len(index) > 5
    assert all((tmp_path / "tables" / f).is_file() for f in index.file)
    counts = index[index.caption.str.startswith("Per-intersection counts", na=False)]
    assert counts.rows.tolist() == [6]  # 2 x 3 intersections
    # with decisions, the per-group section (disaggregated evaluation) as in the demo
    assert "Per-group estimates for small groups" in html
    # each section announced on stderr with the time so far; stdout keeps only the table
    printed = capsys.readouterr()
    steps = re.findall(r"^bayesfair: \[ *([0-9.]+) s\] (.+)$", printed.err, flags=re.M)
    assert [what for _, what in steps] == [
        "intervals of epsilon-DF and gamma-SF, checked on replicate tables",
        "permutation tests",
        "conditional bias scans of false positive rates",
        "per-group estimates",
        "writing the report",
    ]
    assert [float(t) for t, _ in steps] == sorted(float(t) for t, _ in steps)
    assert "bayesfair: [" not in printed.out and "epsilon-DF" in printed.out
    assert "tables written to" in printed.out
    # the interval checks' progress bar too is drawn on stderr (its times vary run to run);
    # stdout may say "replicates" in an answer, never a bar's label or its bar
    assert "replicates (outcome)" in printed.err and "━" in printed.err
    assert "replicates (" not in printed.out and "━" not in printed.out


def test_audit_of_a_count_table(tmp_path, capsys):
    """``bayesfair audit table.csv --counts``: the count table of the rows gives the rows'
    fairness table and permutation tests; scans and per-group estimates are said not run."""
    from bayesfair import aggregate_counts

    rng = np.random.default_rng(3)
    df = pd.DataFrame({"g": rng.choice(["a", "b"], 400), "h": rng.choice(["u", "v"], 400)})
    df["y"] = (rng.random(400) < np.where(df.g == "a", 0.3, 0.5)).astype(int)
    df["d"] = (rng.random(400) < 0.4).astype(int)
    rows_csv, counts_csv = tmp_path / "rows.csv", tmp_path / "counts.csv"
    df.to_csv(rows_csv, index=False)
    aggregate_counts(df, ["g", "h"], "y", decision="d").to_csv(counts_csv, index=False)
    common = ["--protected", "g", "h", "--outcome", "y", "--decision", "d", "--n-resamples", "9"]
    common += ["--random-state", "0"]  # the printed answers are the same, seed for seed
    assert main(["audit", str(rows_csv), *common, "--out", str(tmp_path / "a.html")]) == 0
    by_rows, rows_not_run = capsys.readouterr().out.split("report written")[0].split("Not run:")
    out = tmp_path / "b.html"
    assert main(["audit", str(counts_csv), "--counts", *common, "--out", str(out)]) == 0
    printed = capsys.readouterr()
    answers, not_run = printed.out.split("report written")[0].split("Not run:")
    # the same answers, but the scan's, which needs the rows
    rows_lines = by_rows.splitlines()
    scan = rows_lines.index("Which subgroup does the bias scan flag?")
    assert answers.splitlines() == rows_lines[:scan] + rows_lines[scan + 2 :]
    # then what did not run, those stopped by one reason on one line, with the reason
    bayes = "  - Bayesian models of labels and decisions (Dirichlet-multinomial, HLR): not asked"
    assert rows_not_run.splitlines()[1].startswith(bayes) and len(rows_not_run.splitlines()) == 3
    assert not_run.splitlines()[1].startswith(bayes)
    assert not_run.splitlines()[2].startswith(
        "  - Conditional bias scans of false positive rates; per-group estimates for small "
        "groups: the data are a per-intersection count table"
    )
    html = out.read_text()
    assert "Frequentist companions" in html and "Not run" in html
    assert "the data are a per-intersection count table; the scans and per-group" in html
    assert re.findall(r"\] (.+)$", printed.err, flags=re.M) == [
        "intervals of epsilon-DF and gamma-SF, checked on replicate tables",
        "permutation tests",
        "writing the report",
    ]
    argv = ["audit", str(counts_csv), "--counts", "--protected", "g", "h", "--threshold", "0.5"]
    assert main(argv) == 2
    assert "--threshold and --pos-label apply to rows" in capsys.readouterr().err


def test_save_tables_writes_every_row_that_the_html_cuts(tmp_path):
    """The HTML shows at most max_rows rows of a table (and says so); save_tables writes
    each table in full, unrounded, with an index of files, sections, captions and rows."""
    rng = np.random.default_rng(0)
    big = pd.DataFrame({"group": [f"g{i}" for i in range(450)], "rate": rng.random(450)})
    small = pd.DataFrame({"a": [1, 2], "b": ["x, y", 'say "z"']})
    rep = Report("t")
    rep.section("Per-group rates (all 450)").add(Text("450 groups")).add(
        Table(big, caption="Rates.", float_format="{:.2f}")
    )
    rep.section("Other / more").add(Table(small)).add(Table(small.iloc[:0]))
    html = rep.to_html()
    assert "first 200 of 450 rows; Report.save_tables" in html and "g449" not in html
    index = pd.read_csv(rep.save_tables(tmp_path / "out"))
    assert index.file.tolist() == [
        "01-1_per-group-rates-all-450.csv",
        "02-1_other-more.csv",
        "02-2_other-more.csv",
    ]
    assert index.rows.tolist() == [450, 2, 0]
    assert index.section.tolist()[:2] == ["Per-group rates (all 450)", "Other / more"]
    assert index.caption.tolist()[0] == "Rates." and index.caption.isna().tolist()[1:] == [
        True,
        True,
    ]
    back = pd.read_csv(tmp_path / "out" / index.file[0])
    pd.testing.assert_frame_equal(back, big)  # every row, every digit
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "out" / index.file[1]), small)


def test_audit_csv_numeric_pos_label(tmp_path, capsys):
    """``--pos-label`` arrives as text; on a CSV column read as numbers (here coded 1/2)
    it is matched as a number, and the audit equals the one of the 0/1 coding."""
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 300)
    df = pd.DataFrame({"g": rng.choice(["a", "b"], 300), "y01": y, "y12": y + 1})
    csv = tmp_path / "d.csv"
    df.to_csv(csv, index=False)
    common = ["audit", str(csv), "--protected", "g", "--n-resamples", "9", "--random-state", "0"]
    outs = []
    for col, extra in (("y01", []), ("y12", ["--pos-label", "2"]), ("y01", ["--pos-label", "1"])):
        out = tmp_path / f"{col}{len(extra)}.html"
        assert main([*common, "--outcome", col, *extra, "--out", str(out)]) == 0
        outs.append(capsys.readouterr().out.split("report written")[0])
    assert outs[0] == outs[1] == outs[2]  # the printed answers, the report's first section
    assert outs[0].startswith(
        "How unequal are outcomes (labels) across intersections?\n  - epsilon-DF of outcome: "
    )
    assert main([*common, "--outcome", "y12", "--pos-label", "3"]) == 2
    assert "pos_label=3 does not occur in outcome column 'y12'; values seen: [" in (
        capsys.readouterr().err
    )


def test_cli_warnings_are_one_line_each(monkeypatch, capsys):
    """A warning during a command is one line on stderr, like an error: 'bayesfair:
    warning:', the kind when it is not a plain UserWarning, the message on one line (a
    SamplerWarning's, whose advice names Python arguments, with the options that set them);
    not Python's file, line and source. Python's own display is back after the command."""
    import bayesfair.cli as cli
    from bayesfair import SamplerWarning

    def run(args):
        warnings.warn("HLR: R-hat up to 1.012\n(> 1.01)", SamplerWarning, stacklevel=1)
        warnings.warn("3 groups left out", UserWarning, stacklevel=1)
        return 0

    monkeypatch.setattr(cli, "_audit", run)
    shown = warnings.showwarning
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        assert main(["audit", "data.csv"]) == 0
    assert capsys.readouterr().err == (
        "bayesfair: warning: SamplerWarning: HLR: R-hat up to 1.012 (> 1.01) (command line: "
        "--draws; --hb-main-effects for hierarchical Bayes)\n"
        "bayesfair: warning: 3 groups left out\n"
    )
    assert warnings.showwarning is shown


def test_cli_errors_exit_2(tmp_path, capsys):
    df = pd.DataFrame({"g": ["a", "b"], "y": [0, 3]})
    csv = tmp_path / "d.csv"
    df.to_csv(csv, index=False)
    assert main(["audit", str(csv), "--protected", "g", "--outcome", "y"]) == 2
    assert "'y'" in capsys.readouterr().err
    assert main(["audit", str(tmp_path / "missing.csv")]) == 2
    assert main(["audit", str(csv)]) == 2


def test_a_csv_of_semicolons_or_tabs_and_decimal_commas(tmp_path, capsys):
    """A spreadsheet's CSV where the decimal mark is a comma: fields separated by ';' and
    numbers like '0,25'. Read with the default separator it is one column, refused with
    the --sep that reads it (a tab-separated file too); read with --sep ';' its scores are
    text, refused with --decimal; with both, the audit equals the one of the same data
    written with commas and points."""
    rng = np.random.default_rng(2)
    df = pd.DataFrame({"g": rng.choice(["a", "b"], 200), "y": rng.integers(0, 2, 200)})
    df["p"] = rng.random(200).round(4)
    plain, semi, tab = tmp_path / "plain.csv", tmp_path / "semi.csv", tmp_path / "tab.tsv"
    df.to_csv(plain, index=False)
    df.to_csv(semi, index=False, sep=";", decimal=",")
    df.to_csv(tab, index=False, sep="\t")
    common = ["--protected", "g", "--outcome", "y", "--score", "p", "--threshold", "0.5"]
    common += ["--n-resamples", "9", "--random-state", "0"]
    assert main(["audit", str(semi), *common]) == 2
    err = capsys.readouterr().err
    assert "was read as one column, 'g;y;p': its fields look separated by ';'; pass --sep ';'" in (
        err
    )
    assert "(and --decimal , if its numbers have decimal commas)" in err
    assert main(["audit", str(tab), *common]) == 2
    assert "separated by '\\t'; pass --sep '\\t'" in capsys.readouterr().err
    assert main(["audit", str(semi), "--sep", ";", *common]) == 2
    assert (
        "score column 'p' must be numeric probabilities in [0, 1], got dtype"
        in (err := capsys.readouterr().err)
        and "with decimal commas (values like '0," in err
        and "pass --decimal ," in err
    )
    outs = []
    for path, extra in (
        (plain, []),
        (semi, ["--sep", ";", "--decimal", ","]),
        (tab, ["--sep", "\\t"]),
    ):
        out = tmp_path / f"{path.stem}.html"
        assert main(["audit", str(path), *extra, *common, "--out", str(out)]) == 0
        outs.append(capsys.readouterr().out.split("report written")[0])
    assert outs[0] == outs[1] == outs[2]


def test_an_audit_spec_reads_its_csv_as_the_command_line_does(tmp_path):
    """A spec's CSV is read by the command line's reader: a [data] path alone names a CSV
    file; 'NA' (North America) in a protected column stays a category, not a missing value
    (a spec read it as missing and was refused); a file of semicolons is refused with the
    spec's own setting, and [data] sep and decimal read it; a setting that is not a string is
    refused by name."""
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"region": rng.choice(["NA", "EU", "AS"], 300), "y": rng.integers(0, 2, 300)})
    df["p"] = rng.random(300).round(3)
    df.to_csv(tmp_path / "plain.csv", index=False)
    df.to_csv(tmp_path / "semi.csv", index=False, sep=";", decimal=",")
    columns = '[columns]\nprotected = ["region"]\noutcome = "y"\nscore = "p"\n'
    spec = tmp_path / "s.toml"
    spec.write_text('[data]\npath = "plain.csv"\n' + columns)
    data = load_spec(spec).audit_data()
    assert sorted(data.categories["region"]) == ["AS", "EU", "NA"] and data.n_rows == 300
    spec.write_text('[data]\npath = "semi.csv"\n' + columns)
    with pytest.raises(ValueError, match=r"separated by ';'; pass \[data\] sep = \";\" \(and"):
        load_spec(spec).audit_data()
    spec.write_text('[data]\npath = "semi.csv"\nsep = ";"\ndecimal = ","\n' + columns)
    semi = load_spec(spec).audit_data()
    pd.testing.assert_frame_equal(semi.table, data.table)
    spec.write_text('[data]\npath = "semi.csv"\nsep = 5\n' + columns)
    with pytest.raises(ValueError, match=r"\[data\] sep must be a string, got 5"):
        load_spec(spec)


@pytest.mark.bayesian
def test_audit_sampler_options_reach_the_fits(tmp_path, monkeypatch, capsys):
    """--seed, --draws and --hb-main-effects of ``audit --bayes`` reach the HLR fits and
    hierarchical Bayes (the options a SamplerWarning's advice asks for), and --seed the
    permutation tests and scans too; bad values exit with argparse's usage error."""
    import bayesfair.disaggregated as dis
    import bayesfair.full_audit as full_audit
    import bayesfair.models as models

    seen = {}
    real_hlr, real_dis = models.HierarchicalLogisticRegression, dis.disaggregated_evaluation

    def hlr(*args, **kw):
        seen.setdefault("hlr", []).append(kw)
        return real_hlr(*args, **kw)

    def evaluation(*args, **kw):
        seen["hb"] = kw
        return real_dis(*args, **kw)

    def seeded(name):
        real = getattr(full_audit, name)

        def wrapper(*args, **kw):
            seen[name] = kw["random_state"]
            return real(*args, **kw)

        monkeypatch.setattr(full_audit, name, wrapper)

    seeded("frequentist_tests")
    seeded("scan_audit_data")
    monkeypatch.setattr(models, "HierarchicalLogisticRegression", hlr)
    monkeypatch.setattr(dis, "disaggregated_evaluation", evaluation)
    rng = np.random.default_rng(2)
    df = pd.DataFrame(
        {
            "g": rng.choice(["a", "b"], 400),
            "y": rng.integers(0, 2, 400),
            "d": rng.integers(0, 2, 400),
        }
    )
    csv = tmp_path / "d.csv"
    df.to_csv(csv, index=False)
    common = ["audit", str(csv), "--protected", "g", "--outcome", "y", "--decision", "d"]
    options = [
        "--n-resamples",
        "19",
        "--bayes",
        "--seed",
        "5",
        "--draws",
        "60",
        "--hb-main-effects",
        "non-centred",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 4 x 60 draws: the sampler checks may warn
        assert main([*common, *options, "--out", str(tmp_path / "r.html")]) == 0
    assert [kw["draws"] for kw in seen["hlr"]] == [60, 60]  # labels and decisions
    assert [kw["tune"] for kw in seen["hlr"]] == [60, 60]
    assert [kw["random_state"] for kw in seen["hlr"]] == [6, 16]
    kw = seen["hb"]
    hb = next(e for e in kw["estimators"] if isinstance(e, dis.HierarchicalBayes))
    assert (hb.draws, hb.tune, hb.main_effects) == (60, 60, "non-centred")
    assert kw["random_state"] == 5
    assert seen["frequentist_tests"] == seen["scan_audit_data"] == 5
    for bad in (["--draws", "0"], ["--draws", "many"], ["--hb-main-effects", "centered"]):
        with pytest.raises(SystemExit) as exit_:
            main([*common, *bad])
        assert exit_.value.code == 2
    assert "expected a positive integer, got '0'" in capsys.readouterr().err


SPECS = sorted((REPO / "models" / "specs").glob("*.toml"))
AUDIT_SPECS = [p for p in SPECS if not load_spec(p).study]
STUDY_SPECS = [p for p in SPECS if load_spec(p).study]


@pytest.mark.parametrize("spec", AUDIT_SPECS, ids=lambda p: p.stem)
def test_every_audit_spec_in_models_runs(spec, data_home, tmp_path):
    out = tmp_path / "r.html"
    assert (
        main(
            [
                "audit",
                str(spec),
                "--data-home",
                str(data_home),
                "--out",
                str(out),
                "--n-resamples",
                "9",
            ]
        )
        == 0
    )
    assert "epsilon-DF" in out.read_text()


@pytest.mark.slow
@pytest.mark.parametrize("spec", STUDY_SPECS, ids=lambda p: p.stem)
def test_every_study_spec_in_models_runs_small(spec, data_home, tmp_path, capsys):
    if load_spec(spec).study.get("population") == "diabetes":
        if not (data_home / "diabetic_data.csv").is_file():
            pytest.skip(f"diabetic_data.csv is not in {data_home} (../shared/data/README.md)")
    csv = tmp_path / "t.csv"
    argv = ["reproduce", str(spec), "--data-home", str(data_home), "--small", "--csv", str(csv)]
    assert main(argv) == 0
    table = pd.read_csv(csv)
    assert len(table) > 0 and table.select_dtypes("number").notna().any().any()
    assert load_spec(spec).name in capsys.readouterr().out


@pytest.mark.bayesian
@pytest.mark.filterwarnings("ignore::bayesfair.SamplerWarning")  # --small: 100 NUTS draws
def test_simulation_spec_runs_on_a_population_of_ones_own(tmp_path, capsys):
    """A herlihy-simulation spec with [data] csv and [columns] simulates on that file's
    population (no AUC without a score); a population for another study, or an outcome
    that is not 0/1, is refused by name."""
    rng = np.random.default_rng(5)
    n = 4000
    pop = pd.DataFrame(
        {
            "region": rng.choice(list("NSEW"), n, p=[0.5, 0.3, 0.15, 0.05]),
            "sex": rng.choice(["f", "m"], n),
        }
    )
    pop["label"] = (rng.random(n) < np.where(pop.region == "W", 0.6, 0.3)).astype(int)
    pop["pred"] = (rng.random(n) < 0.2 + 0.5 * pop["label"]).astype(int)
    pop.to_csv(tmp_path / "pop.csv", index=False)
    spec = tmp_path / "sim.toml"
    head = '[study]\nname = "herlihy-simulation"\ndraws = 2\nn_eval = 800\n'
    body = '[data]\ndataset = "csv"\npath = "pop.csv"\n[columns]\nprotected = ["region", "sex"]\n'
    spec.write_text(head + body + 'outcome = "label"\ndecision = "pred"\n')
    csv = tmp_path / "t.csv"
    assert main(["reproduce", str(spec), "--small", "--csv", str(csv)]) == 0
    table = pd.read_csv(csv)
    assert set(table.metric) == {"selection_rate", "fpr"}
    assert {"standard", "james_stein", "empirical_bayes"} <= set(table.estimator)
    assert table["all"].notna().all()
    for text, match in [
        (
            '[study]\nname = "foulds-table2"\ndataset = "adult"\n' + body + 'outcome = "y"\n',
            "only by",
        ),
        (head + body + 'outcome = "label"\npos_label = "yes"\n', "recode the outcome"),
        (head + '[data]\ndataset = "adult"\n', "dataset = 'csv'"),
    ]:
        spec.write_text(text)
        with pytest.raises(ValueError, match=match):
            load_spec(spec)


def test_reproduce_refuses_audit_specs(capsys):
    assert main(["reproduce", str(AUDIT_SPECS[0])]) == 2
    assert "no [study]" in capsys.readouterr().err


def test_spec_validation(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text('[data]\ndataset = "mnist"\n')
    with pytest.raises(ValueError, match="dataset must be one of"):
        load_spec(p)
    p.write_text('[data]\ndataset = "csv"\npath = "x.csv"\n[columns]\noutcome = "y"\n')
    with pytest.raises(ValueError, match="protected"):
        load_spec(p)
    p.write_text('[data]\ndataset = "compas"\n[colums]\n')
    with pytest.raises(ValueError, match="unknown section"):
        load_spec(p)
    p.write_text("[data\n")
    with pytest.raises(ValueError, match="not valid TOML"):
        load_spec(p)
    # a misspelt key would leave its default in force without a word: each is refused
    for text, match in [
        ('[data]\ndataset = "adult"\nsplits = "test"\n', r"unknown \[data\] key\(s\) \['splits'\]"),
        ('[data]\ndataset = "compas"\n[metrics]\nalfa = 2\n', r"\[metrics\] key\(s\) \['alfa'\]"),
        ('[study]\nname = "boxer-table4"\nrestart = 5\n', r"\[study\] key\(s\) \['restart'\]"),
        ('[study]\nname = "foulds-table2"\n[inference]\nchain = 2\n', r"\['chain'\]"),
        ('[data]\ndataset = "compas"\n[inference]\ndraws = 9\n', "read by \\[study\\] specs only"),
        # ... and so is a value of the wrong type (2.5 draws ran 2; "false" fitted the network)
        ('[study]\nname = "foulds-table2"\ndataset = "adult"\n[inference]\ndraws = 2.5\n', "whole"),
        (
            '[study]\nname = "foulds-table2"\ndataset = "adult"\n[inference]\ndnn = "false"\n',
            "true",
        ),
        ('[study]\nname = "boxer-table4"\npenalty = "1"\n', r"penalty must be a number"),
        ('[study]\nname = "foulds-table3"\n', "needs dataset = 'adult' or 'compas', got None"),
        (
            '[study]\nname = "foulds-table3"\ndataset = "adult"\npoint_estimates = "mle"\n',
            "point_estimates must be 'map' or 'authors', got 'mle'",
        ),
        (
            '[study]\nname = "foulds-table2"\ndataset = "adult"\npoint_estimates = "map"\n',
            r"\[study\] key\(s\) \['point_estimates'\]",
        ),
        (
            '[study]\nname = "herlihy-simulation"\npopulation = "census"\n',
            r"population must be one of \('adult', 'diabetes'\), got 'census'",
        ),
        (
            '[study]\nname = "herlihy-simulation"\npopulation = "diabetes"\n[data]\n'
            'dataset = "csv"\npath = "p.csv"\n[columns]\nprotected = ["g"]\noutcome = "y"\n',
            "both name the simulation's population",
        ),
    ]:
        p.write_text(text)
        with pytest.raises(ValueError, match=match):
            load_spec(p)


@pytest.mark.slow
def test_demo_with_bayesian_section(tmp_path):
    out = tmp_path / "report.html"
    assert main(["demo", "--out", str(out), "--n-rows", "3000", "--n-resamples", "19"]) == 0
    html = out.read_text()
    assert "Bayesian intersectional fairness" in html
    assert "Model-averaging weights" in html and "LOO stacking" in html
    assert html.count("data:image/png;base64,") >= 3
    assert "Subgroup scan (Conditional Bias Scan)" in html
    assert "Per-group estimates for small groups" in html and "hierarchical" in html
    assert "NUTS diagnostics of the hierarchical models" in html


def test_posterior_probability_beside_pvalues():
    from scipy import stats

    from bayesfair.metrics import posterior_probability_higher

    df = pd.DataFrame(
        {
            "g": ["a"] * 100 + ["b"] * 100,
            "y": [1] * 200,
            "d": [0] * 30 + [1] * 70 + [0] * 10 + [1] * 90,
        }
    )
    data = AuditData(df, "g", "y", decision="d")
    p = posterior_probability_higher(data, "fnr", ["g"], "a", n_draws=200_000)
    # P(Beta(30.5, 70.5) > Beta(10.5, 90.5)) by numerical integration
    grid = np.linspace(0, 1, 20001)
    exact = np.trapezoid(stats.beta.pdf(grid, 30.5, 70.5) * stats.beta.cdf(grid, 10.5, 90.5), grid)
    assert p == pytest.approx(exact, abs=0.003)
    # a label that is no group was once compared as an empty group (0.82 on other data)
    with pytest.raises(ValueError, match="'c' is not a group"):
        posterior_probability_higher(data, "fnr", ["g"], "c")
    with pytest.raises(ValueError, match="unknown metric"):
        posterior_probability_higher(data, "fnx", ["g"], "a")


def test_frequentist_table_flags_the_group_attaining_max_t_with_both_rates():
    """Over several groups every p-value sits at the permutation floor; the flagged group is
    the one whose gap attains the max-T statistic (here the one with a far lower FPR, which
    the smallest-p rule missed: it took the first group in the table), shown with its rate
    and the other rows' rate, so that P(rate higher | data) near 0 reads as 'lower'."""
    from bayesfair.report import Report, add_frequentist_section
    from bayesfair.report.html import Table

    rng = np.random.default_rng(0)
    g = np.repeat(["a", "b", "c", "d"], [3000, 3000, 3000, 3000])
    fpr = {"a": 0.5, "b": 0.35, "c": 0.3, "d": 0.05}
    df = pd.DataFrame({"g": g, "y": 0})
    df["d"] = (rng.random(len(df)) < df["g"].map(fpr)).astype(int)
    data = AuditData(df, "g", "y", decision="d")
    sec = add_frequentist_section(Report("t"), data, ["fpr"], n_resamples=199).sections[0]
    table = next(b.frame for b in sec.blocks if isinstance(b, Table)).iloc[0]
    assert table["pvalue"] == pytest.approx(1 / 200)
    assert table["flagged group"] == "d"
    assert table["its rate"] == pytest.approx(df.d[df.g == "d"].mean())
    assert table["rest's rate"] == pytest.approx(df.d[df.g != "d"].mean())
    assert table["P(flagged rate higher | data)"] < 0.01


def test_frequentist_section_says_which_tests_it_cannot_run():
    """FPR is undefined for a group without negatives: two-group tests with such a group
    and a max-T test over one defined group cannot run, and the table says so (the
    report failed with the test's ValueError); the FNR tests run as before."""
    from bayesfair.report import Report, add_frequentist_section
    from bayesfair.report.html import Table

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"sex": rng.choice(["F", "M"], 600), "race": rng.choice(["a", "b"], 600)})
    df["y"] = np.where(df["sex"] == "F", 1, rng.integers(0, 2, 600))
    df.loc[(df["sex"] == "M") & (df["race"] == "b"), "y"] = 1
    df["d"] = rng.integers(0, 2, 600)
    data = AuditData(df, ["sex", "race"], "y", decision="d")
    sec = add_frequentist_section(Report("t"), data, ["fpr", "fnr"], n_resamples=99).sections[0]
    table = next(b.frame for b in sec.blocks if isinstance(b, Table)).set_index(
        ["metric", "groups"]
    )
    assert table.loc[("fpr", "sex"), "test"] == (
        "not run: fpr is undefined in F (no rows in its denominator)"
    )
    assert table.loc[("fpr", "sex x race"), "test"] == (
        "not run: fpr is undefined in F, a; F, b; M, b (no rows in its denominator)"
    )
    assert table.loc[("fpr", "race"), "test"] == (
        "not run: fpr is undefined in b (no rows in its denominator)"
    )
    assert table.loc["fpr", "pvalue"].isna().all()
    assert table.loc["fnr", "pvalue"].notna().all()  # FNR is defined in every group
    # each test says its permutation: within outcome, exact for FNR
    assert table.loc[("fnr", "sex"), "test"] == (
        "two groups, studentized, within_outcome permutation"
    )
    assert table.loc[("fnr", "sex x race"), "test"].endswith("within_outcome permutation")
    with pytest.raises(ValueError, match="unknown metric 'fp_rate'"):
        add_frequentist_section(Report("t"), data, ["fp_rate"])


def test_per_group_table_gives_each_estimator_its_interval(monkeypatch):
    """The report's per-group table: one row per group by size, each estimator's estimate
    and interval as in the result's table; a wide table scrolls inside the page."""
    from bayesfair import disaggregated_evaluation
    from bayesfair.report import disaggregated as report_disaggregated
    from bayesfair.report.disaggregated import _metric_table, add_disaggregated_section
    from bayesfair.report.html import Report, Table

    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "a": rng.choice(["x", "y", "z"], 300, p=[0.7, 0.25, 0.05]),
            "b": rng.choice(["u", "v"], 300),
            "y": rng.integers(0, 2, 300),
            "d": rng.integers(0, 2, 300),
        }
    )
    res = disaggregated_evaluation(
        df,
        ["a", "b"],
        "y",
        "d",
        metrics=["fpr"],
        estimators=["standard", "james_stein", "empirical_bayes"],
        n_variance_resamples=30,
        random_state=0,
    )
    tab = _metric_table(res, "fpr")
    assert list(tab.columns) == [
        "group",
        "n",
        "standard",
        "standard interval",
        "james_stein",
        "empirical_bayes",
        "empirical_bayes interval",
    ]
    assert tab["n"].is_monotonic_increasing and len(tab) == 6
    row = res.table[(res.table.metric == "fpr") & (res.table.estimator == "empirical_bayes")]
    row = row.loc[row["n"].idxmin()]
    got = tab.set_index("group").loc[row["group"]]
    assert got["empirical_bayes"] == f"{row['estimate']:.3f}"
    assert got["empirical_bayes interval"] == f"[{row['lower']:.3f}, {row['upper']:.3f}]"
    assert Table(tab).to_html().startswith('<div class="scroll"><table')
    # the section says which empirical-Bayes interval it shows
    assert res.eb_interval == "prasad_rao"
    html = add_disaggregated_section(Report("t"), res).to_html()
    assert "Prasad and Rao" in html and "plug-in posterior intervals: they" not in html
    res.eb_interval = "posterior"
    html = add_disaggregated_section(Report("t"), res).to_html()
    assert "are the paper&#x27;s plug-in posterior intervals" in html
    assert "smallest of" not in html
    res.eb_interval = "robust"
    html = add_disaggregated_section(Report("t"), res).to_html()
    assert "Empirical Bayes here is the robust one" in html and "Prasad and Rao" not in html
    # with more groups than a plot can show, it shows the smallest and says so
    monkeypatch.setattr(report_disaggregated, "MAX_PLOTTED_GROUPS", 4)
    html = add_disaggregated_section(Report("t"), res).to_html()
    assert "The 4 smallest of 6 groups; the result&#x27;s table (DisaggregatedResult" in html


def test_per_group_section_names_groups_without_rows():
    """Groups declared but without rows get model-based estimates only; the section names
    them and says that structured regression's interval there is the surface's alone, and
    says nothing when every group has rows."""
    from bayesfair import disaggregated_evaluation
    from bayesfair.disaggregated import StructuredRegression
    from bayesfair.report.disaggregated import add_disaggregated_section
    from bayesfair.report.html import Report

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.choice(["x", "y", "z"], 2000), "b": rng.choice(["u", "v"], 2000)})
    df["y"] = 0
    df["d"] = (rng.random(2000) < 0.2 + 0.4 * ((df.a == "y") & (df.b == "u"))).astype(int)
    sr = StructuredRegression(n_resamples=50)
    kw = dict(metrics=["fpr"], estimators=["standard", sr], random_state=0)
    kw.update(n_variance_resamples=30)
    full = disaggregated_evaluation(df, ["a", "b"], "y", "d", **kw)
    assert "have no rows" not in add_disaggregated_section(Report("t"), full).to_html()
    gone = df[~((df.a != "x") & (df.b == "v"))].assign(
        a=lambda f: pd.Categorical(f.a, categories=["x", "y", "z"])
    )
    res = disaggregated_evaluation(gone, ["a", "b"], "y", "d", **kw)
    html = add_disaggregated_section(Report("t"), res).to_html()
    # group labels hold ", " themselves, so the list separates them with "; "
    assert "2 group(s) have no rows (y, v; z, v): their model-based estimates" in html
    sr = res.table[(res.table.estimator == "structured") & (res.table.n == 0)]
    assert len(sr) == 2 and np.isfinite(sr[["estimate", "lower", "upper"]].to_numpy()).all()


@pytest.mark.bayesian
def test_rate_charts_leave_no_blank_band_on_many_intersections(monkeypatch):
    """The per-intersection charts list hundreds of groups; their y-range is the rows and
    half a row either side (matplotlib's default 5% margin left a dozen blank rows),
    largest group first."""
    from bayesfair.models import DirichletMultinomial
    from bayesfair.report import plot_group_rates, plot_posterior_rates
    from bayesfair.report import plots as report_plots

    rng = np.random.default_rng(0)
    n = 20000
    df = pd.DataFrame({f"s{i}": rng.choice(list("abc"), n, p=[0.6, 0.3, 0.1]) for i in range(5)})
    df["y"] = (rng.random(n) < 0.3).astype(int)
    df["d"] = (rng.random(n) < 0.4).astype(int)
    data = AuditData(df, protected=[f"s{i}" for i in range(5)], outcome="y", decision="d")
    fitted = DirichletMultinomial(draws=50, random_state=0).fit(data)
    for fig in (plot_group_rates(data), plot_posterior_rates(fitted)):
        ax = fig.axes[0]
        assert ax.get_ylim() == (242.5, -0.5)
        assert ax.get_yticklabels()[0].get_text().startswith("a, a, a, a, a")
    # capped: the largest groups, in the same order; the report caps at MAX_CHART_ROWS and
    # says so in the caption
    full = [t.get_text() for t in plot_group_rates(data).axes[0].get_yticklabels()]
    for fig in (plot_group_rates(data, max_groups=10), plot_posterior_rates(fitted, max_groups=10)):
        ax = fig.axes[0]
        assert ax.get_ylim() == (9.5, -0.5)
        assert [t.get_text() for t in ax.get_yticklabels()] == full[:10]
    with pytest.raises(ValueError, match="`max_groups` must be a positive integer"):
        plot_group_rates(data, max_groups=0)
    monkeypatch.setattr(report_plots, "MAX_CHART_ROWS", 100)
    html = run_audit(data).report().to_html()
    assert "The 100 largest of 243 intersections; AuditData.table has every one." in html
    # the posterior chart's intervals have the mass it is asked for
    fig = plot_posterior_rates(fitted, level=0.5)
    assert fig.axes[0].get_legend().get_texts()[0].get_text().endswith("mean, 50% HDI")
    s50, s90 = fitted.summary(0.5), fitted.summary()
    assert (s50["upper"] - s50["lower"] < s90["upper"] - s90["lower"]).all()


def test_group_charts_build_the_labels_once(monkeypatch):
    """``AuditData.group_labels`` rebuilds the labels on every access; the per-intersection
    chart read it once per intersection, which made the report of 4,096 intersections
    take 52 s instead of 9 s.  The number of rebuilds must not grow with the groups."""
    from bayesfair.report import plot_group_rates

    calls = []
    grouping = AuditData.grouping
    monkeypatch.setattr(
        AuditData, "grouping", lambda self, by=None: calls.append(by) or grouping(self, by)
    )
    rng = np.random.default_rng(0)
    df = pd.DataFrame({f"s{i}": rng.choice(list("abcd"), 3000) for i in range(3)})  # 64 groups
    df["y"] = rng.integers(0, 2, 3000)
    data = AuditData(df, protected=["s0", "s1", "s2"], outcome="y")
    plot_group_rates(data)
    assert len(calls) <= 2, len(calls)


@pytest.mark.bayesian
def test_bayesian_section_takes_a_list_of_models_and_checks_its_input():
    from bayesfair.datasets import make_gaussian_threshold
    from bayesfair.models import DirichletMultinomial, NaiveBayes
    from bayesfair.report import add_bayesian_section

    data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    fits = [DirichletMultinomial(draws=50, random_state=0).fit(data) for _ in range(2)]
    fits.append(NaiveBayes(draws=50, random_state=0).fit(data))
    mech = [m.__class__(draws=50, random_state=1).fit(data, role="decision") for m in fits]
    html = add_bayesian_section(Report("t"), fits, mech).to_html()
    for name in ("EDF-exact", "EDF-exact#2", "NB-exact"):
        assert f"<td>{name}</td>" in html, name
    assert "df_amplification" in html
    # the diagnostics table has a row per fit, the decisions' fits included
    assert html.count("<td>decisions</td>") == 3 and html.count("<td>labels</td>") == 3
    # with each fit's posterior predictive check
    assert "counts not reproduced" in html and "predictive_check()" in html
    # the posterior boxes have the frequentist interval of the same table beside them
    assert "frequentist 90% confidence interval of the same table" in html
    assert "each draw of epsilon and gamma is positive" in html
    # epsilon over each attribute alone beside the intersections' (race, sex, nationality)
    assert "epsilon over each protected attribute alone" in html
    for groups in ("race", "sex", "nationality", "race x sex x nationality"):
        assert html.count(f"<td>{groups}</td>") == 2, groups  # labels' and decisions' rows
    with pytest.raises(ValueError, match=r"`detail` must be one of the models \['EDF-exact'"):
        add_bayesian_section(Report("t"), fits, mech, detail="HLR")
    with pytest.raises(TypeError, match="`models` must be a dict name -> fitted model or a list"):
        add_bayesian_section(Report("t"), fits[0])
    with pytest.raises(TypeError, match=r"`models` entries \['b'\] are not bayesfair models"):
        add_bayesian_section(Report("t"), {"a": fits[0], "b": "HLR"})
    with pytest.raises(TypeError, match=r"`models` must hold fitted bayesfair models only"):
        add_bayesian_section(Report("t"), [fits[0], 2])  # was AttributeError: no 'name'
    with pytest.raises(TypeError, match="`data` must be an AuditData"):
        scan_audit_data(fits[0].design_)  # was AttributeError: no 'row_decision'
    with pytest.raises(ValueError, match="`mechanism` has 1 models, `models` 3"):
        add_bayesian_section(Report("t"), fits, mech[:1])
    with pytest.raises(ValueError, match="`mechanism` must name the same models"):
        add_bayesian_section(Report("t"), {"a": fits[0]}, {"b": mech[0]})


def test_audit_summary_is_the_fairness_table_with_the_truth():
    from bayesfair import empirical_fairness
    from bayesfair.datasets import make_gaussian_threshold

    ds = make_gaussian_threshold(n_rows=3000, random_state=0)
    data = ds.audit_data()
    result = run_audit(data, pseudo_count=1.0, truth=ds.truth)
    table = result.summary()
    pd.testing.assert_frame_equal(table, result.fairness_table())
    assert set(table["role"]) == {"outcome", "decision"}
    eps = table[(table["metric"] == "epsilon-DF") & (table["role"] == "outcome")]
    smoothed = empirical_fairness(data, role="outcome", pseudo_count=1.0).epsilon
    assert smoothed in eps["value"].to_numpy()
    truth = eps["truth (outcome)"].dropna().unique()
    assert list(truth) == [ds.truth["epsilon"]]
    assert table.loc[table["role"] == "decision", "truth (outcome)"].isna().all()
    # the EDF rows carry the confidence interval of the population's value, which holds the
    # EDF estimate itself (the sample's rates and shares lie in their intervals)
    edf = table["method"] == "EDF"
    lo, hi = table["lower"], table["upper"]
    assert (lo[edf] <= table["value"][edf]).all() and (table["value"][edf] <= hi[edf]).all()
    assert lo[~edf].isna().all() and hi[~edf].isna().all()
    with pytest.warns(UserWarning, match="3 group.s. without rows left out of epsilon"):
        ci = fairness_confidence_interval(data, role="decision", level=0.9)
    row = table[edf & (table["role"] == "decision") & (table["metric"] == "gamma-SF")]
    assert row[["lower", "upper"]].iloc[0].tolist() == list(ci.gamma_interval)
    # amplification: both targets' intervals at 95%, their far ends
    amp = result.amplification.set_index(["method", "metric"]).loc["EDF"]
    with pytest.warns(UserWarning, match="without rows"):
        d, m = (
            fairness_confidence_interval(data, role=t, level=0.95) for t in ("outcome", "decision")
        )
    assert amp.loc["gamma-SF", "lower"] == m.gamma_interval[0] - d.gamma_interval[1]
    assert amp.loc["gamma-SF", "upper"] == m.gamma_interval[1] - d.gamma_interval[0]
    assert amp.loc["epsilon-DF", "upper"] == m.epsilon_interval[1] - d.epsilon_interval[0]
    assert (amp["lower"] <= amp["amplification"]).all()
    assert (amp["amplification"] <= amp["upper"]).all()
    assert "lower" in run_audit(data, level=0.8).fairness_table()
    with pytest.raises(ValueError, match="level"):
        run_audit(data, level=1.0)


def test_audit_says_when_it_has_no_interval_of_epsilon():
    # one intersection with rows (the others are unused categories): nothing to compare
    cat = lambda v, c: pd.Categorical([v] * 6, categories=c)  # noqa: E731
    df = pd.DataFrame({"a": cat("x", ["x", "y"]), "b": cat("u", ["u", "v"]), "y": [0, 1] * 3})
    result = run_audit(AuditData(df, ["a", "b"], "y"))
    assert "1 intersection has rows: no confidence interval" in result.notes[-1]
    assert result.fairness_table()["lower"].isna().all() and not result.intervals


def test_tables_show_and_save_a_meaningful_index(tmp_path):
    """A user's table whose index carries the labels (named, strings, several levels) shows
    and saves it as the first column(s); it was dropped from both the HTML and the CSV.
    Row numbers, also after filtering, stay out."""
    from bayesfair.report import Report, Table

    frames = {
        "group,fpr": pd.DataFrame({"fpr": [0.1, 0.2]}, index=pd.Index(["a", "b"], name="group")),
        "index,x": pd.DataFrame({"x": [1, 2]}, index=["u", "v"]),
        "g,k,w": pd.DataFrame(
            {"w": [1, 2]}, index=pd.MultiIndex.from_tuples([("a", 1), ("b", 2)], names=["g", "k"])
        ),
        "z": pd.DataFrame({"z": [1, 2, 3]}).query("z > 1"),
    }
    rep = Report("t")
    sec = rep.section("s")
    for frame in frames.values():
        sec.add(Table(frame))
    index = pd.read_csv(rep.save_tables(tmp_path))
    for header, name in zip(frames, index["file"], strict=True):
        assert (tmp_path / name).read_text().splitlines()[0] == header
    html = rep.to_html()
    assert "<td>u</td>" in html and "<th>group</th>" in html and "<th>k</th>" in html


@pytest.mark.bayesian
def test_posterior_boxes_draw_the_frequentist_interval_beside_the_models():
    from bayesfair.datasets import make_gaussian_threshold
    from bayesfair.frequentist.fairness_bounds import intervals_from_counts
    from bayesfair.models import DirichletMultinomial, posterior_fairness
    from bayesfair.report import plot_posterior_boxes

    data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    labels = DirichletMultinomial(draws=200, random_state=0).fit(data)
    decisions = DirichletMultinomial(draws=200, random_state=1).fit(data, role="decision")
    d = labels.design_
    with pytest.warns(UserWarning, match="3 group.s. without rows"):
        ci = fairness_confidence_interval(data)
        # the report computes it from the model's table: the same interval
        same = intervals_from_counts(
            d.n, d.k, d.labels, level=0.9, role="outcome", by=("race", "sex", "nationality")
        )
    assert same.epsilon_interval == ci.epsilon_interval and same.gamma_interval == ci.gamma_interval
    fig = plot_posterior_boxes({"EDF": posterior_fairness(labels, decisions, random_state=0)}, ci)
    ticks = [[t.get_text() for t in ax.get_xticklabels()] for ax in fig.axes]
    assert ticks == [["EDF", "90% CI"], ["EDF", "90% CI"], ["EDF"]]  # none for amplification
    for ax, (lo, hi) in zip(fig.axes, (ci.epsilon_interval, ci.gamma_interval), strict=False):
        (segment,) = ax.collections[-1].get_segments()
        end = segment[1, 1]
        assert segment[0, 1] == lo
        # up to the upper end, or to the plot's top with an arrow where the end lies beyond
        assert end == hi or (end < hi and ax.lines[-1].get_marker() == "^")


@pytest.mark.parametrize("command", [["demo"], ["audit", "data.csv"]])
def test_the_seed_option_has_the_vocabularys_name(command):
    """--random-state is random_state's name on the command line (the report's Settings
    say random_state=...); --seed, its earlier name, means the same; a negative seed is
    refused under both names."""
    from bayesfair.cli import build_parser

    parser = build_parser()
    assert parser.parse_args([*command, "--random-state", "7"]).seed == 7
    assert parser.parse_args([*command, "--seed", "7"]).seed == 7
    with pytest.raises(SystemExit):
        parser.parse_args([*command, "--random-state", "-1"])


def test_n_jobs_reaches_the_audit_and_a_zero_is_refused(monkeypatch):
    """--n-jobs is bf.audit's n_jobs (default 1; -1 for every core); 0 or a word is a usage
    error that names the option."""
    import bayesfair.cli as cli

    parser = cli.build_parser()
    assert parser.parse_args(["demo"]).n_jobs == 1
    assert parser.parse_args(["demo", "--n-jobs", "-1"]).n_jobs == -1
    for bad in ("0", "two"):
        with pytest.raises(SystemExit):
            parser.parse_args(["demo", "--n-jobs", bad])
    seen = {}
    monkeypatch.setattr(cli, "audit", lambda data, **kw: seen.update(kw))
    cli._whole_audit(None, parser.parse_args(["demo", "--n-jobs", "2"]), bayes=False)
    assert seen["n_jobs"] == 2
