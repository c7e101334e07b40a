"""HierarchicalCounts: the nested-Laplace posterior against brute force, batched fits, the
model contract."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logit

import bayesfair as bf
from bayesfair import _newton_kernel as kernel
from bayesfair.models._nested_laplace import (
    INTERCEPT_SD,
    SCALES,
    SIZE_PRIOR_SCALE,
    _LowRankPrior,
    grid_posterior,
)
from bayesfair.replication.intervals import additive_population

pytestmark = pytest.mark.bayesian  # make test-next runs these on PyMC 6 / ArviZ 1 too


def test_a_points_mode_does_not_depend_on_the_point_before_it():
    """Every grid point after the first starts Newton's method from the previous point's
    mode: the modes, objectives and Laplace weights are those of each point fitted alone
    from 0, on a grid ordered so that neighbours differ by the largest jumps (a
    coarse grid of very different scales, shuffled)."""
    rng = np.random.default_rng(11)
    codes = np.indices((4, 2, 3)).reshape(3, -1)
    n = rng.integers(0, 120, 24).astype(float)
    k = rng.binomial(n.astype(int), rng.uniform(0.05, 0.6, (3, 24))).astype(float)
    scales = rng.permutation(np.geomspace(0.02, 4.0, 8))
    prior = _LowRankPrior(codes, scales, scales[::-1], rng.uniform(0.05, 2, 8))
    m = np.log((k.sum(1) + 0.5) / (n.sum() - k.sum(1) + 0.5))
    t = prior.variances(n, m)
    f, a, obj = kernel.modes(n, k, m, prior.z, prior.d, t, 100, 1e-10)
    for s in range(len(scales)):
        alone = kernel.modes(n, k, m, prior.z, prior.d[s : s + 1], t[:, s : s + 1], 100, 1e-10)
        np.testing.assert_allclose(f[:, s], alone[0][:, 0], atol=1e-9)
        np.testing.assert_allclose(a[:, s], alone[1][:, 0], atol=1e-9)
        np.testing.assert_allclose(obj[:, s], alone[2][:, 0], rtol=1e-12)


@pytest.mark.parametrize("size_term", [False, True], ids=["exchangeable", "size term"])
def test_the_flood_fill_keeps_every_weight_the_full_grid_has(size_term):
    """:func:`grid_laplace` fits only the grid points within ``DROP`` of the largest log
    weight and their neighbours: on tables of every kind (24 intersections of 20 to 2,000
    rows, 120 of about 80, empty intersections, an all-positive and an all-negative
    table, a fair one) its weights are those of every point fitted (:func:`modes` and
    :func:`half_logdets`), and no point it leaves out is within ``DROP`` of the largest."""
    from bayesfair.models._nested_laplace import DROP, SCALES, SIZE_SCALES, _grid_prior

    rng = np.random.default_rng(3)
    cases = []
    for levels, rows in (((4, 2, 3), 500), ((4, 2, 3), 48_000), ((5, 4, 3, 2), 10_000)):
        p, share = additive_population(rng, levels, concentration=0.5)
        n = rng.multinomial(rows, share).astype(float)
        k = rng.binomial(n.astype(int), p, size=(3, len(n))).astype(float)
        k = np.vstack([k, n, 0 * n, np.round(0.3 * n)])  # all positive, none, fair
        cases.append((levels, n, k))
    for levels, n, k in cases:
        codes = np.indices(levels).reshape(len(levels), -1)
        key = (codes.dtype.str, codes.shape, codes.tobytes(), SCALES.tobytes(), 1.0, size_term)
        prior, log_prior = _grid_prior(*key)
        m = np.log((k.sum(1) + 0.5) / (n.sum() - k.sum(1) + 0.5))
        t = prior.variances(n, m)
        f, _, obj = kernel.modes(n, k, m, prior.z, prior.d, t, 100, 1e-8)
        full = obj - kernel.half_logdets(n, m, f, prior.z, prior.d, t) + log_prior
        shape = (len(SCALES), len(SCALES), len(SIZE_SCALES) if size_term else 1)
        *_, lw = kernel.grid_laplace(
            n, k, m, prior.z, prior.d, t, log_prior, shape, DROP, 100, 1e-8
        )
        kept = np.isfinite(lw)
        assert kept.sum(axis=1).min() >= (27 if size_term else 9)  # the coarse grid at least
        assert (full < full.max(axis=1, keepdims=True) - DROP)[~kept].all()
        np.testing.assert_allclose(lw[kept], full[kept], rtol=0, atol=1e-8)
        w_full = np.exp(full - full.max(1, keepdims=True))
        w_kept = np.exp(lw - lw.max(1, keepdims=True))
        np.testing.assert_allclose(
            w_kept / w_kept.sum(1, keepdims=True), w_full / w_full.sum(1, keepdims=True), atol=1e-12
        )
    full_grid = kernel.grid_laplace(
        n, k, m, prior.z, prior.d, t, log_prior, shape, np.inf, 100, 1e-8
    )
    assert np.isfinite(full_grid[2]).all()  # drop = inf: every point


@pytest.mark.parametrize("group_variance", ["exchangeable", "size"])
def test_nested_laplace_matches_importance_sampling_on_small_counts(group_variance):
    """Four intersections of 5-30 rows (where a Laplace approximation is least accurate):
    the posterior means of P(y=1|s) within 0.02 and the posterior sds within 10% of the
    exact ones, computed by importance sampling the same model from its prior (400,000
    draws, effective sample size about 15,000); with the size term, the deviations' sd is
    sqrt(tau^2 + psi^2 / (n p (1 - p))), psi half-normal of scale SIZE_PRIOR_SCALE."""
    n, k = np.array([5, 12, 30, 8]), np.array([1, 6, 9, 5])
    codes = np.indices((2, 2)).reshape(2, -1)
    rng = np.random.default_rng(0)
    approx = grid_posterior(n, k, codes, group_variance=group_variance).draw(100_000, rng)
    size = 400_000
    m = np.log((k.sum() + 0.5) / (n.sum() - k.sum() + 0.5))
    sa, tau = np.abs(rng.normal(size=size)), np.abs(rng.normal(size=size))
    eta = m + INTERCEPT_SD * rng.normal(size=(size, 1))
    for c in codes:
        eta = eta + (sa[:, None] * rng.normal(size=(size, 2)))[:, c]
    sd = tau[:, None]
    if group_variance == "size":
        psi = np.abs(rng.normal(0, SIZE_PRIOR_SCALE, size=size))
        sd = np.sqrt(tau[:, None] ** 2 + psi[:, None] ** 2 / (n * expit(m) * (1 - expit(m))))
    p = expit(eta + sd * rng.normal(size=(size, 4)))
    lw = (k * np.log(p) + (n - k) * np.log1p(-p)).sum(axis=1)
    w = np.exp(lw - lw.max())
    w /= w.sum()
    assert 1 / np.sum(w**2) > 5000
    exact_mean = w @ p
    exact_sd = np.sqrt(w @ (p - exact_mean) ** 2)
    np.testing.assert_allclose(approx.mean(axis=0), exact_mean, atol=0.02)
    np.testing.assert_allclose(approx.std(axis=0), exact_sd, rtol=0.1)


def _factored_covariance(lam, inv_t, z, tau2):
    """The covariance of the draws :func:`kernel.effect_factors` makes, ``A L^{-T} L^{-1}
    A' + diag(t / lam)`` with ``A = diag(1 / lam) Z``: (..., G, G)."""
    a = z / lam[..., None]
    cov = a @ inv_t @ np.swapaxes(inv_t, -1, -2) @ np.swapaxes(a, -1, -2)
    return cov + (tau2 / lam)[..., None] * np.eye(z.shape[0])


@pytest.mark.parametrize("size_term", [False, True], ids=["exchangeable", "size term"])
def test_newton_steps_in_the_effects_equal_the_dense_step(size_term):
    """The prior's covariance is sigma_mu^2 + sigma_a^2 K + T (K: the attributes two
    intersections agree on; T = tau^2 I, or diag(tau^2 + psi^2 / (n p (1 - p))) with a size
    term), and the compiled Newton step in the effects gives the dense step of Rasmussen &
    Williams' Algorithm 3.1, f = C a with a = b - W^(1/2) B^(-1) W^(1/2) C b, B = I +
    W^(1/2) C W^(1/2), and the Gaussian approximation its log-determinant and covariance
    (C^-1 + W)^-1 (that of the draws the effects' factors make), on unbalanced designs and
    with empty intersections."""
    rng = np.random.default_rng(3)
    for levels in ((4, 2, 3), (3, 3), (5,)):
        codes = np.indices(levels).reshape(len(levels), -1)
        g = codes.shape[1]
        sa, tau = rng.uniform(0.02, 4, 7), rng.uniform(0.02, 4, 7)
        psi = rng.uniform(0.05, 2, 7) if size_term else None
        prior = _LowRankPrior(codes, sa, tau, psi)
        n = rng.uniform(0, 1200, g) * (rng.random(g) > 0.2)  # some intersections empty
        m = rng.normal(0, 1, 2)
        variances = prior.variances(n, m)  # (2, 7, g)
        p_pooled = expit(m)[:, None, None]
        own = np.where(n > 0, 1 / np.maximum(n, 1e-300) / p_pooled / (1 - p_pooled), 0)
        expected_t = tau[:, None] ** 2 + (0 if psi is None else psi[:, None] ** 2 * own)
        np.testing.assert_allclose(variances, np.broadcast_to(expected_t, (2, 7, g)), rtol=1e-12)
        agree = sum((c[:, None] == c[None, :]).astype(float) for c in codes)
        cov = INTERCEPT_SD**2 + sa[None, :, None, None] ** 2 * agree
        cov = cov + variances[..., None] * np.eye(g)  # (2, 7, g, g): one prior per table
        np.testing.assert_allclose(prior.dense(n, m[1]), cov[1], rtol=1e-12)
        f = rng.normal(0, 1.5, (2, 7, g))
        p = expit(m[:, None, None] + f)
        w = n * p * (1 - p)
        b = rng.normal(0, 50, (2, 7, g))
        sw = np.sqrt(w)
        big_b = np.eye(g) + sw[..., :, None] * cov * sw[..., None, :]
        v = np.linalg.solve(big_b, (sw * (cov @ b[..., None])[..., 0])[..., None])[..., 0]
        a = b - sw * v
        for t in range(2):
            for s in range(7):
                f_new, a_new = kernel.newton_point(
                    prior.z, prior.d[s], variances[t, s], w[t, s], b[t, s]
                )
                np.testing.assert_allclose(a_new, a[t, s], rtol=1e-7, atol=1e-9)
                np.testing.assert_allclose(f_new, cov[t, s] @ a[t, s], rtol=1e-7, atol=1e-9)
        # the Laplace normalisation and covariance: log|B| / 2 and (C^-1 + W)^-1
        half_logdet = kernel.half_logdets(n, m, f, prior.z, prior.d, variances)
        lam, inv_t = kernel.effect_factors(n, m, f, prior.z, prior.d, variances, np.arange(7))
        post_cov = _factored_covariance(lam, inv_t, prior.z, variances)
        np.testing.assert_allclose(half_logdet, 0.5 * np.linalg.slogdet(big_b)[1], rtol=1e-10)
        np.testing.assert_allclose(
            post_cov,
            np.linalg.inv(np.linalg.inv(cov) + w[..., None] * np.eye(g)),
            rtol=1e-7,
            atol=1e-10,
        )


@pytest.mark.parametrize("size_term", [False, True], ids=["exchangeable", "size term"])
def test_the_mode_maximises_the_laplace_objective(size_term):
    """At the compiled Newton's mode of every grid point, the gradient of ``log p(k |
    m + f) - f' C^{-1} f / 2`` is 0: ``k - n p = C^{-1} f``."""
    rng = np.random.default_rng(5)
    codes = np.indices((4, 2, 3)).reshape(3, -1)
    n = rng.integers(0, 80, 24).astype(float)
    k = rng.binomial(n.astype(int), rng.uniform(0.05, 0.6, 24)).astype(float)[None]
    sa, tau = rng.uniform(0.02, 4, 5), rng.uniform(0.02, 4, 5)
    prior = _LowRankPrior(codes, sa, tau, rng.uniform(0.05, 2, 5) if size_term else None)
    m = np.array([-0.7])
    f, a, _ = kernel.modes(n, k, m, prior.z, prior.d, prior.variances(n, m), 100, 1e-10)
    grad = k[:, None] - n * expit(m[:, None, None] + f)
    np.testing.assert_allclose(
        grad, np.linalg.solve(prior.dense(n, m[0]), f[0][..., None])[..., 0][None], atol=1e-6
    )
    np.testing.assert_allclose(a, grad, atol=1e-6)


@pytest.mark.parametrize("group_variance", ["exchangeable", "size"])
def test_draws_are_the_mixture_of_the_grid_points_gaussians(group_variance, monkeypatch):
    """A draw forms what it needs only at the grid points it picked (fewer than the grid's
    points here). The effects' factor and the deviations' scale it uses give exactly the
    point's posterior covariance of ``eta``, ``(C^-1 + W)^-1`` formed densely at the mode;
    the draws, on two tables fitted at once and
    with every draw sent to one grid point, have that point's mode as mean and that
    covariance (60,000 draws: within 0.03 and 6% at most)."""
    rng = np.random.default_rng(4)
    codes = np.indices((4, 3, 2)).reshape(3, -1)
    n = rng.integers(0, 60, 24)
    post = grid_posterior(
        n, rng.binomial(n, 0.3, size=(2, 24)), codes, group_variance=group_variance
    )
    grid = post.weight.shape[-1]
    n_, m, f, z, d, tau2 = post.laplace
    lam, inv_t = kernel.effect_factors(n_, m, f, z, d, tau2, np.arange(grid))
    cov = _factored_covariance(lam, inv_t, z, tau2)
    prior = (z * d[:, None, :]) @ z.T + tau2[..., None] * np.eye(24)  # (T, grid, G, G)
    p = expit(m[:, None, None] + f)
    dense = np.linalg.inv(np.linalg.inv(prior) + (n * p * (1 - p))[..., None] * np.eye(24))
    np.testing.assert_allclose(cov, dense, rtol=1e-7, atol=1e-10)
    formed = []
    factors = kernel.effect_factors
    monkeypatch.setattr(
        kernel, "effect_factors", lambda *a: formed.append(len(a[-1])) or factors(*a)
    )
    assert post.draw(300, np.random.default_rng(9)).shape == (2, 300, 24)
    assert formed and formed[0] < grid
    point = int(np.argmax(post.weight[1]))
    one = dataclasses.replace(post, weight=np.eye(grid)[[point, point]])
    eta = logit(one.draw(60_000, np.random.default_rng(1)))
    for t in range(2):
        np.testing.assert_allclose(eta[t].mean(axis=0), one.mode[t, point], atol=0.03)
        np.testing.assert_allclose(np.cov(eta[t].T), cov[t, point], rtol=0.06, atol=0.03)


def test_batched_fits_equal_one_at_a_time():
    """Replicate tables fitted at once (leading dimension) give each table's own fit."""
    rng = np.random.default_rng(1)
    codes = np.indices((3, 2)).reshape(2, -1)
    n = rng.integers(5, 200, 6)
    kk = rng.binomial(n, 0.3, size=(3, 6))
    together = grid_posterior(n, kk, codes)
    for r in range(3):
        alone = grid_posterior(n, kk[r], codes)
        np.testing.assert_allclose(together.weight[r], alone.weight, atol=1e-10)
        np.testing.assert_allclose(together.mode[r], alone.mode, atol=1e-8)
    assert together.draw(7, rng).shape == (3, 7, 6)


def test_shrinks_a_small_intersection_and_predicts_an_empty_one():
    """A 4-row intersection at 4/4 is pulled towards what its attribute values predict;
    an empty one gets that prediction, with a wide posterior."""
    codes = np.indices((2, 2)).reshape(2, -1)
    n = np.array([400, 400, 4, 0])
    k = np.array([80, 120, 4, 0])
    p = grid_posterior(n, k, codes).draw(20_000, np.random.default_rng(2))
    assert p[:, 2].mean() < 0.8
    assert 0.05 < p[:, 3].mean() < 0.7
    assert p[:, 3].std() > 2 * p[:, 0].std()


def test_a_size_term_lets_the_small_intersections_of_a_finite_population_depart():
    """A finite population (4 x 4 x 2, additive log-odds, Dirichlet(0.5) shares, 60,000
    rows), its rates those of its own rows (smoothed), and ten tables drawn from them: the
    exchangeable hierarchy learns one spread from the large intersections and shrinks the
    small ones onto their attribute values, so its 90% intervals hold the rates of the
    intersections of at most 200 rows in 0.375 of the cases; the size term lets each depart
    by its own rows' noise, and holds them in 0.725 (asserted: at least 0.2 more), with
    posterior weight on psi > 0. A bad ``group_variance`` is refused with its name."""
    from bayesfair.replication.intervals import additive_population

    rng = np.random.default_rng(0)
    p, share = additive_population(rng, (4, 4, 2), concentration=0.5, interaction=0.0)
    n = rng.multinomial(60_000, share)
    q = (rng.binomial(n, p) + 0.5) / (n + 1.0)
    codes = np.indices((4, 4, 2)).reshape(3, -1)
    small = (n > 0) & (n <= 200)
    tables = rng.binomial(n, q, size=(10, 32))
    held = {}
    for group_variance in ("exchangeable", "size"):
        post = grid_posterior(n, tables, codes, group_variance=group_variance)
        lo, hi = np.quantile(post.draw(2000, np.random.default_rng(1)), [0.05, 0.95], axis=1)
        held[group_variance] = ((lo <= q) & (q <= hi))[:, small].mean()
    assert small.sum() >= 5
    assert held["size"] >= held["exchangeable"] + 0.2, held
    assert (post.weight @ post.psi).mean() > 0.3
    frame = pd.DataFrame({f"a{d}": np.repeat(codes[d], n) for d in range(3)})
    rows = zip(n, tables[0], strict=True)
    frame["y"] = np.concatenate([np.r_[np.ones(b), np.zeros(a - b)] for a, b in rows])
    data = bf.AuditData(frame, ["a0", "a1", "a2"], "y")
    model = bf.models.HierarchicalCounts(group_variance="size", draws=200, random_state=0)
    np.testing.assert_allclose(model.fit(data).grid_.weight, post.weight[0], rtol=1e-6)
    with pytest.raises(ValueError, match="group_variance"):
        bf.models.HierarchicalCounts(group_variance="sizes").fit(data)


def test_is_a_fairness_model():
    """Fitted like every model: p_draws_ (chain, draw, intersection), an InferenceData
    with the log-likelihood, the method named, and posterior_fairness runs on it."""
    data = bf.datasets.make_gaussian_threshold(n_rows=1500, random_state=0).audit_data()
    m = bf.HierarchicalCounts(draws=200, chains=2, random_state=0).fit(data)
    assert m.p_draws_.shape == (2, 200, 16)
    assert m.method == "laplace"
    assert np.isclose(m.grid_.weight.sum(), 1.0)
    again = bf.HierarchicalCounts(draws=200, chains=2, random_state=0).fit(data)
    np.testing.assert_array_equal(m.p_draws_, again.p_draws_)
    s = bf.posterior_fairness(m, random_state=0).summary().set_index("metric")
    assert s.loc["epsilon", "lower"] < s.loc["epsilon", "upper"]
    with pytest.raises(ValueError, match="prior_scale"):
        bf.HierarchicalCounts(prior_scale=-1).fit(data)


def test_the_grid_prior_is_shared_between_fits_of_the_same_intersections():
    """Fits of tables of the same intersections share one prior (a calibration refits
    hundreds of them); its scales and weights are read-only, and another prior scale or
    grid gets its own."""
    codes = np.indices((3, 2)).reshape(2, -1)
    n = np.array([40, 50, 60, 70, 80, 90])
    one = grid_posterior(n, np.array([4, 10, 20, 30, 40, 50]), codes)
    two = grid_posterior(n, np.array([40, 30, 20, 10, 5, 1]), codes.copy())
    assert one.laplace[3] is two.laplace[3] and one.sigma_a is two.sigma_a
    with pytest.raises(ValueError, match="read-only"):
        one.tau[0] = 1.0
    wider = grid_posterior(n, np.array([4, 10, 20, 30, 40, 50]), codes, prior_scale=2.0)
    assert wider.laplace[3] is not one.laplace[3]
    assert not np.allclose(wider.weight, one.weight)
    np.testing.assert_array_equal(wider.sigma_a, one.sigma_a)
    coarse = grid_posterior(n, np.array([4, 10, 20, 30, 40, 50]), codes, scales=SCALES[::2])
    assert coarse.weight.shape == (len(SCALES[::2]) ** 2,)
    np.testing.assert_array_equal(np.unique(coarse.tau), SCALES[::2])
