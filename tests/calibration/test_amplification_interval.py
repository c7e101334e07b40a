"""interval_calibration(role="amplification"): intervals of the decisions' epsilon-DF and
gamma-SF minus the labels', from the three factors P(y|s), P(d|y=0,s), P(d|y=1,s)."""

from __future__ import annotations

import numpy as np
import pytest

import bayesfair as bf
from bayesfair import interval_calibration
from bayesfair._table_intervals import AmplificationIntervals, table_metrics


@pytest.fixture(scope="module")
def data():
    return bf.datasets.make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()


def test_the_estimate_is_the_empirical_amplification(data):
    """The Clopper-Pearson row's estimate is the unsmoothed EDF amplification of
    bf.bias_amplification, whatever the factorisation; the calibrated interval is not
    moved by a bias correction."""
    cal = interval_calibration(data, role="amplification", n_replicates=10, random_state=0)
    est = cal.intervals.set_index(["metric", "method"])["estimate"]
    direct = bf.bias_amplification(
        bf.empirical_fairness(data, role="decision", pseudo_count=0),
        bf.empirical_fairness(data, role="outcome", pseudo_count=0),
    ).set_index("metric")["amplification"]
    assert est[("epsilon-DF", "Clopper-Pearson")] == pytest.approx(direct["epsilon-DF"])
    assert est[("gamma-SF", "Clopper-Pearson")] == pytest.approx(direct["gamma-SF"])
    assert cal.role == "amplification"
    assert set(cal.coverage["scenario"]) == {"posterior", "observed", "shrunk", "fair"}
    # no bias correction for the amplification: the calibrated row is the hierarchical
    # posterior's, at its calibrated mass, with the same estimate
    assert cal.bias_correction == {"epsilon-DF": 0.0, "gamma-SF": 0.0}
    assert est[("epsilon-DF", "calibrated")] == est[("epsilon-DF", "hierarchical")]


def test_factor_draws_agree_with_a_dirichlet_over_the_four_cells():
    """Brute force: with large counts, Beta draws of the three factors composed into the
    decisions' rate give the same amplification posterior as a Dirichlet over each
    intersection's four (y, d) cells, which carries the two columns' correlation directly;
    drawing labels and decisions independently would not: with decisions that agree with
    the labels as a useful model's do, its spread is larger."""
    rng = np.random.default_rng(1)
    n = np.array([3000, 2500, 4000, 3500])
    py = np.array([0.2, 0.35, 0.5, 0.6])
    tpr, fpr = np.array([0.85, 0.8, 0.9, 0.75]), np.array([0.1, 0.15, 0.05, 0.2])
    probs = np.stack([(1 - py) * (1 - fpr), (1 - py) * fpr, py * (1 - tpr), py * tpr], -1)
    cells = np.stack([rng.multinomial(m, q) for m, q in zip(n, probs, strict=True)])
    tn, fp, fn, tp = cells.T
    box = AmplificationIntervals(n, np.arange(4)[None], n > 0, 0.9, 0.5)
    t = np.stack([tp + fn, fp, tp], axis=-1)
    draws = 40_000
    sizes = np.stack([n, tn + fp, tp + fn], axis=-1)
    factors = rng.beta(t + 0.5, sizes - t + 0.5, size=(draws, 4, 3))
    share = np.broadcast_to(n / n.sum(), (draws, 4))
    via_factors = box._metrics(factors, share)
    joint = np.stack([rng.dirichlet(c + 0.5, size=draws) for c in cells], axis=1)
    py, pd_ = joint[..., 2] + joint[..., 3], joint[..., 1] + joint[..., 3]
    via_cells = table_metrics(pd_, share) - table_metrics(py, share)
    np.testing.assert_allclose(via_factors.mean(0), via_cells.mean(0), rtol=0.02, atol=1e-4)
    np.testing.assert_allclose(via_factors.std(0), via_cells.std(0), rtol=0.05)
    indep = table_metrics(rng.beta(tp + fp + 0.5, n - tp - fp + 0.5, (draws, 4)), share)
    indep -= table_metrics(rng.beta(tp + fn + 0.5, n - tp - fn + 0.5, (draws, 4)), share)
    assert (indep.std(0) > 1.2 * via_cells.std(0)).all()


def test_replicates_draw_labels_then_decisions_given_them():
    """A replicate of factor rates has, per intersection, labels ~ Binomial(n, p_y) and
    decisions given each label at their rates (means over 4,000 replicates)."""
    n = np.array([400, 300])
    p = np.array([[0.3, 0.1, 0.8], [0.6, 0.2, 0.5]])
    box = AmplificationIntervals(n, np.arange(2)[None], n > 0, 0.9, 0.5)
    rng = np.random.default_rng(2)
    t = np.array([box.simulate(p, rng) for _ in range(4000)]).mean(0)
    expected = np.stack([n * p[:, 0], n * (1 - p[:, 0]) * p[:, 1], n * p[:, 0] * p[:, 2]], -1)
    np.testing.assert_allclose(t, expected, rtol=0.02)


def test_amplification_needs_decisions_and_no_given_outcome(data):
    labels_only = bf.AuditData(data.frame, data.protected, data.outcome)
    with pytest.raises(ValueError, match="needs decisions"):
        interval_calibration(labels_only, role="amplification", n_replicates=10)
    with pytest.raises(ValueError, match="given_outcome"):
        interval_calibration(data, role="amplification", given_outcome=1, n_replicates=10)
    with pytest.raises(ValueError, match="role"):
        interval_calibration(data, role="labels", n_replicates=10)


def test_progressbar_is_a_switch(data):
    with pytest.raises(TypeError, match="progressbar"):
        interval_calibration(data, n_replicates=10, progressbar="yes")
    cal = interval_calibration(data, n_replicates=10, random_state=0, progressbar=True)
    same = interval_calibration(data, n_replicates=10, random_state=0)
    assert cal.coverage.equals(same.coverage)


@pytest.mark.slow
def test_amplification_interval_covers_on_replicates():
    """The calibrated (default) and hierarchical intervals of the amplification cover near
    their level (0.9) on 200
    replicates drawn from the posterior, the observed and the shrunk rates of a table it
    was not built on, and at least at its level where labels and decisions are both fair
    (there the truth is 0 and both maxima's upward biases cancel in part, so it is
    conservative). Bounds: 0.9 -/+ 3 standard errors (0.064) below, 0.97 above."""
    data = bf.datasets.make_gaussian_threshold(n_rows=3000, random_state=5).audit_data()
    cal = interval_calibration(
        data, role="amplification", n_replicates=200, random_state=1, n_jobs=2
    )
    c = cal.coverage[cal.coverage["method"].isin(["calibrated", "hierarchical"])]
    for r in c.itertuples():
        if r.scenario == "fair":
            assert r.coverage >= 0.9 - 0.064, r
        else:
            assert 0.836 <= r.coverage <= 0.97, r


def test_table_metrics_is_epsilon_df_and_gamma_sf():
    """The replicates' fast (epsilon, gamma) equals epsilon_df and gamma_sf on rates with
    zeros, ones and ties (0 for an outcome impossible everywhere, inf for one possible in
    some intersections only)."""
    rng = np.random.default_rng(0)
    p = rng.random((400, 6))
    p[:50, 0] = 0.0
    p[50:100] = 0.0
    p[100:150] = 1.0
    p[150:200, 2] = 1.0
    p[200:250] = 0.3
    share = rng.dirichlet(np.ones(6), 400)
    with np.errstate(divide="ignore"):
        eps = bf.epsilon_df(bf.metrics.outcome_probabilities(p))
    expected = np.stack([eps, bf.gamma_sf(p, share)], axis=-1)
    np.testing.assert_array_equal(table_metrics(p, share), expected)
