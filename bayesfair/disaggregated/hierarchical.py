"""Hierarchical Bayes estimates of per-group metrics (PyMC).

Count metrics (selection rate, FNR, ...): the numerator k_a of every group is
Binomial(m_a, p_a) with

    logit p_a = alpha + sum_j beta_j[a_j] + sum_{j<l} gamma_jl[a_j, a_l] + delta_a,

an intercept, attribute main effects, pairwise interactions and a group effect,
each block (each attribute, each pair, the groups) with its own scale
~ HalfNormal(1), non-centred.  Metrics without counts (AUC, user metrics): the
same structure on the identity scale for the standard estimates, which are
Normal(mu_a, sigma_a) with the pooled standard errors (a Fay-Herriot model).
Several metrics are fitted in one model along a ``measure`` dimension.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

__all__ = ["fit_hierarchical"]


def _design(labels: pd.DataFrame):
    codes = {c: pd.Categorical(labels[c], categories=pd.unique(labels[c])).codes for c in labels}
    levels = {c: list(pd.unique(labels[c])) for c in labels}
    pairs = list(combinations(labels.columns, 2))
    return codes, levels, pairs


def fit_hierarchical(
    labels: pd.DataFrame,
    metric_names: list[str],
    *,
    k: np.ndarray | None = None,
    m: np.ndarray | None = None,
    s: np.ndarray | None = None,
    se: np.ndarray | None = None,
    interactions: bool = True,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    target_accept: float = 0.95,
    random_seed: int = 0,
):
    """Fit the model for several metrics at once.

    Binomial: ``k`` and ``m`` of shape (metrics, groups).  Fay-Herriot: ``s`` and
    ``se`` of shape (metrics, groups), NaN where undefined (left out of the
    likelihood).  Returns (idata, draws of the group values with shape
    (samples, metrics, groups)).
    """
    import pymc as pm

    from ..models.base import _have_nutpie

    binomial = k is not None
    codes, levels, pairs = _design(labels)
    G = len(labels)
    coords = {"measure": metric_names, "group": np.arange(G)}
    for c, lv in levels.items():
        coords[f"{c}_level"] = [str(v) for v in lv]
    if binomial:
        center = np.log((np.nansum(k, 1) + 0.5) / (np.nansum(m - k, 1) + 0.5))
    else:
        obs = np.isfinite(s)
        center = np.array([np.nanmean(r) if np.isfinite(r).any() else 0.0 for r in s])
    with pm.Model(coords=coords) as model:
        alpha = pm.Normal("alpha", center, 2.5 if binomial else 1.0, dims="measure")
        eta = alpha[:, None] * np.ones((1, G))
        for c in labels.columns:
            sd = pm.HalfNormal(f"sigma_{c}", 1.0, dims="measure")
            z = pm.Normal(f"z_{c}", 0.0, 1.0, dims=("measure", f"{c}_level"))
            eta = eta + (sd[:, None] * z)[:, codes[c]]
        if interactions:
            for c1, c2 in pairs:
                n1, n2 = len(levels[c1]), len(levels[c2])
                sd = pm.HalfNormal(f"sigma_{c1}_{c2}", 1.0, dims="measure")
                z = pm.Normal(f"z_{c1}_{c2}", 0.0, 1.0, shape=(len(metric_names), n1 * n2))
                eta = eta + (sd[:, None] * z)[:, codes[c1] * n2 + codes[c2]]
        sd_g = pm.HalfNormal("sigma_group", 1.0, dims="measure")
        z_g = pm.Normal("z_group", 0.0, 1.0, dims=("measure", "group"))
        eta = eta + sd_g[:, None] * z_g
        if binomial:
            theta = pm.Deterministic("theta", pm.math.invlogit(eta), dims=("measure", "group"))
            pm.Binomial("k", n=m.astype("int64"), p=theta, observed=k.astype("int64"))
        else:
            theta = pm.Deterministic("theta", eta, dims=("measure", "group"))
            flat = np.flatnonzero(obs.ravel())
            pm.Normal(
                "s",
                mu=theta.flatten()[flat],
                sigma=se.ravel()[flat],
                observed=s.ravel()[flat],
            )
        if _have_nutpie():
            import nutpie

            compiled = nutpie.compile_pymc_model(model)
            idata = nutpie.sample(
                compiled,
                draws=draws,
                tune=tune,
                chains=chains,
                seed=random_seed,
                target_accept=target_accept,
                progress_bar=False,
            )
        else:
            idata = pm.sample(
                draws=draws,
                tune=tune,
                chains=chains,
                cores=1,
                random_seed=random_seed,
                target_accept=target_accept,
                progressbar=False,
                compute_convergence_checks=False,
            )
    th = idata.posterior["theta"].to_numpy()
    return idata, th.reshape(-1, *th.shape[2:])
