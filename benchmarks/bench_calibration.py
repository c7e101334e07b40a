"""The check of the default intervals of epsilon-DF and gamma-SF on COMPAS
(``bayesfair.interval_calibration`` for labels and decisions, and for the amplification: 200
replicate tables in each of four scenarios, the hierarchical model refitted on each), which
``bayesfair.audit`` runs on every audit (at most 100 replicates per scenario, five tables).

Issue 40's budget: at most 30 s added to an audit of COMPAS size on the project's machine
(2 cores). The baseline is the empirical audit (``bayesfair.run_audit``: the fairness table
with its Clopper-Pearson intervals), in the same process.

The refit every replicate table needs is the nested-Laplace posterior of the counts; its
Newton steps, Laplace normalisation and posterior covariance work in the intercept and
attribute effects (an ``r x r`` system per grid point, ``r = 1 + sum(levels)``). The last
rows time it against the same fit computed on the ``G`` intersections (Rasmussen &
Williams' Algorithm 3.1 and ``G x G`` factorisations per grid point), on generated tables
of 24, 60 and 240 intersections.
"""

from __future__ import annotations

import contextlib
import io
import os
import time
import warnings

BUDGET_S = 30.0


def _data_home():
    env = os.environ.get("BAYESFAIR_DATA")
    here = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
    return env or (here if os.path.isdir(here) else None)


def _dense_newton_step(prior, w, b):
    """Rasmussen & Williams' Algorithm 3.1 on the intersections: ``f = C a`` with ``a = b -
    W^(1/2) B^(-1) W^(1/2) C b``, ``B = I + W^(1/2) C W^(1/2)``."""
    import numpy as np

    cov = prior.dense()
    sw = np.sqrt(w)
    big_b = np.eye(cov.shape[-1]) + sw[..., :, None] * cov * sw[..., None, :]
    v = np.linalg.solve(big_b, (sw * (cov @ b[..., None])[..., 0])[..., None])[..., 0]
    a = b - sw * v
    return (cov @ a[..., None])[..., 0], a


def _dense_gaussian(prior, w):
    """The Laplace normalisation and posterior covariance on the intersections: half the
    log-determinant of ``B`` from its Cholesky factor, and ``C - C W^(1/2) B^(-1) W^(1/2) C``."""
    import numpy as np

    cov = prior.dense()
    sw = np.sqrt(w)
    lower = np.linalg.cholesky(np.eye(cov.shape[-1]) + sw[..., :, None] * cov * sw[..., None, :])
    half_logdet = np.sum(np.log(np.diagonal(lower, axis1=-2, axis2=-1)), axis=-1)
    v = np.linalg.solve(lower, sw[..., :, None] * cov)
    return half_logdet, cov - np.swapaxes(v, -1, -2) @ v


def _laplace_fits(quick: bool) -> list[dict]:
    """The nested-Laplace fit of one table, Newton in the effects against the dense step."""
    from unittest import mock

    import numpy as np

    from bayesfair.models import _nested_laplace as nl

    rows = []
    for levels, reps in (((4, 2, 3), 100), ((5, 4, 3), 100), ((6, 5, 4, 2), 10)):
        reps = max(2, reps // 5) if quick else reps
        rng = np.random.default_rng(0)
        codes = np.indices(levels).reshape(len(levels), -1)
        g = codes.shape[1]
        n = rng.multinomial(100 * g, rng.dirichlet(np.full(g, 2.0)))
        tables = rng.binomial(n, rng.uniform(0.1, 0.5, g), size=(reps, g))
        t0 = time.perf_counter()
        for k in tables:
            nl.grid_posterior(n, k, codes)
        ours = time.perf_counter() - t0
        with (
            mock.patch.object(nl._LowRankPrior, "newton_step", _dense_newton_step),
            mock.patch.object(nl._LowRankPrior, "gaussian", _dense_gaussian),
        ):
            t0 = time.perf_counter()
            for k in tables:
                nl.grid_posterior(n, k, codes)
            dense = time.perf_counter() - t0
        rows.append(
            {
                "benchmark": f"HierarchicalCounts fit, {g} intersections (x{reps})",
                "bayesfair_s": ours,
                "baseline": "the same, dense on the intersections",
                "baseline_s": dense,
                "note": f"{' x '.join(map(str, levels))}, {100 * g:,} rows; the refit of every "
                "replicate table",
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
