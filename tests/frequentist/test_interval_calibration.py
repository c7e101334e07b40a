"""interval_calibration: coverage of the epsilon-DF and gamma-SF intervals on replicates of
the audited table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayesfair import AuditData
from bayesfair.frequentist import interval_calibration
from bayesfair.frequentist.calibration import shrunk_rates


def _table(n: np.ndarray, k: np.ndarray) -> AuditData:
    rows = []
    for g, (size, pos) in enumerate(zip(n, k, strict=True)):
        rows += [(f"g{g}", 1)] * pos + [(f"g{g}", 0)] * (size - pos)
    return AuditData(pd.DataFrame(rows, columns=["s", "y"]), "s", "y")


def test_scenarios_and_the_valid_box():
    """The fair scenario's truth is 0; the Clopper-Pearson box is valid, so it covers at
    least at its level in both scenarios (999 replicates: 3 standard errors below 0.9 is
    0.872); a posterior of epsilon, positive in every draw, never covers a fair 0."""
    rng = np.random.default_rng(0)
    n = rng.integers(20, 400, 12)
    k = rng.binomial(n, rng.uniform(0.2, 0.5, 12))
    cal = interval_calibration(_table(n, k), random_state=0)
    c = cal.coverage.set_index(["scenario", "metric", "method"])
    np.testing.assert_allclose(c.xs("fair")["truth"], 0.0, atol=1e-12)
    assert (c.xs("Clopper-Pearson", level="method")["coverage"] >= 0.872).all()
    assert c.loc[("fair", "epsilon-DF", "Dirichlet-multinomial"), "coverage"] == 0.0
    summary = cal.summary()
    assert list(summary["method"]) == ["Dirichlet-multinomial"] * 2 + ["Clopper-Pearson"] * 2
    assert {"coverage_fair", "coverage_fitted", "lower", "upper", "level"} <= set(summary)
    assert (summary["lower"] <= summary["upper"]).all()


def test_coverage_is_near_the_level_where_the_posterior_is_nearly_normal():
    """Three large groups with well separated rates and gamma's terms: the posteriors are
    nearly normal and unbiased, so their equal-tailed 90% intervals cover about 90% (999
    replicates: within 4 standard errors, 0.036). (With two tied terms, rates 0.2, 0.35,
    0.5, gamma's covered 0.84: a maximum of noisy terms is biased upwards.)"""
    n = np.array([40_000, 40_000, 40_000])
    k = (n * np.array([0.2, 0.35, 0.6])).astype(int)  # gamma's terms 0.061, 0.011, 0.072
    cal = interval_calibration(_table(n, k), random_state=1)
    c = cal.coverage.set_index(["scenario", "metric", "method"])["coverage"]
    assert abs(c[("fitted", "epsilon-DF", "Dirichlet-multinomial")] - 0.9) <= 0.036
    assert abs(c[("fitted", "gamma-SF", "Dirichlet-multinomial")] - 0.9) <= 0.036


def test_shrunk_rates_remove_only_the_noise():
    """Equal true rates: the shrunk rates are (nearly) the overall rate; very different
    rates in large groups: kept."""
    n = np.full(8, 200)
    k = np.random.default_rng(3).binomial(n, 0.3)
    assert np.ptp(shrunk_rates(n, k)) < 0.5 * np.ptp((k + 0.5) / (n + 1))
    big = np.full(3, 100_000)
    kept = shrunk_rates(big, (big * np.array([0.1, 0.3, 0.6])).astype(int))
    np.testing.assert_allclose(kept, [0.1, 0.3, 0.6], atol=2e-3)


def test_bad_input_is_refused():
    data = _table(np.array([30, 40]), np.array([10, 20]))
    with pytest.raises(ValueError, match="role"):
        interval_calibration(data, role="label")
    with pytest.raises(ValueError, match="n_resamples"):
        interval_calibration(data, n_resamples=5)
    with pytest.raises(ValueError, match="level"):
        interval_calibration(data, level=1.5)
