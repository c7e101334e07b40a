"""Hierarchical Bayes estimates of per-group metrics (PyMC).

Count metrics (selection rate, FNR, ...): the numerator k_a of every group is
Binomial(m_a, p_a) with

    logit p_a = alpha + sum_j beta_j[a_j] + sum_{j<l} gamma_jl[a_j, a_l] + delta_a,

an intercept, attribute main effects, pairwise interactions and a group effect,
each block (each attribute, each pair, the groups) with its own scale
~ HalfNormal(1), non-centred.  Metrics without counts (AUC, user metrics): the
same structure on the identity scale for the standard estimates, which are
Normal(mu_a, sigma_a) with the pooled standard errors (a Fay-Herriot model; its
group effect is integrated out in the sampler and drawn from its conditional
Normal afterwards).
Several metrics are fitted in one model along a ``measure`` dimension.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

__all__ = ["fit_hierarchical"]

#: compiled nutpie models, keyed on the model's structure (the data change, not the graph)
_COMPILED: dict = {}


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
        center = np.array([np.nanmean(r) if np.isfinite(r).any() else 0.0 for r in s])
    M = len(metric_names)
    if binomial:
        data_vals = {"k_obs": np.asarray(k, float), "m_obs": np.asarray(m, float)}
    else:
        mask = np.isfinite(s) & np.isfinite(se) & (se > 0)
        data_vals = {
            "s_obs": np.where(mask, s, 0.0),
            "se_obs": np.where(mask, se, 1.0),
            "mask": mask.astype(float),
        }
    data_vals["center"] = np.asarray(center, float)
    key = (
        binomial,
        tuple(labels.columns),
        tuple(tuple(map(str, v)) for v in levels.values()),
        G,
        M,
        interactions,
    )

    def build():
        with pm.Model(coords=coords) as model:
            d = {name: pm.Data(name, val) for name, val in data_vals.items()}
            alpha = pm.Normal("alpha", d["center"], 2.5 if binomial else 1.0, dims="measure")
            eta = alpha[:, None] * np.ones((1, G))
            for c in labels.columns:
                sd = pm.HalfNormal(f"sigma_{c}", 1.0, dims="measure")
                z = pm.Normal(f"z_{c}", 0.0, 1.0, dims=("measure", f"{c}_level"))
                eta = eta + (sd[:, None] * z)[:, codes[c]]
            if interactions:
                for c1, c2 in pairs:
                    n1, n2 = len(levels[c1]), len(levels[c2])
                    sd = pm.HalfNormal(f"sigma_{c1}_{c2}", 1.0, dims="measure")
                    z = pm.Normal(f"z_{c1}_{c2}", 0.0, 1.0, shape=(M, n1 * n2))
                    eta = eta + (sd[:, None] * z)[:, codes[c1] * n2 + codes[c2]]
            sd_g = pm.HalfNormal("sigma_group", 1.0, dims="measure")
            if binomial:
                z_g = pm.Normal("z_group", 0.0, 1.0, dims=("measure", "group"))
                eta = eta + sd_g[:, None] * z_g
                pm.Deterministic("theta", pm.math.invlogit(eta), dims=("measure", "group"))
                # binomial log-likelihood of the counts (binomial coefficients dropped: constant)
                pm.Potential(
                    "k",
                    pm.math.sum(
                        -d["k_obs"] * pm.math.log1pexp(-eta)
                        - (d["m_obs"] - d["k_obs"]) * pm.math.log1pexp(eta)
                    ),
                )
            else:
                # the group effect is integrated out analytically (s_a ~ N(eta_a, se_a^2 +
                # sigma_group^2)), which removes the funnel between the group effects and their
                # scale when large groups' standard errors are small; theta is drawn afterwards
                pm.Deterministic("eta", eta, dims=("measure", "group"))
                tot = d["se_obs"] ** 2 + sd_g[:, None] ** 2
                z = (d["s_obs"] - eta) ** 2 / tot
                pm.Potential("s", pm.math.sum(d["mask"] * (-0.5 * z - 0.5 * pm.math.log(tot))))
        return model

    if _have_nutpie():
        import nutpie

        compiled = _COMPILED.get(key)
        if compiled is None:
            compiled = nutpie.compile_pymc_model(build())
            _COMPILED[key] = compiled
        idata = nutpie.sample(
            compiled.with_data(**data_vals),
            draws=draws,
            tune=tune,
            chains=chains,
            seed=random_seed,
            target_accept=target_accept if binomial else max(target_accept, 0.99),
            progress_bar=False,
        )
    else:
        with build():
            idata = pm.sample(
                draws=draws,
                tune=tune,
                chains=chains,
                cores=1,
                random_seed=random_seed,
                target_accept=target_accept if binomial else max(target_accept, 0.99),
                progressbar=False,
                compute_convergence_checks=False,
            )
    if binomial:
        th = idata.posterior["theta"].to_numpy()
        return idata, th.reshape(-1, *th.shape[2:])
    # Fay-Herriot: theta_a | eta_a, sigma_group, s_a is Normal (conjugate)
    eta = idata.posterior["eta"].to_numpy()
    eta = eta.reshape(-1, *eta.shape[2:])
    sg2 = idata.posterior["sigma_group"].to_numpy().reshape(-1, M)[:, :, None] ** 2
    se2 = data_vals["se_obs"][None] ** 2
    obs = data_vals["mask"][None] > 0
    prec = np.where(obs, 1.0 / se2, 0.0) + 1.0 / np.maximum(sg2, 1e-300)
    mean = (
        np.where(obs, data_vals["s_obs"][None] / se2, 0.0) + eta / np.maximum(sg2, 1e-300)
    ) / prec
    rng = np.random.default_rng(random_seed)
    theta = mean + rng.standard_normal(mean.shape) / np.sqrt(prec)
    return idata, theta
