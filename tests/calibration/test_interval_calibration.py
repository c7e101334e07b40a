"""interval_calibration: the default intervals of epsilon-DF and gamma-SF, and their
coverage on replicates of the audited table; the coverage study behind the default."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import bayesfair as bf
from bayesfair import AuditData, interval_calibration
from bayesfair._table_intervals import (
    MEDIAN_ROW,
    METHODS,
    METRICS,
    TAIL_ROWS,
    RateIntervals,
    calibrate,
    calibrated_mass,
    credible_masses,
    table_metrics,
    unchecked,
)
from bayesfair.calibration import constrained_bayes_rates, equal_rates_pvalue, shrunk_rates
from bayesfair.replication.intervals import (
    additive_population,
    interval_coverage,
    table_population,
)


def _table(n: np.ndarray, k: np.ndarray) -> AuditData:
    rows = []
    for g, (size, pos) in enumerate(zip(n, k, strict=True)):
        rows += [(f"g{g}", 1)] * pos + [(f"g{g}", 0)] * (size - pos)
    return AuditData(pd.DataFrame(rows, columns=["s", "y"]), "s", "y")


@pytest.fixture
def exchangeable(monkeypatch):
    """The calibration's hierarchy without its size term: every intersection departs alike,
    so a small intersection far from the large ones is shrunk too far and the posterior
    misses it. The checks of what the calibration reports where its posterior misses use
    it, as the size term (the default) rarely misses on tables small enough for a unit
    test."""
    from bayesfair import _table_intervals

    monkeypatch.setattr(_table_intervals, "GROUP_VARIANCE", "exchangeable")


@pytest.fixture(scope="module")
def calibrated():
    rng = np.random.default_rng(0)
    n = rng.integers(20, 400, 12)
    k = rng.binomial(n, rng.uniform(0.2, 0.5, 12))
    return interval_calibration(_table(n, k), n_replicates=300, random_state=0)


def test_every_scenario_and_method_is_reported():
    """Every scenario and method is measured, the fair scenario's truth is 0, and the
    summary has the calibrated interval first, with its coverages and level."""
    rng = np.random.default_rng(0)
    n = rng.integers(20, 400, 12)
    small = interval_calibration(
        _table(n, rng.binomial(n, rng.uniform(0.2, 0.5, 12))), n_replicates=10, random_state=0
    )
    c = small.coverage.set_index(["scenario", "metric", "method"])
    assert set(c.index.get_level_values("scenario")) == {"posterior", "observed", "shrunk", "fair"}
    assert set(c.index.get_level_values("method")) == {
        "calibrated",
        "hierarchical",
        "Dirichlet-multinomial",
        "Clopper-Pearson",
    }
    np.testing.assert_allclose(c.xs("fair")["truth"], 0.0, atol=1e-12)
    summary = small.summary()
    assert summary["method"].tolist()[:4] == ["calibrated"] * 2 + ["hierarchical"] * 2
    assert {"coverage_fair", "coverage_posterior", "lower", "upper", "level"} <= set(summary)
    assert (summary["lower"] <= summary["upper"]).all()


@pytest.mark.slow  # coverage over 1,200 refitted replicate tables
def test_the_clopper_pearson_box_is_valid_in_every_scenario(calibrated):
    """The Clopper-Pearson box is valid, so it covers at least at its level in every
    scenario (300 replicates: 3 standard errors below 0.9 is 0.848); a posterior of epsilon
    of independent rates, positive in every draw, never covers a fair 0."""
    c = calibrated.coverage.set_index(["scenario", "metric", "method"])
    assert (c.xs("Clopper-Pearson", level="method")["coverage"] >= 0.848).all()
    assert c.loc[("fair", "epsilon-DF", "Dirichlet-multinomial"), "coverage"] == 0.0


@pytest.mark.slow  # coverage over 1,200 refitted replicate tables
def test_the_default_holds_a_fair_zero_as_often_as_the_test_keeps_fairness(calibrated):
    """On equal rates the hierarchical interval's only miss is a rejection of equal rates,
    so its coverage is about ``level`` (0.9; 300 replicates, 3 standard errors: 0.052)."""
    c = calibrated.coverage.set_index(["scenario", "metric", "method"])["coverage"]
    for metric in ("epsilon-DF", "gamma-SF"):
        for method in ("calibrated", "hierarchical"):  # at any mass, the lower end is 0
            assert abs(c[("fair", metric, method)] - 0.9) <= 0.052


def test_lower_end_is_zero_exactly_when_equal_rates_are_not_rejected():
    """Equal rates: the p-value is large and both lower ends are 0; very different rates:
    the p-value is small and the interval is away from 0."""
    n = np.full(6, 150)
    fair = interval_calibration(_table(n, np.full(6, 45)), n_replicates=10, random_state=0)
    h = fair.intervals[fair.intervals["method"].isin(["calibrated", "hierarchical"])]
    assert fair.equal_rates_pvalue > 0.5 and (h["lower"] == 0).all()
    k = (n * np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])).astype(int)
    unfair = interval_calibration(_table(n, k), n_replicates=10, random_state=0)
    h = unfair.intervals[unfair.intervals["method"].isin(["calibrated", "hierarchical"])]
    assert unfair.equal_rates_pvalue < 0.01 and (h["lower"] > 0).all()


def test_calibrated_mass_inverts_the_coverage_curve():
    """A table whose largest log-ratio sits in a 3-row intersection with every row positive
    (enough rows to contradict the pooled rate 0.3, ``2 * 0.3**3 < 0.1``, so not
    :func:`unchecked` and never off the hierarchy): the hierarchy shrinks it, so its 90%
    interval holds the observed scenario's epsilon in about half of the replicates at most
    (0.34-0.50 over seeds 0-2, with the size term; under 0.06 without it), and the
    calibrated interval takes a larger credible mass, contains the hierarchical one moved
    by the same bias correction, and covers there in most of them. In-sample, so
    at least 0.9 wherever some mass reached the level; where none did, the shortfall says
    by how much. A table of large groups with distinct rates: nothing to allow for, so the
    mass stays near the level (never below it).
    The mass and bounds agree with the hierarchical posterior's quantiles recomputed."""
    n = np.array([400, 350, 300, 380, 3])
    k = np.array([120, 100, 95, 110, 3])
    cal = interval_calibration(_table(n, k), n_replicates=100, random_state=1)
    c = cal.coverage.set_index(["scenario", "metric", "method"])["coverage"]
    assert c[("observed", "epsilon-DF", "hierarchical")] < 0.6
    assert cal.credible_mass["epsilon-DF"] > 0.95
    covered = c[("observed", "epsilon-DF", "calibrated")]
    assert covered >= 0.75
    if covered < 0.9:
        assert cal.shortfall["epsilon-DF"]["observed"] == covered
        assert cal.credible_mass["epsilon-DF"] == 0.999
    else:
        assert "observed" not in cal.shortfall.get("epsilon-DF", {})
    iv = cal.intervals.set_index(["metric", "method"])
    cal_row, hier_row = iv.loc[("epsilon-DF", "calibrated")], iv.loc[("epsilon-DF", "hierarchical")]
    shift = cal.bias_correction["epsilon-DF"]  # both moved by it, within [0, inf)
    assert cal_row["lower"] <= max(hier_row["lower"] - shift, 0.0)
    assert cal_row["upper"] > hier_row["upper"] - shift
    assert cal_row["credible_mass"] == cal.credible_mass["epsilon-DF"]
    assert hier_row["credible_mass"] == 0.9
    assert any("credible mass" in note for note in cal.notes)
    big = np.full(4, 3000)
    smooth = interval_calibration(
        _table(big, (big * np.array([0.2, 0.25, 0.3, 0.35])).astype(int)),
        n_replicates=100,
        random_state=1,
    )
    for metric, mass in smooth.credible_mass.items():
        assert 0.9 <= mass <= 0.95, (metric, mass)
    assert smooth.shortfall == {}


def test_a_default_short_of_its_level_says_so_and_names_the_interval_to_read(exchangeable):
    """Seven intersections of 300 rows at rates 0.28-0.33 and two of 4 and 5 rows with
    every row positive (both enough to contradict the pooled rate, so on the hierarchy):
    the observed scenario's truth is set by the two small ones, which the exchangeable
    hierarchy shrinks, so no credible mass up to 0.999 covers it (with the size term, the
    default, a mass of 0.995-0.999 does). The result, its note
    and the answer say so, with the coverage, and name the Clopper-Pearson interval;
    gamma-SF, which weights the small intersections by their share, reaches its level and
    is not flagged. Wherever the level was reached, the calibrated interval's in-sample
    coverage is at least the level."""
    from bayesfair.report.answers import _default_row

    n = np.array([300, 300, 300, 300, 300, 300, 300, 4, 5])
    k = np.array([90, 95, 100, 85, 92, 97, 88, 4, 5])
    cal = interval_calibration(_table(n, k), n_replicates=40, random_state=1)
    assert set(cal.shortfall) == {"epsilon-DF"}
    (scenario, coverage), *_ = cal.shortfall["epsilon-DF"].items()
    assert scenario in ("posterior", "observed") and coverage < 0.9
    assert cal.credible_mass["epsilon-DF"] == 0.999
    c = cal.coverage.set_index(["scenario", "metric", "method"])["coverage"]
    assert c[(scenario, "epsilon-DF", "calibrated")] == coverage
    for s in ("posterior", "observed"):
        assert c[(s, "gamma-SF", "calibrated")] >= 0.9
    (note,) = [x for x in cal.notes if x.startswith("calibrated")]
    assert "for epsilon-DF, no mass up to 0.999 held the truth" in note
    assert f"{coverage:.2f} ({scenario})" in note and "Clopper-Pearson" in note
    row = _default_row(cal, "epsilon-DF", "q", "s", 0.9)
    assert "short of its level" in row["interval"] and "Clopper-Pearson" in row["interval"]
    assert "short of" not in _default_row(cal, "gamma-SF", "q", "s", 0.9)["interval"]


def test_bias_correction_moves_the_interval_by_the_posterior_scenarios_median_bias():
    """Replicates whose posterior median sits 0.3 above the truth, with intervals of half
    width 0.1 at every mass: uncorrected, no mass covers; moved down by the measured bias
    (0.3), the nominal mass does. Only epsilon-DF is moved: gamma-SF's shift is 0 whatever
    the posterior scenario shows, so here no mass covers it. A lower end at 0 (equal rates
    not rejected) stays at 0, and no end goes below 0."""
    masses = credible_masses(0.9)
    box = RateIntervals(np.array([50, 50]), np.array([[0, 1]]), np.array([True, True]), 0.9, 0.5)
    rng = np.random.default_rng(0)
    res = np.full((40, len(METHODS) + len(masses) + TAIL_ROWS, 2, 3), np.nan)
    truth = rng.uniform(0.5, 1.0, size=(40, 1, 2))
    res[..., 2] = truth
    res[:, MEDIAN_ROW, :, :2] = (truth[:, 0] + 0.3)[..., None]  # no path lower end
    res[:, len(METHODS) : -TAIL_ROWS, :, 0] = truth + 0.3 - 0.1
    res[:, len(METHODS) : -TAIL_ROWS, :, 1] = truth + 0.3 + 0.1
    mass, shift = calibrate(box, {"posterior": res, "observed": res}, 0.9)
    np.testing.assert_allclose(shift, [0.3, 0.0])
    np.testing.assert_allclose(mass, [0.9, masses[-1]])
    assert (calibrated_mass([res], 0.9, box, np.zeros(2)) == masses[-1]).all()  # none covers
    moved = box.shifted(np.array([[0.0, 0.5], [0.2, 0.25]]), np.array([0.3, 0.3]))
    np.testing.assert_allclose(moved, [[0.0, 0.2], [0.0, 0.0]])


def test_bias_correction_is_reported_and_applied_to_the_estimate():
    """Twelve intersections of 15-40 rows: the calibrated estimate is the hierarchical
    median moved by the reported bias correction (within [0, inf)), which is 0 for
    gamma-SF, whose interval is the hierarchical posterior's at its mass; the calibrated
    interval covers the two scenarios it was chosen on at least at the level (in-sample),
    and a note says so."""
    rng = np.random.default_rng(3)
    n = rng.integers(15, 40, 12)
    k = rng.binomial(n, rng.uniform(0.2, 0.5, 12))
    cal = interval_calibration(_table(n, k), n_replicates=100, random_state=2)
    iv = cal.intervals.set_index(["metric", "method"])["estimate"]
    for metric in ("epsilon-DF", "gamma-SF"):
        bias = cal.bias_correction[metric]
        expected = max(iv[(metric, "hierarchical")] - bias, 0.0)
        assert iv[(metric, "calibrated")] == pytest.approx(expected)
    assert cal.bias_correction["gamma-SF"] == 0.0 and cal.bias_correction["epsilon-DF"] != 0.0
    assert cal.bias_corrected == {"epsilon-DF": True, "gamma-SF": False}
    c = cal.coverage.set_index(["scenario", "metric", "method"])["coverage"]
    for scenario in ("posterior", "observed"):
        assert (c.xs((scenario, "calibrated"), level=("scenario", "method")) >= 0.9).all()
    assert any("bias" in note for note in cal.notes)


def test_answers_say_why_a_lower_end_is_zero_and_which_intervals_are_corrected():
    """The answer of epsilon-DF's default interval names its bias correction (gamma-SF's
    has none); a lower end of 0 is read as 'equal rates not rejected' only where the test
    did not reject, else as the bias correction's doing; the amplification's answer names
    no correction."""
    from dataclasses import replace

    from bayesfair.report.answers import _default_row

    n = np.array([60, 80, 120, 90])
    cal = interval_calibration(
        _table(n, np.array([12, 30, 50, 30])), n_replicates=10, random_state=0
    )
    zero = cal.intervals.assign(lower=0.0)
    kept = _default_row(
        replace(cal, intervals=zero, equal_rates_pvalue=0.5), "epsilon-DF", "q", "s", 0.9
    )
    assert "bias correction" in kept["interval"] and "equal rates not rejected" in kept["interval"]
    assert kept["answer"].startswith("s: bias-corrected posterior median")
    moved = _default_row(
        replace(cal, intervals=zero, equal_rates_pvalue=0.01), "epsilon-DF", "q", "s", 0.9
    )
    assert "after the bias correction (equal rates rejected" in moved["interval"]
    gamma = _default_row(
        replace(cal, intervals=zero, equal_rates_pvalue=0.5), "gamma-SF", "q", "s", 0.9
    )
    assert "bias" not in gamma["interval"] + gamma["answer"]
    assert "equal rates not rejected" in gamma["interval"]
    assert gamma["answer"].startswith("s: posterior median")
    amp = _default_row(replace(cal, role="amplification"), "epsilon-DF", "q", "s", 0.9)
    assert "bias" not in amp["interval"] + amp["answer"] + amp["method"]


def test_equal_rates_test_has_its_level():
    """Under equal rates (small groups, rate 0.15) the test rejects at 0.1 in about 10% of
    600 tables (3 standard errors: 0.037), and rejects a real difference nearly always."""
    rng = np.random.default_rng(5)
    n = rng.integers(4, 60, 10)
    p = [equal_rates_pvalue(n, rng.binomial(n, 0.15), rng, n_resamples=199) for _ in range(600)]
    assert abs(np.mean(np.array(p) <= 0.1) - 0.1) <= 0.037
    big = np.full(10, 300)
    k = rng.binomial(big, np.linspace(0.1, 0.3, 10))
    assert equal_rates_pvalue(big, k, rng) <= 0.01


def test_equal_rates_decision_stops_early_only_where_the_test_is_settled():
    """The sequential decision (``decide_at``) against the full 999 resamples on the same
    streams, on 400 tables half with equal rates and half with rates 0.2-0.4: where it did
    not stop early its value is the full p-value; where it did, it stopped at a look with
    its running estimate (1 + hits) / (1 + m), and decides as the full test does (its risk
    is at most 0.001 a table, so 400 tables disagree with probability below 0.33; these
    seeds disagree nowhere). Under equal rates it rejects at 0.1 in about 10% of the tables
    (200 tables, 3 standard errors: 0.064), and most tables stop at the first look."""
    from bayesfair._table_intervals import DECISION_LOOKS

    rng = np.random.default_rng(11)
    n = rng.integers(3, 300, 16)
    rejected, early, first = [], 0, 0
    for i in range(400):
        fair = i % 2 == 0
        k = rng.binomial(n, 0.3 if fair else rng.uniform(0.2, 0.4, 16))
        seed = int(rng.integers(2**31))
        full = equal_rates_pvalue(n, k, np.random.default_rng(seed))
        decided = equal_rates_pvalue(n, k, np.random.default_rng(seed), decide_at=0.1)
        assert (decided >= 0.1) == (full >= 0.1), (i, full, decided)
        if decided != full:
            looks = [
                m
                for m in DECISION_LOOKS
                if abs(decided * (m + 1) - round(decided * (m + 1))) < 1e-9
            ]
            assert looks, (i, decided)
            early += 1
            first += looks[0] == DECISION_LOOKS[0]
        if fair:
            rejected.append(decided < 0.1)
    assert abs(np.mean(rejected) - 0.1) <= 0.064
    assert early >= 300 and first >= 250, (early, first)
    with pytest.raises(ValueError, match="decide_at"):
        equal_rates_pvalue(n, k, rng, decide_at=10)


@pytest.mark.parametrize("spread", [0.15, 0.5])
def test_path_lower_end_exceeds_a_truth_on_its_path_at_most_at_the_tests_level(spread):
    """The Neyman construction along the path: 400 tables of a population whose log-odds
    are the pattern itself (the path's world at lambda 1; twelve intersections of 50-400
    rows, deviations of spread 0.15, nearly equal rates, or 0.5); the lower end is 0 where
    equal rates are not rejected at 0.1, else :func:`path_lower_bounds`. It exceeds the
    truth's epsilon-DF and gamma-SF in about 10% of the tables (3 standard errors: 0.045),
    as a one-sided 90% bound of a test inverted must, and sits above 0 in most rejections
    (it rises from 0 with the evidence, not a bound of 0 everywhere)."""
    from bayesfair._table_intervals import path_lower_bounds

    rng = np.random.default_rng(1)
    n = rng.integers(50, 400, 12)
    eta = np.log(0.3 / 0.7) + rng.normal(0.0, spread, 12)
    p = 1 / (1 + np.exp(-eta))
    truth = table_metrics(p, n)
    lows = []
    for _ in range(400):
        k = rng.binomial(n, p)
        if equal_rates_pvalue(n, k, rng, decide_at=0.1) >= 0.1:
            lows.append(np.zeros(2))
        else:
            lows.append(path_lower_bounds(n, k, eta, 0.9, rng))
    lows = np.array(lows)
    miss = (lows > truth + 1e-12).mean(axis=0)
    assert (np.abs(miss - 0.1) <= 0.045).all(), miss
    rejected = lows[:, 0] > 0
    assert rejected.mean() >= 0.15, rejected.mean()


def test_calibrated_lower_end_is_at_most_the_path_lower_end(monkeypatch):
    """The calibrated interval's lower end is the smaller of the moved posterior interval's
    and the path's (:func:`path_lower_bounds`); a NaN path lower end (equal rates not
    rejected, or the amplification) leaves it. An audit applies it to the audited table and
    to every replicate whose coverage it reports: with a path lower end of 0 wherever equal
    rates are rejected, the calibrated interval's lower end is 0 and it holds the fair
    scenario's 0 in every replicate, where the hierarchical interval misses it in the
    rejections."""
    from dataclasses import replace

    from bayesfair._table_intervals import with_path_lower
    from bayesfair.report.answers import _default_row

    bounds = np.array([[0.5, 1.0], [0.02, 0.05]])
    out = with_path_lower(bounds, np.array([0.3, np.nan]))
    np.testing.assert_allclose(out, [[0.3, 1.0], [0.02, 0.05]])
    np.testing.assert_allclose(with_path_lower(bounds, np.array([0.7, 0.03])), bounds)
    n = np.full(6, 300)
    k = np.random.default_rng(0).binomial(n, [0.25, 0.27, 0.3, 0.3, 0.33, 0.36])
    plain = interval_calibration(_table(n, k), n_replicates=20, random_state=0)
    assert plain.equal_rates_pvalue < 0.1
    low = plain.intervals.set_index(["metric", "method"])["lower"]
    assert low.iloc[:2].gt(0).all()
    set_by_path = replace(plain, path_lower={"epsilon-DF": low.iloc[0], "gamma-SF": 0.0})
    for metric, said in (("epsilon-DF", True), ("gamma-SF", False)):
        row = _default_row(set_by_path, metric, "q", "s", 0.9)
        assert ("inverted along the path" in row["interval"]) is said

    def zero_path(self, k, post, pvalue, rng):
        return np.where(self.zero_lower(pvalue), np.nan, 0.0) * np.ones(2)

    monkeypatch.setattr(RateIntervals, "path_lower", zero_path)
    cal = interval_calibration(_table(n, k), n_replicates=20, random_state=0)
    assert (cal.intervals.set_index("method").loc["calibrated", "lower"] == 0).all()
    c = cal.coverage.set_index(["scenario", "method"])["coverage"]
    assert (c[("fair", "calibrated")] == 1.0).all()
    assert (c[("fair", "hierarchical")] < 1.0).any()
    same = ["metric", "method", "upper"]
    pd.testing.assert_frame_equal(cal.intervals[same], plain.intervals[same])


def test_replicate_tables_of_the_amplification_draw_no_unread_pvalue():
    """The amplification's lower end is never set to 0, so a replicate table draws its
    posterior and nothing more (the generator ends where the posterior's draws leave it,
    and the p-value is NaN), while the audited table's p-value is the decisions' test."""
    from bayesfair._table_intervals import AmplificationIntervals

    n = np.array([40, 60, 80])
    box = AmplificationIntervals(n, np.array([[0, 1, 2]]), n > 0, 0.9, 0.5)
    t = np.array([[10, 5, 6], [30, 8, 20], [20, 10, 12]])
    replicate, posterior_only = np.random.default_rng(0), np.random.default_rng(0)
    _, pvalue = box.hierarchical(t, 50, replicate)
    box._posterior(t, 50, posterior_only)
    assert np.isnan(pvalue) and not box.zero_lower(pvalue)
    assert replicate.bit_generator.state == posterior_only.bit_generator.state
    audited = box.pvalue(t, np.random.default_rng(1))
    assert audited == equal_rates_pvalue(n, t[:, 1] + t[:, 2], np.random.default_rng(1))


def test_result_does_not_depend_on_n_jobs():
    """Replicates run in fixed-seed chunks: one job or two give the same coverage."""
    n = np.array([40, 80, 120, 60])
    data = _table(n, np.array([10, 30, 50, 20]))
    one = interval_calibration(data, n_replicates=16, random_state=3, n_jobs=1)
    two = interval_calibration(data, n_replicates=16, random_state=3, n_jobs=2)
    pd.testing.assert_frame_equal(one.coverage, two.coverage)
    pd.testing.assert_frame_equal(one.intervals, two.intervals)


def test_table_metrics_are_the_public_metrics_without_their_checks():
    """The metrics of every replicate's draws equal :func:`epsilon_df` and
    :func:`gamma_sf` bit for bit: on shares and on counts, with an intersection of share
    0 (its rate left out, even a NaN one) and rates at exactly 0 and 1."""
    rng = np.random.default_rng(0)
    p1 = rng.uniform(size=(40, 7))
    p1[0, 2], p1[1] = 0.0, 1.0
    p1[2, 3] = np.nan
    counts = rng.integers(0, 30, size=(40, 7))
    counts[:, 0] += 1
    counts[2, 3] = 0
    shares = rng.dirichlet(np.ones(7), size=40)
    shares[2] = counts[2] / counts[2].sum()
    for rates, share in ((p1, counts), (p1, shares), (p1[3:], counts[5])):
        got = table_metrics(rates, share)[..., 1]
        np.testing.assert_array_equal(got, bf.metrics.gamma_sf(rates, share))
    finite = p1[[0, 1, *range(3, 40)]]
    np.testing.assert_array_equal(
        table_metrics(finite, shares[: len(finite)])[..., 0],
        bf.metrics.epsilon_df(bf.metrics.outcome_probabilities(finite)),
    )


def test_shrunk_rates_remove_only_the_noise():
    """Equal true rates: the shrunk rates are (nearly) the overall rate; very different
    rates in large groups: kept."""
    n = np.full(8, 200)
    k = np.random.default_rng(3).binomial(n, 0.3)
    assert np.ptp(shrunk_rates(n, k)) < 0.5 * np.ptp((k + 0.5) / (n + 1))
    big = np.full(3, 100_000)
    kept = shrunk_rates(big, (big * np.array([0.1, 0.3, 0.6])).astype(int))
    np.testing.assert_allclose(kept, [0.1, 0.3, 0.6], atol=2e-3)


def test_constrained_bayes_rates_spread_as_the_posterior_expects_the_truth_to():
    """Their log-odds spread over the intersections with rows is the posterior means'
    spread plus the mean posterior variance, in the posterior means' order around their
    mean; an intersection without rows keeps its posterior mean, and so does every one
    when the posterior means do not differ."""
    rng = np.random.default_rng(1)
    eta = rng.normal([-2.0, -1.0, 0.0, 0.5, 3.0], [0.2, 0.6, 0.3, 0.9, 1.0], size=(20_000, 5))
    post = 1 / (1 + np.exp(-eta))
    seen = np.array([True, True, True, True, False])
    p = constrained_bayes_rates(post, seen)
    out = np.log(p / (1 - p))
    mean = eta.mean(axis=0)
    np.testing.assert_allclose(out[seen].var(), mean[seen].var() + eta[:, seen].var(axis=0).mean())
    np.testing.assert_allclose(out[seen].mean(), mean[seen].mean())
    assert np.all(np.argsort(out[seen]) == np.argsort(mean[seen]))
    np.testing.assert_allclose(out[~seen], mean[~seen])
    flat_eta = rng.normal(0.0, 0.5, size=(4000, 1)) * np.ones(3)
    flat = constrained_bayes_rates(1 / (1 + np.exp(-flat_eta)), np.ones(3, bool))
    np.testing.assert_allclose(np.log(flat / (1 - flat)), flat_eta.mean(axis=0))


def test_the_observed_scenario_is_the_smoothed_table_unless_the_posterior_rules_it_out():
    """120 intersections of 80 rows each from an additive population: the smoothed
    table's epsilon-DF is far above anything the hierarchical posterior allows, so the
    observed scenario draws from the constrained-Bayes rates, and the calibration says so.
    Eight intersections of 2,000 rows each: the smoothed table is a truth the posterior
    allows, and the scenario is that table."""
    rng = np.random.default_rng(0)
    levels = (5, 4, 3, 2)
    codes = np.indices(levels).reshape(4, -1)
    p, _ = additive_population(rng, levels, main=0.2, interaction=0.0)
    n = np.full(codes.shape[1], 80)
    k = rng.binomial(n, p)
    box = RateIntervals(n, codes, n > 0, 0.9, 0.5)
    post = box.hierarchical_draws(k, 4000, rng)
    out = box.rules_out_observed(k, post)
    assert out is not None and out["metric"] == "epsilon-DF", out
    assert out["value"] > out["upper"]
    np.testing.assert_allclose(
        box.truths(k, post)["observed"], constrained_bayes_rates(post, n > 0)
    )
    levels = (4, 2)
    codes = np.indices(levels).reshape(2, -1)
    n = np.full(8, 2000)
    k = rng.binomial(n, additive_population(rng, levels)[0])
    box = RateIntervals(n, codes, n > 0, 0.9, 0.5)
    post = box.hierarchical_draws(k, 4000, rng)
    assert box.rules_out_observed(k, post) is None
    np.testing.assert_allclose(box.truths(k, post)["observed"], (k + 0.5) / (n + 1.0))


def test_a_calibration_says_when_its_observed_scenario_is_not_the_smoothed_table():
    rng = np.random.default_rng(0)
    levels = (5, 4, 3, 2)
    p, _ = additive_population(rng, levels, main=0.2, interaction=0.0)
    codes = np.indices(levels).reshape(4, -1)
    frame = pd.DataFrame(
        {f"a{d}": np.repeat(codes[d], 80) for d in range(4)}
        | {"y": rng.binomial(1, np.repeat(p, 80))}
    )
    cal = interval_calibration(
        frame, protected=["a0", "a1", "a2", "a3"], outcome="y", n_replicates=10, random_state=0
    )
    note = [x for x in cal.notes if x.startswith("the 'observed' scenario")]
    assert len(note) == 1 and "constrained-Bayes rates" in note[0], cal.notes


def test_unchecked_intersections_are_those_no_count_could_set_apart():
    """An intersection is unchecked exactly when no count of its rows has a two-sided exact
    binomial p-value (the smaller tail doubled) below ``1 - level`` at the pooled rate:
    brute force over every count, sizes 0-12, pooled rates 0.05-0.5 and two levels."""
    from scipy.stats import binom

    for pooled in (0.05, 0.2, 0.3, 0.45, 0.5):
        for level in (0.8, 0.9):
            n = np.arange(0, 13)
            sizes = np.append(n, 100_000)  # one large intersection sets the pooled rate
            k = np.append(np.zeros_like(n), round(pooled * 100_000))
            rate = k.sum() / sizes.sum()
            expected = [False]  # no rows
            for m in n[1:]:
                c = np.arange(m + 1)
                tails = np.minimum(binom.cdf(c, m, rate), binom.sf(c - 1, m, rate))
                expected.append(bool(np.minimum(1.0, 2 * tails).min() >= 1 - level))
            assert unchecked(sizes, k, level)[:-1].tolist() == expected, (pooled, level)


def test_off_hierarchy_draws_mix_the_hierarchy_and_each_small_intersections_own_posterior():
    """Three checked intersections and two unchecked ones (m = 3, so 1 / (m + 2) = 0.2):
    in each unchecked column, independently, a share 0.2 of the draws (within 4 standard
    errors) comes from its own Beta(k + a, n - k + a) posterior (Kolmogorov-Smirnov) and
    the rest are the hierarchy's; checked columns are untouched. Without an unchecked
    intersection the draws are returned as they are and the generator is not used."""
    from scipy.stats import kstest

    from bayesfair._table_intervals import off_hierarchy

    n, k = np.array([500, 400, 300, 2, 1]), np.array([150, 120, 90, 2, 0])
    loose = np.array([False, False, False, True, True])
    post = np.full((20_000, 5), 0.3)
    out = off_hierarchy(post, n, k, loose, 0.5, np.random.default_rng(0))
    assert (out[:, :3] == 0.3).all() and (post == 0.3).all()
    off = out[:, 3:] != 0.3
    se = np.sqrt(0.2 * 0.8 / len(post))
    assert np.abs(off.mean(axis=0) - 0.2).max() < 4 * se, off.mean(axis=0)
    assert abs((off[:, 0] & off[:, 1]).mean() - 0.04) < 4 * np.sqrt(0.04 * 0.96 / len(post))
    for j in (3, 4):
        drawn = out[off[:, j - 3], j]
        assert kstest(drawn, "beta", args=(k[j] + 0.5, n[j] - k[j] + 0.5)).pvalue > 0.01
    rng = np.random.default_rng(1)
    state = rng.bit_generator.state
    assert off_hierarchy(post, n, k, np.zeros(5, bool), 0.5, rng) is post
    assert rng.bit_generator.state == state


def test_hierarchical_draws_are_the_hierarchys_without_an_unchecked_intersection():
    """A table whose every intersection can contradict the pooled rate: the draws are the
    nested-Laplace posterior's, draw for draw; with a 1-row intersection, only its column
    differs, in about 1 / (m + 2) = 1/6 of the draws."""
    from functools import partial

    from bayesfair.models._nested_laplace import grid_posterior

    fit = partial(grid_posterior, group_variance="size")
    n, k = np.array([400, 350, 300, 380, 1]), np.array([120, 100, 95, 110, 1])
    codes = np.array([[0, 1, 2, 3, 4]])
    box = RateIntervals(n[:4], codes[:, :4], n[:4] > 0, 0.9, 0.5)
    got = box.hierarchical_draws(k[:4], 2000, np.random.default_rng(3))
    want = fit(n[:4], k[:4], codes[:, :4]).draw(2000, np.random.default_rng(3))
    np.testing.assert_array_equal(got, want)
    box = RateIntervals(n, codes, n > 0, 0.9, 0.5)
    got = box.hierarchical_draws(k, 6000, np.random.default_rng(3))
    want = fit(n, k, codes).draw(6000, np.random.default_rng(3))
    np.testing.assert_array_equal(got[:, :4], want[:, :4])
    assert abs((got[:, 4] != want[:, 4]).mean() - 1 / 6) < 4 * np.sqrt(5 / 36 / 6000)


def test_unpooled_upper_end_lets_a_one_row_intersection_take_any_rate():
    """Three intersections of 100,000 rows (rates 0.2, 0.3, 0.4: their rates are known)
    and one of 1 row, positive: the unpooled upper end is the 95% quantile of epsilon-DF
    with that row's rate ``r ~ Beta(1.5, 0.5)``, computed here by quadrature over r (the
    set where epsilon(r) <= x is an interval of r); the lower end is that of the three large
    intersections' epsilon, log(0.4 / 0.2), within their posterior spread."""
    from scipy.stats import beta

    from bayesfair.models._nested_laplace import grid_posterior

    n = np.array([100_000, 100_000, 100_000, 1])
    k = np.array([20_000, 30_000, 40_000, 1])
    box = RateIntervals(n, np.array([[0, 1, 2, 3]]), n > 0, 0.9, 0.5)
    rng = np.random.default_rng(0)
    post = grid_posterior(n, k, box.codes).draw(20_000, rng)
    found = box.unpooled_bounds(k, post, 0.0, rng)
    assert (found["intersections"], found["max_rows"]) == (1, 1)
    lower, upper = found["lower"], found["upper"]

    r = np.linspace(1e-7, 1 - 1e-7, 400_001)
    eps = np.maximum(
        np.log(np.maximum(0.4, r) / np.minimum(0.2, r)),
        np.log(np.maximum(0.8, 1 - r) / np.minimum(0.6, 1 - r)),
    )
    mass = np.diff(beta.cdf(np.concatenate([[0], (r[1:] + r[:-1]) / 2, [1]]), 1.5, 0.5))
    order = np.argsort(eps)
    expected = eps[order][np.searchsorted(np.cumsum(mass[order]), 0.95)]
    assert upper == pytest.approx(expected, abs=0.1)
    assert lower == pytest.approx(np.log(0.4 / 0.2), abs=0.02)
    large = RateIntervals(n[:3], np.array([[0, 1, 2]]), n[:3] > 0, 0.9, 0.5)
    assert large.unpooled_bounds(k[:3], post[:, :3], 0.0, rng) is None  # none unchecked


def test_an_audit_with_unchecked_intersections_gets_their_sensitivity_check(monkeypatch):
    """A table with a 1-row intersection: the calibration reports epsilon-DF's interval with
    that intersection unpooled, whose lower end is at most the hierarchical one's (the same
    draws, a maximum over fewer intersections) and whose upper end is above it, in a note and
    in the default's answer; the calibrated intervals are those of the same calibration
    without the check (it draws after everything else). A table without one gets none."""
    from bayesfair.report.answers import _default_row

    n = np.array([400, 350, 300, 380, 1])
    cal = interval_calibration(
        _table(n, np.array([120, 100, 95, 110, 1])), n_replicates=10, random_state=0
    )
    u = cal.unpooled
    assert (u["intersections"], u["max_rows"]) == (1, 1)
    hier = cal.intervals.set_index(["metric", "method"]).loc[("epsilon-DF", "hierarchical")]
    assert u["lower"] <= hier["lower"] and u["upper"] > hier["upper"]
    assert any(note.startswith("1 intersection(s) of at most 1 rows") for note in cal.notes)
    row = _default_row(cal, "epsilon-DF", "q", "s", 0.9)
    assert "too few to check the hierarchy" in row["interval"]
    assert (
        "too few to check the hierarchy"
        not in _default_row(cal, "gamma-SF", "q", "s", 0.9)["interval"]
    )
    with monkeypatch.context() as m:
        m.setattr(RateIntervals, "unpooled_bounds", lambda self, *args: None)
        same = interval_calibration(
            _table(n, np.array([120, 100, 95, 110, 1])), n_replicates=10, random_state=0
        )
    pd.testing.assert_frame_equal(same.intervals, cal.intervals)
    pd.testing.assert_frame_equal(same.coverage, cal.coverage)
    pooled = interval_calibration(
        _table(n[:4], np.array([120, 100, 95, 110])), n_replicates=10, random_state=0
    )
    assert pooled.unpooled is None
    assert not any("pooled rate" in note for note in pooled.notes)
    assert (
        "too few to check the hierarchy"
        not in _default_row(pooled, "epsilon-DF", "q", "s", 0.9)["interval"]
    )


def test_bad_input_is_refused():
    data = _table(np.array([30, 40]), np.array([10, 20]))
    with pytest.raises(ValueError, match="role"):
        interval_calibration(data, role="label")
    with pytest.raises(ValueError, match="n_replicates"):
        interval_calibration(data, n_replicates=5)
    with pytest.raises(ValueError, match="level"):
        interval_calibration(data, level=1.5)
    with pytest.raises(ValueError, match="n_jobs"):
        interval_calibration(data, n_replicates=10, n_jobs=0)


def test_the_audit_reports_the_default_and_its_check():
    """bf.audit computes the default intervals of labels and decisions; the answers give
    them first, with the coverage measured on this audit (marked in-sample on the observed
    and posterior scenarios), and the report has the section."""
    data = bf.datasets.make_gaussian_threshold(n_rows=1500, random_state=0).audit_data()
    res = bf.audit(data, n_resamples=9, random_state=0)  # what it reports, not how well
    assert set(res.intervals) == {
        "outcome",
        "decision",
        "decision | outcome = 0",
        "decision | outcome = 1",
        "amplification",
    }
    # epsilon-DF of rates alone is bias-corrected: not gamma-SF, nor the amplification
    rates, amp = {"epsilon-DF": True, "gamma-SF": False}, {"epsilon-DF": False, "gamma-SF": False}
    assert [cal.bias_corrected for cal in res.intervals.values()] == [rates] * 4 + [amp]
    answers = res.to_frame()
    first = answers.iloc[0]
    assert "calibrated" in first["interval"] and "replicate tables" in first["method"]
    # the coverage on the two scenarios the interval was chosen on, and only they, is in-sample
    assert (
        "(observed, in-sample)" in first["method"] and "(posterior, in-sample)" in first["method"]
    )
    assert first["method"].count("in-sample") == 2
    assert "bias correction" in first["interval"]
    amplify = answers[answers["question"].str.contains("amplify")]
    assert "calibrated" in amplify.iloc[0]["interval"]
    assert "replicate tables" in amplify.iloc[0]["method"]
    titles = [s.title for s in res.report().sections]
    assert "Intervals of epsilon-DF and gamma-SF, and how often they cover" in titles


def test_error_rate_tables_are_the_decisions_among_each_outcome():
    """given_outcome=0: the intervals are those of the false positive rates' table
    (decisions among the rows with y = 0), the same as a table built from those rows."""
    data = bf.datasets.make_gaussian_threshold(n_rows=1500, random_state=0).audit_data()
    cal = interval_calibration(
        data, role="decision", given_outcome=0, n_replicates=10, random_state=0
    )
    frame = data.frame[data.frame[data.outcome] == 0]
    direct = interval_calibration(
        AuditData(frame, data.protected, data.decision, categories=data.categories),
        n_replicates=10,
        random_state=0,
    )
    pd.testing.assert_frame_equal(cal.intervals, direct.intervals)
    assert cal.role == "decision | outcome = 0"
    with pytest.raises(ValueError, match="given_outcome"):
        interval_calibration(data, given_outcome=0, n_replicates=10)
    with pytest.raises(ValueError, match="given_outcome"):
        interval_calibration(data, role="decision", given_outcome=2, n_replicates=10)
    labels_only = AuditData(data.frame, data.protected, data.outcome)
    with pytest.raises(ValueError, match="decisions"):
        interval_calibration(labels_only, role="decision", given_outcome=1, n_replicates=10)


def test_a_table_without_inequality_is_refused():
    with pytest.raises(ValueError, match="same value"):
        interval_calibration(_table(np.array([30, 40]), np.array([0, 0])), n_replicates=10)
    with pytest.raises(ValueError, match="at least two"):
        interval_calibration(_table(np.array([30]), np.array([3])), n_replicates=10)


# --------------------------------------------------------------------------- the study
# 200 replicates each; a coverage of 0.9 is measured to within 0.021 (one standard error).
# Every replicate calibrates its interval (bias correction and credible mass) on n_calibration
# replicates of each of its own posterior and observed scenarios (an audit uses its
# n_replicates): 50 for the real tables, as notebook 08 does, so that the test repeats the
# notebook's own study of their observed rates and checks the numbers it stores; 30 for the
# issue's generator, 20 for the generators it was not tuned on, 10 for the fair population
# (CI's time). With fewer inner replicates the chosen mass is noisier, and the smallest mass
# whose intervals held the truth in 90% of m replicates covers about 0.9 m / (m + 1) of the
# scenario on average (an order statistic's expected coverage, before the grid of masses
# rounds it up): the default covers less.


@pytest.mark.slow
@pytest.mark.parametrize("n_rows", [2500, 10_000])
def test_default_covers_on_the_generator_of_issue_40(n_rows):
    """Race 4 x sex 2 x age 3, additive log-odds plus interactions of spread 0.25,
    Dirichlet(2) shares, a new population per replicate: the default (calibrated) 90%
    interval covers epsilon-DF and gamma-SF in [0.86, 0.95] with a median width at most 0.6
    of the Clopper-Pearson box's. At least 0.86 is asserted; above 0.95 is the open part of
    issue 40, an expected failure with the coverage (with the size term, epsilon-DF's
    default covered 0.955 at 10,000 rows: the hierarchical interval's own coverage at the
    nominal mass, below which the calibration never goes)."""
    t = interval_coverage(
        additive_population, (4, 2, 3), n_rows, n_calibration=30, random_state=n_rows
    )
    t = t.set_index(["method", "metric"])
    over = {}
    for metric in ("epsilon-DF", "gamma-SF"):
        row = t.loc[("calibrated", metric)]
        assert row["coverage"] >= 0.86, (metric, row["coverage"])
        assert row["width_ratio_to_clopper_pearson"] <= 0.6
        if row["coverage"] > 0.95:
            over[metric] = row["coverage"]
    if over:
        pytest.xfail(f"issue 40 open: the default over-covers, {over}")


@pytest.mark.slow
@pytest.mark.parametrize(
    "levels, kw, n_rows, seed",
    [
        ((3, 2, 2, 2), {"base_rate": 0.05}, 4000, 100),
        ((4, 3), {"main": 1.0, "interaction": 0.1, "concentration": 0.7}, 4000, 101),
        ((4, 2, 3), {"main": 0.0, "interaction": 0.6}, 4000, 102),
        ((4, 2, 3), {}, 1000, 103),
        ((5, 4, 3, 2), {}, 10_000, 120),
        ((4, 2, 3), {"main": 0.05, "interaction": 0.0}, 5000, 104),
    ],
    ids=[
        "rare",
        "strong-main-skewed",
        "interactions-only",
        "issue-generator-1000-rows",
        "120-intersections",
        "nearly-fair",
    ],
)
def test_default_covers_on_generators_it_was_not_tuned_on(levels, kw, n_rows, seed):
    """Rare outcomes (base rate 0.05) on four attributes (3 x 2 x 2 x 2), strong main
    effects with skewed shares, interactions only (4,000 rows each), and the issue's
    generator on 1,000 rows (about 40 per intersection, where a bias correction of gamma-SF
    measured on the posterior scenario would spread its ends), and 120 intersections of
    about 83 rows (where the smoothed table's noise alone sets its epsilon-DF far above what
    the posterior allows, so that the observed scenario draws from the constrained-Bayes
    rates; calibrated on the smoothed table, the default would take the largest mass and
    over-cover), and nearly equal rates (attribute effects of spread 0.05, no interactions,
    5,000 rows: equal rates are rejected in about a third of the tables, where the
    posterior's lower end sat above the small truth and only the path's lower end keeps the
    default at its level): the default covers at least
    0.86, and at most 0.95 (an expected failure, with the coverage, where it over-covers: on
    rare outcomes many small intersections have no positive, the observed scenario's
    smoothed rates are rougher than the population's and the calibration widens more than
    needed). Notebook 08 gives both intervals' coverage of the first three and of the 120
    intersections (section 3) and of the issue's generator at 1,000 rows (section 1), with
    its own seeds and calibration size."""

    def population(rng):
        return additive_population(rng, levels, **kw)

    t = interval_coverage(population, levels, n_rows, n_calibration=20, random_state=seed)
    cov = t.set_index(["method", "metric"])["coverage"]
    calibrated = cov["calibrated"]
    assert (calibrated >= 0.86).all(), (levels, kw, cov.to_dict())
    if not (calibrated <= 0.95).all():
        pytest.xfail(f"issue 40 open: the default over-covers, {cov.round(3).to_dict()}")


@pytest.mark.slow
@pytest.mark.parametrize("n_rows", [2500, 10_000])
def test_default_covers_a_fair_population(n_rows):
    """Every rate 0.3: the default covers epsilon = gamma = 0 in [0.86, 0.95]. At any
    credible mass its lower end is 0 when equal rates are not rejected, and the bias
    correction keeps its upper end at or above 0, so the calibrated interval holds the fair
    0 wherever the hierarchical one does, whatever the calibration's size (10 inner
    replicates here); it may hold it more often, where a rejection's lower end is moved down
    to 0."""

    def population(rng):
        _, share = additive_population(rng)
        return np.full(24, 0.3), share

    t = interval_coverage(population, (4, 2, 3), n_rows, n_calibration=10, random_state=7)
    cov = t.set_index(["method", "metric"])["coverage"]
    for metric in ("epsilon-DF", "gamma-SF"):
        assert 0.86 <= cov[("calibrated", metric)] <= 0.95, cov.to_dict()
        assert cov[("calibrated", metric)] >= cov[("hierarchical", metric)]


@pytest.mark.slow
@pytest.mark.parametrize("table", ["compas", "adult"])
def test_default_on_fixed_compas_and_adult_like_populations(table, data_home):
    """COMPAS (race 6 x sex 2) and Adult (race 4 x sex 2 x nationality 2) tables, each as
    a fixed population (its smoothed rates and shares, the same number of rows).

    Asserted: the default interval covers epsilon-DF and gamma-SF in at least 0.86 of the
    replicates, on COMPAS too, whose largest log-ratio sits in an intersection of 2 rows
    that the hierarchy alone would pool (the contamination of :func:`off_hierarchy` lets it
    lie off). The open part of issue 40, reported as an expected failure with the measured
    coverage while it lasts: the default over-covers, epsilon-DF about 0.97 on Adult and
    0.96 on COMPAS, gamma-SF 0.955 on COMPAS (notebook 08, section 4, the same study)."""
    load = getattr(bf.datasets, f"load_{table}")
    data = load(data_home=data_home).audit_data()
    c = data.counts("outcome")
    n, k = c.sum(axis=1), c[:, 1]
    t = interval_coverage(
        table_population(n, k), data.shape_, int(n.sum()), n_calibration=50, random_state=0
    )
    calibrated = t.set_index(["method", "metric"])["coverage"]["calibrated"]
    assert (calibrated >= 0.86).all(), calibrated.to_dict()
    if not (calibrated <= 0.95).all():
        pytest.xfail(f"issue 40 open: the default covers {calibrated.to_dict()} on fixed {table}")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fitted", "shrunk"])
def test_default_on_compas_like_populations_the_hierarchy_fits(kind, data_home):
    """COMPAS-like populations where the 2-row intersections are moderate: a new population
    per replicate drawn from the hierarchical posterior of COMPAS's table (``fitted``), and
    its posterior mean (``shrunk``). Letting unchecked intersections lie off the hierarchy
    must not cost coverage here, where drawing them from their own posteriors in every draw
    did (about 0.75, issue 40's stop 73): the default covers epsilon-DF and gamma-SF in
    [0.86, 0.95] of 200 replicates."""
    from bayesfair.models._nested_laplace import grid_posterior
    from bayesfair.replication.intervals import fitted_population

    data = bf.datasets.load_compas(data_home=data_home).audit_data()
    c = data.counts("outcome")
    n, k = c.sum(axis=1), c[:, 1]
    if kind == "fitted":
        population = fitted_population(n, k, data.shape_)
    else:
        codes = np.indices(data.shape_).reshape(len(data.shape_), -1)
        mean = grid_posterior(n, k, codes).draw(20_000, np.random.default_rng(0)).mean(axis=0)

        def population(rng):
            return mean, n / n.sum()

    t = interval_coverage(population, data.shape_, int(n.sum()), n_calibration=50, random_state=0)
    cov = t.set_index(["method", "metric"])["coverage"]
    for metric in ("epsilon-DF", "gamma-SF"):
        assert 0.86 <= cov[("calibrated", metric)] <= 0.95, cov.to_dict()


@pytest.mark.slow
def test_unpooled_interval_covers_compas_like_populations(data_home):
    """The sensitivity interval (``cal.unpooled``) holds epsilon-DF in at least 0.9 - 3
    standard errors (0.848) of 300 replicate tables of COMPAS's fixed smoothed rates, whose
    largest log-ratio sits in an intersection of 2 rows, and of populations drawn from its
    hierarchical posterior, where that intersection is moderate: a lower end over the
    pooled intersections and an upper end that lets the unchecked ones take any rate their
    rows allow hold the truth either way (where the default does not: issue 40)."""
    from bayesfair._table_intervals import _epsilon
    from bayesfair.replication.intervals import fitted_population

    data = bf.datasets.load_compas(data_home=data_home).audit_data()
    c = data.counts("outcome")
    n0, k0 = c.sum(axis=1), c[:, 1]
    codes = np.indices(data.shape_).reshape(2, -1)
    for pop in (table_population(n0, k0), fitted_population(n0, k0, data.shape_)):
        rng = np.random.default_rng(1)
        held = []
        while len(held) < 300:
            p, share = pop(rng)
            n = rng.multinomial(int(n0.sum()), share)
            k = rng.binomial(n, p)
            box = RateIntervals(n, codes, n > 0, 0.9, 0.5)
            post = box.hierarchical_draws(k, 2000, rng)
            bounds = box.unpooled_bounds(k, post, box.pvalue(k, rng, decide=True), rng)
            if bounds is not None:
                truth = _epsilon(p[n > 0])
                held.append(bounds["lower"] <= truth + 1e-12 and truth <= bounds["upper"] + 1e-12)
        assert np.mean(held) >= 0.848, np.mean(held)


def _uneven_frame(seed: int = 0) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """A finite population of 60,000 rows: 4 x 4 x 2 intersections, additive log-odds
    without interactions, Dirichlet(0.5) shares, the rates those of its own rows (a small
    intersection's carries its own noise); its rows, sizes and positives."""
    rng = np.random.default_rng(seed)
    p, share = additive_population(rng, (4, 4, 2), concentration=0.5, interaction=0.0)
    n = rng.multinomial(60_000, share)
    k = rng.binomial(n, p)
    codes = np.indices((4, 4, 2)).reshape(3, -1)
    frame = pd.DataFrame({f"a{d}": np.repeat(codes[d], n) for d in range(3)})
    frame["y"] = np.concatenate(
        [np.r_[np.ones(kk), np.zeros(nn - kk)] for nn, kk in zip(n, k, strict=True)]
    )
    return frame.astype(int), n, k


def test_a_table_the_posterior_rules_out_is_checked_as_a_fifth_scenario(exchangeable):
    """Where the hierarchical posterior rules the smoothed table out (here the exchangeable
    one, on a finite population whose small intersections carry their own noise), the
    calibration keeps it as the ``smoothed`` scenario, its truth the smoothed rates'
    metrics, and says in ``uneven`` whether the data rule it out too; the four other
    scenarios are those of a calibration without it (their seeds do not move). A table the
    posterior allows has four scenarios and no ``uneven``."""
    frame, n, k = _uneven_frame()
    protected = ["a0", "a1", "a2"]
    cal = interval_calibration(
        frame, protected=protected, outcome="y", n_replicates=10, random_state=0
    )
    c = cal.coverage.set_index(["scenario", "metric", "method"])
    assert list(cal.coverage["scenario"].unique()) == [
        "posterior",
        "observed",
        "shrunk",
        "fair",
        "smoothed",
    ]
    box = RateIntervals(n, np.indices((4, 4, 2)).reshape(3, -1), n > 0, 0.9, 0.5)
    truth = box.truth((k + 0.5) / (n + 1.0))
    np.testing.assert_allclose(c.xs(("smoothed", "calibrated"), level=(0, 2))["truth"], truth)
    assert 0.001 <= cal.uneven["plausibility"] <= 1
    # the default misses the smoothed rates' epsilon-DF here, and says so
    assert cal.uneven["short"]["epsilon-DF"] < 0.5
    assert any(x.startswith("the 'smoothed' scenario") for x in cal.notes), cal.notes
    rng = np.random.default_rng(1)
    n8 = np.full(8, 2000)
    small = _table(n8, rng.binomial(n8, additive_population(rng, (8,))[0]))
    plain = interval_calibration(small, n_replicates=10, random_state=0)
    assert set(plain.coverage["scenario"]) == {"posterior", "observed", "shrunk", "fair"}
    assert plain.uneven is None


def test_the_uneven_check_stays_silent_where_the_data_rule_the_smoothed_table_out():
    """The parametric bootstrap of the metric ruled out: a value below every table drawn
    from the smoothed rates gives a plausibility of 0, and no shortfall is reported however
    short the default fell; a value above them all gives 1, and a coverage below the level
    by more than two standard errors is reported, one within them is not."""
    from bayesfair.calibration import _uneven_check

    n = np.array([50, 60, 70, 80])
    k = np.array([10, 20, 30, 40])
    box = RateIntervals(n, np.indices((4,)).reshape(1, -1), n > 0, 0.9, 0.5)
    coverage = pd.DataFrame(
        {
            "scenario": "smoothed",
            "method": "calibrated",
            "metric": list(METRICS),
            "coverage": [0.1, 0.86],
            "n_replicates": 200,
        }
    )
    rng = np.random.default_rng(0)
    low = _uneven_check(box, k, {"metric": "epsilon-DF", "value": 0.0}, coverage, 0.9, rng)
    assert low == {"plausibility": 0.0, "short": {}}
    high = _uneven_check(box, k, {"metric": "epsilon-DF", "value": 50.0}, coverage, 0.9, rng)
    assert high == {"plausibility": 1.0, "short": {"epsilon-DF": 0.1}}


def test_the_answers_carry_the_uneven_check(exchangeable):
    """The default's answer says what the default would cover were the rates as uneven as
    the table's, and that the Clopper-Pearson interval holds either way; the audit's
    summary points to it (the exchangeable hierarchy, which rules the table out)."""
    from bayesfair.report.answers import _default_row

    frame, _, _ = _uneven_frame()
    cal = interval_calibration(
        frame, protected=["a0", "a1", "a2"], outcome="y", n_replicates=10, random_state=0
    )
    row = _default_row(cal, "epsilon-DF", "q", "epsilon-DF of outcome", 0.9)
    covered = cal.uneven["short"]["epsilon-DF"]
    assert f"would cover only {covered:.2f}" in row["interval"]
    assert "Clopper-Pearson interval holds either way" in row["interval"]
    assert "(smoothed)" in row["method"]
    from types import SimpleNamespace

    from bayesfair.full_audit import FullAuditResult

    edf = pd.DataFrame({"method": ["EDF"], "metric": ["epsilon-DF"], "role": ["outcome"]})
    edf["value"] = 1.0
    result = SimpleNamespace(fairness_table=lambda: edf, intervals={"outcome": cal})
    headline = FullAuditResult._fairness_headline(result)
    assert "short were the rates as uneven as the table's, see the answers" in headline


@pytest.mark.slow
def test_default_covers_a_finite_population_whose_small_groups_carry_their_own_noise():
    """A finite population of additive log-odds (:func:`_uneven_frame`: 32 intersections of
    60,000 rows, Dirichlet(0.5) shares), its rates those of its own rows, audited at its own
    size: the default covers its epsilon-DF and gamma-SF in [0.86, 0.95] of 200 replicates
    (each recalibrated on 20 of its own). The size term lets the small intersections depart
    as far as their rows' noise; without it the hierarchy shrank them too far and the
    default covered epsilon-DF in under half of them (notebook 08, section 7)."""
    _, n, k = _uneven_frame()
    t = interval_coverage(
        table_population(n, k), (4, 4, 2), int(n.sum()), n_calibration=20, random_state=1
    )
    cov = t.set_index(["method", "metric"])["coverage"]
    for metric in METRICS:
        assert 0.86 <= cov[("calibrated", metric)] <= 0.95, cov.to_dict()


@pytest.mark.slow
def test_the_check_of_an_uneven_table_says_what_the_default_would_cover(exchangeable):
    """Where the hierarchy rules a table's smoothed rates out and the data do not (the
    exchangeable hierarchy on :func:`_uneven_frame`), the check measures the default on
    those rates, 100 replicates: it covers the smoothed table's epsilon-DF in under half,
    and says so."""
    frame, _, _ = _uneven_frame()
    cal = interval_calibration(
        frame, protected=["a0", "a1", "a2"], outcome="y", n_replicates=100, random_state=0
    )
    assert cal.uneven is not None and cal.uneven["plausibility"] >= 0.001
    assert cal.uneven["short"]["epsilon-DF"] < 0.5
