"""Besag and Clifford's sequential permutation p-value (the scans' default): valid under
the null at every level, equal to the full test where it does not stop, and independent of
the number of workers."""

from __future__ import annotations

import numpy as np
import pytest

from bayesfair._parallel import sequential_resamples


def _uniform(size: int, rng: np.random.Generator) -> np.ndarray:
    return rng.random(size)


def test_valid_under_the_null_at_every_level():
    """Observed and resampled statistics from one continuous law: P(p <= u) <= u."""
    rng = np.random.default_rng(0)
    reps = 3000
    p = np.empty(reps)
    for r in range(reps):
        _, p[r], _ = sequential_resamples(_uniform, 199, int(rng.integers(2**31)), rng.random())
    for u in (0.01, 0.05, 0.1, 0.2, 0.5):
        rate = np.mean(p <= u)
        # binomial 99.9% band around u: the rate may be below u, never clearly above
        assert rate <= u + 3.3 * np.sqrt(u * (1 - u) / reps), (u, rate)
    assert np.mean(p <= 0.05) > 0.03  # and not useless: close to its level


def test_equals_the_full_test_where_it_does_not_stop():
    null, p, skipped = sequential_resamples(_uniform, 999, 1, observed=0.999)
    assert len(null) == 999 and skipped == 0
    assert p == pytest.approx((1 + np.sum(null >= 0.999)) / 1000)


def test_stops_early_on_a_clearly_null_statistic():
    null, p, _ = sequential_resamples(_uniform, 9999, 2, observed=0.3)
    assert len(null) < 200 and np.sum(null >= 0.3) == 20 and p == 20 / len(null)


def test_nan_draws_take_no_part():
    def some_nan(size: int, rng: np.random.Generator) -> np.ndarray:
        x = rng.random(size)
        x[::3] = np.nan
        return x

    null, _, skipped = sequential_resamples(some_nan, 300, 3, observed=0.99)
    assert not np.isnan(null).any() and skipped + len(null) == 300 and skipped >= 100


def test_workers_do_not_change_the_result():
    a = sequential_resamples(_uniform, 999, 4, observed=0.8, n_jobs=1)
    b = sequential_resamples(_uniform, 999, 4, observed=0.8, n_jobs=2)
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1:] == b[1:]
