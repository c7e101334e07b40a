"""The check of the default intervals of epsilon-DF and gamma-SF on COMPAS
(``bayesfair.interval_calibration`` for labels and decisions, and for the amplification: 200
replicate tables in each of four scenarios, the hierarchical model refitted on each), which
``bayesfair.audit`` runs on every audit (at most 100 replicates per scenario, five tables).

Issue 40's budget: at most 30 s added to an audit of COMPAS size on the project's machine
(2 cores). The baseline is the empirical audit (``bayesfair.run_audit``: the fairness table
with its Clopper-Pearson intervals), in the same process.

The refit every replicate table needs is the nested-Laplace posterior of the counts (with
the size term, as the audit fits it); its Newton steps and Laplace normalisation work in the
intercept and attribute effects (an ``r x r`` system per grid point, ``r = 1 +
sum(levels)``), compiled, at the grid points that carry weight (a flood fill from a coarse
grid), and its draws are made in the effects, then the deviations given them, with no ``G x
G`` factor. The last rows time a fit and 400 draws against the same in
batched NumPy on the ``G`` intersections (Rasmussen & Williams' Algorithm 3.1 and ``G x G``
factorisations at every grid point), on generated tables of 24, 60 and 240 intersections.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import time
import warnings

BUDGET_S = 30.0


def _data_home():
    env = os.environ.get("BAYESFAIR_DATA")
    here = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
    return env or (here if os.path.isdir(here) else None)


def _dense_fit(n, k, codes):
    """The same nested-Laplace fit in batched NumPy on the ``G`` intersections: Rasmussen &
    Williams' Algorithm 3.1 at every grid point (``f = C a``, ``a = b - W^(1/2) B^(-1)
    W^(1/2) C b``, ``B = I + W^(1/2) C W^(1/2)``, with step halving), then the Laplace
    normalisation and the covariance ``C - C W^(1/2) B^(-1) W^(1/2) C`` from ``B``'s
    Cholesky factor: ``G x G`` factorisations per grid point (with the size term, as the
    audit's intervals fit it)."""
    import numpy as np
    from scipy.special import expit

    from bayesfair.models import _nested_laplace as nl

    n, k = np.asarray(n, float), np.asarray(k, float)
    sa, tau, psi = _grid()
    m = np.log((k.sum() + 0.5) / (n.sum() - k.sum() + 0.5))
    cov = nl._LowRankPrior(np.asarray(codes), sa, tau, psi).dense(n, m)
    eye = np.eye(len(n))

    def objective(f, a):
        eta = m + f
        return np.sum(
            -k * np.logaddexp(0, -eta) - (n - k) * np.logaddexp(0, eta), -1
        ) - 0.5 * np.sum(a * f, -1)

    f = np.zeros((len(sa), len(n)))
    a = np.zeros_like(f)
    psi = objective(f, a)
    for _ in range(100):
        p = expit(m + f)
        w = n * p * (1 - p)
        b, sw = w * f + (k - n * p), np.sqrt(w)
        big_b = eye + sw[..., :, None] * cov * sw[..., None, :]
        v = np.linalg.solve(big_b, (sw * (cov @ b[..., None])[..., 0])[..., None])[..., 0]
        a_new = b - sw * v
        f_new = (cov @ a_new[..., None])[..., 0]
        step = np.ones(len(f))
        for _ in range(30):
            ft, at = f + step[:, None] * (f_new - f), a + step[:, None] * (a_new - a)
            psi_t = objective(ft, at)
            worse = psi_t < psi - 1e-10
            if not worse.any():
                break
            step = np.where(worse, step / 2, step)
        moved = np.max(np.abs(ft - f))
        f, a, psi = ft, at, psi_t
        if moved < 1e-8:
            break
    p = expit(m + f)
    sw = np.sqrt(n * p * (1 - p))
    lower = np.linalg.cholesky(eye + sw[..., :, None] * cov * sw[..., None, :])
    half_logdet = np.sum(np.log(np.diagonal(lower, axis1=-2, axis2=-1)), axis=-1)
    v = np.linalg.solve(lower, sw[..., :, None] * cov)
    return m + f, psi - half_logdet, cov - np.swapaxes(v, -1, -2) @ v


def _grid():
    """The grid of ``(sigma_a, tau, psi)`` the audit's intervals fit (with the size term)."""
    import numpy as np

    from bayesfair.models import _nested_laplace as nl

    grid = np.meshgrid(nl.SCALES, nl.SCALES, nl.SIZE_SCALES, indexing="ij")
    return tuple(g.ravel() for g in grid)


def _dense_draws(fit, size, rng):
    """``size`` draws of the rates from :func:`_dense_fit`'s mixture, as a replicate table
    needs them: every grid point's covariance factorised, a point picked per draw by its
    posterior weight (the half-normal priors and their Jacobian included), ``eta = mode + L
    z``."""
    import numpy as np
    from scipy.special import expit

    from bayesfair.models import _nested_laplace as nl

    mode, log_marginal, cov = fit
    sa, tau, psi = _grid()
    lw = log_marginal - 0.5 * (sa**2 + tau**2 + (psi / nl.SIZE_PRIOR_SCALE) ** 2)
    lw = lw + np.log(sa * tau * psi)
    w = np.exp(lw - lw.max())
    chol = np.linalg.cholesky(cov + 1e-9 * np.eye(cov.shape[-1]))
    g = rng.choice(len(w), size=size, p=w / w.sum())
    z = rng.standard_normal((size, cov.shape[-1]))
    return expit(mode[g] + np.einsum("dij,dj->di", chol[g], z))


def _laplace_fits(quick: bool) -> list[dict]:
    """The nested-Laplace fit of one table and 400 draws from it (what every replicate table
    of a calibration needs), compiled in the effects and drawn in them, against the same
    fit and draws in NumPy on the intersections, at every grid point (checked to give the
    same modes first, at the points the compiled fit fits)."""
    import numpy as np

    from bayesfair.models import _nested_laplace as nl

    rows = []
    for levels, reps in (((4, 2, 3), 100), ((5, 4, 3), 100), ((6, 5, 4, 2), 3)):
        reps = max(2, reps // 5) if quick else reps
        rng = np.random.default_rng(0)
        codes = np.indices(levels).reshape(len(levels), -1)
        g = codes.shape[1]
        n = rng.multinomial(100 * g, rng.dirichlet(np.full(g, 2.0)))
        tables = rng.binomial(n, rng.uniform(0.1, 0.5, g), size=(reps, g))
        fit = functools.partial(nl.grid_posterior, group_variance="size")
        mode, ours = _dense_fit(n, tables[0], codes)[0], fit(n, tables[0], codes)
        kept = ours.weight > 0  # the grid points that carry weight, which the fit fits
        np.testing.assert_allclose(ours.mode[kept], mode[kept], atol=1e-6)
        t0 = time.perf_counter()
        for k in tables:
            fit(n, k, codes).draw(400, rng)
        ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        for k in tables:
            _dense_draws(_dense_fit(n, k, codes), 400, rng)
        dense = time.perf_counter() - t0
        rows.append(
            {
                "benchmark": f"HierarchicalCounts size-term fit + 400 draws, {g} groups (x{reps})",
                "bayesfair_s": ours,
                "baseline": "the same fit in NumPy, dense on the intersections",
                "baseline_s": dense,
                "note": f"{' x '.join(map(str, levels))}, {100 * g:,} rows; the refit of every "
                "replicate table and its draws",
            }
        )
    return rows


def run(quick: bool = False) -> list[dict]:
    import bayesfair as bf
    from bayesfair.datasets import load_compas

    home = _data_home()
    if home is None:
        return [
            {"benchmark": "interval calibration (no COMPAS data)", "bayesfair_s": float("nan")},
            *_laplace_fits(quick),
        ]
    frame = load_compas("cbs", data_home=home).frame
    data = bf.AuditData(
        frame, protected=["race", "sex"], outcome="two_year_recid", score="P", decision="high_risk"
    )
    reps = 50 if quick else 200
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        for i, role in enumerate(("outcome", "decision")):
            bf.interval_calibration(data, role=role, n_replicates=reps, random_state=i)
        cal = time.perf_counter() - t0
        t0 = time.perf_counter()
        bf.interval_calibration(data, role="amplification", n_replicates=reps, random_state=2)
        amp = time.perf_counter() - t0
        steps = []  # (seconds since the start, step) as the audit reports them
        with contextlib.redirect_stdout(io.StringIO()):  # the audit's progress bars
            audit = bf.audit(
                data, random_state=0, progress=lambda s: steps.append((time.perf_counter(), s))
            )
        start = next(i for i, (_, s) in enumerate(steps) if "intervals of epsilon-DF" in s)
        audit_s = steps[start + 1][0] - steps[start][0]
        checks = sum(c.n_replicates for c in audit.intervals.values())
        t0 = time.perf_counter()
        bf.run_audit(data)
        empirical = time.perf_counter() - t0
    return [
        {
            "benchmark": f"interval_calibration(COMPAS), 2 roles x 4 x {reps}",
            "bayesfair_s": cal,
            "baseline": "bf.run_audit (empirical, CP box)",
            "baseline_s": empirical,
            "note": f"{data.n_rows:,} rows, 12 intersections; "
            f"budget {BUDGET_S:g} s ({'met' if cal <= BUDGET_S else 'NOT met'})",
        },
        {
            "benchmark": f"  same, role='amplification' (3 hierarchical fits), 4 x {reps}",
            "bayesfair_s": amp,
            "baseline": "bf.run_audit (empirical, CP box)",
            "baseline_s": empirical,
            "note": "labels, and decisions given each label",
        },
        {
            "benchmark": f"bf.audit(COMPAS): {len(audit.intervals)} interval checks x 4 x "
            f"{checks // max(1, len(audit.intervals))}",
            "bayesfair_s": audit_s,
            "baseline": "bf.run_audit (empirical, CP box)",
            "baseline_s": empirical,
            "note": "the interval step of the audit (from its progress callback): what the "
            f"checks add to an audit; budget {BUDGET_S:g} s "
            f"({'met' if audit_s <= BUDGET_S else 'NOT met'})",
        },
        *_laplace_fits(quick),
    ]
