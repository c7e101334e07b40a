"""Cluster execution: identical results on a real Dask LocalCluster, and dask.dataframe
aggregation feeding the count-based tests."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayesfair import AuditData, aggregate_counts, run_audit
from bayesfair.aggregate import cells_for
from bayesfair.frequentist import permutation_test, permutation_test_counts
from bayesfair.scan import SubsetSearch

distributed = pytest.importorskip(
    "distributed", reason="dask is an optional extra: pip install 'bayesfair[dask]'"
)
dd = pytest.importorskip("dask.dataframe")


def _frame(n=20_000, seed=0):
    rng = np.random.default_rng(seed)
    g = rng.random(n) < 0.2
    y = rng.random(n) < np.where(g, 0.1, 0.5)
    d = np.where(rng.random(n) < 0.8, y, ~y)
    return pd.DataFrame(
        {
            "g": np.where(g, "A", "B"),
            "sex": rng.choice(["f", "m"], n),
            "y": y.astype(int),
            "d": d.astype(int),
            "s": rng.random(n),
        }
    )


@pytest.fixture(scope="module")
def cluster():
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as lc,
        Client(lc) as client,
    ):
        yield client


def test_same_pvalues_with_n_jobs_and_a_local_cluster(cluster):
    from joblib import parallel_config

    data = AuditData(_frame(), ["g"], "y", decision="d")
    kw = dict(n_resamples=3000, random_state=42)
    one = permutation_test(data, "fnr", n_jobs=1, **kw)
    two = permutation_test(data, "fnr", n_jobs=2, **kw)
    with parallel_config(backend="dask"):
        on_cluster = permutation_test(data, "fnr", n_jobs=-1, **kw)
    assert one.pvalue == two.pvalue == on_cluster.pvalue
    np.testing.assert_array_equal(one.null_distribution, on_cluster.null_distribution)


def test_scan_resamples_on_a_local_cluster(cluster):
    from joblib import parallel_config

    from bayesfair.datasets import make_cbs_semisynthetic
    from bayesfair.scan import conditional_bias_scan

    ds = make_cbs_semisynthetic(
        mu_sep=1.0, protected_class=("race", "African-American"), n_rows=2000, random_state=3
    )
    kw = dict(
        protected_class="protected",
        outcome="y",
        decision="p_bin",
        scan_type="separation_recommendations",
        condition_value=0,
        attributes=list(ds.covariates),
        search=SubsetSearch(n_restarts=3),
        n_resamples=16,
        random_state=5,
    )
    local = conditional_bias_scan(ds.frame, n_jobs=1, **kw)
    with parallel_config(backend="dask"):
        remote = conditional_bias_scan(ds.frame, n_jobs=-1, **kw)
    np.testing.assert_array_equal(local.null_distribution, remote.null_distribution)


def test_dask_dataframe_aggregation_feeds_count_tests(cluster):
    pdf = _frame()
    ddf = dd.from_pandas(pdf, npartitions=8)
    got = aggregate_counts(ddf, ["g", "sex"], "y", decision="d", score="s")
    ref = aggregate_counts(pdf, ["g", "sex"], "y", decision="d", score="s")
    pd.testing.assert_frame_equal(got, ref, check_dtype=False)
    data = AuditData(pdf, ["g", "sex"], "y", decision="d", score="s")
    t = data.table
    for c in ("n", "positives", "tp", "fp", "fn", "tn"):
        assert got[c].tolist() == t[c].tolist()
    # the counts alone give the same permutation test as the rows
    by_rows = permutation_test(
        AuditData(pdf, ["g"], "y", decision="d"), "fnr", n_resamples=2000, random_state=1
    )
    ca, cb = cells_for(got, got.g == "A"), cells_for(got, got.g == "B")
    by_counts = permutation_test_counts(
        ca, cb, "fnr", groups=("A", "B"), n_resamples=2000, random_state=1
    )
    assert by_counts.difference == pytest.approx(by_rows.difference)
    assert by_counts.studentized_statistic == pytest.approx(by_rows.studentized_statistic)
    # ... and, as an AuditData of counts, the whole empirical audit of the rows
    counted = AuditData.from_counts(got, ["g", "sex"], categories=data.categories)
    pd.testing.assert_frame_equal(
        run_audit(counted).fairness_table(), run_audit(data).fairness_table()
    )


def test_aggregate_refuses_missing_protected_values():
    pdf = _frame(100)
    pdf.loc[0, "g"] = None
    with pytest.raises(ValueError, match="missing"):
        aggregate_counts(pdf, ["g"], "y")
    with pytest.raises(ValueError, match="not in the data"):
        aggregate_counts(pdf, ["nope"], "y")


@pytest.mark.parametrize("lazy", [False, True])
def test_aggregate_refuses_outcomes_and_decisions_that_are_not_0_or_1(lazy, cluster):
    """0.5 was truncated to 0 and 2 or -1 gave impossible counts without a word; NaN failed
    in pandas' int cast.  Refused with the column and the count of rows, also for dask."""
    for col, value, message in [
        ("y", 0.5, r"outcome column 'y': 2 row\(s\) are missing or not 0/1"),
        ("y", np.nan, r"outcome column 'y': 2 row\(s\) are missing or not 0/1"),
        ("d", 2, r"decision column 'd': 2 row\(s\) are missing or not 0/1"),
        ("d", -1, r"decision column 'd': 2 row\(s\)"),
        ("s", np.inf, r"score column 's': 2 row\(s\) are missing or not a finite number"),
    ]:
        pdf = _frame(100)
        pdf[col] = pdf[col].astype(float)
        pdf.loc[[3, 70], col] = value
        frame = dd.from_pandas(pdf, npartitions=4) if lazy else pdf
        with pytest.raises(ValueError, match=message):
            aggregate_counts(frame, ["g"], "y", decision="d", score="s")
    booleans = _frame(100).astype({"y": bool, "d": bool})
    pd.testing.assert_frame_equal(
        aggregate_counts(booleans, ["g"], "y", decision="d"),
        aggregate_counts(_frame(100), ["g"], "y", decision="d"),
    )
