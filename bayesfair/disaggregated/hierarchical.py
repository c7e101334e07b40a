"""Hierarchical Bayes estimates of per-group metrics (PyMC).

Count metrics (selection rate, FNR, ...): the numerator k_a of every group is
Binomial(m_a, p_a) with

    logit p_a = alpha + sum_j beta_j[a_j] + sum_{j<l} gamma_jl[a_j, a_l] + delta_a,

an intercept, attribute main effects, pairwise interactions and a group effect,
each block (each attribute, each pair, the groups) with its own scale
~ HalfNormal(1), non-centred (main effects optionally centred: see
``fit_hierarchical``; with a single attribute, the main effect is the
group effect, so there is no separate one).  Main effects sum to zero over each attribute's
values and interactions over both attributes' values (PyMC's ``ZeroSumNormal``),
so that the intercept is identified: contrasts keep the prior of independent
effects (differences between an attribute's values, interaction contrasts); only
the parts that duplicated the intercept or the main effects go, and with them the
ridge between the intercept and the effects of a two-valued attribute that made
NUTS diverge.  Metrics without counts (AUC, user metrics): the same structure on
the identity scale for the standard estimates, which are Normal(mu_a, sigma_a)
with the pooled standard errors (a Fay-Herriot model; its group effect is
integrated out in the sampler and drawn from its conditional Normal afterwards),
with every scale ~ HalfNormal(s) and the intercept ~ Normal(mean, s), s the
spread of the standard estimates.
With ``group_variance="size"`` (``HierarchicalBayes``' default) the group effect
delta_a has the variance sigma_group^2 + psi^2 v_a, v_a the group's sampling variance
(``_sampling_variance``: 1 / (m_a p (1 - p)) on the log-odds scale, se_a^2 for
Fay-Herriot, whose marginal variance becomes se_a^2 + sigma_group^2 + psi^2 v_a), psi ~
HalfNormal(PSI_SCALE): a group's departure may grow as its rows fall.
Several metrics are fitted in one model along a ``measure`` dimension.
An attribute value without data (an unused category) is left out of the fit and
its groups are drawn afterwards as new levels (see ``_fit_with_unseen_levels``):
kept in, it adds a ridge that the likelihood cannot see, which NUTS crossed with
divergences.
"""

from __future__ import annotations

import json
from itertools import combinations

import numpy as np
import pandas as pd

from .. import _arviz
from .._names import safe_names
from .._validation import check_instance
from .._vocabulary import moved_options, renamed_arguments
from .estimators import HierarchicalBayes

__all__ = ["fit_hierarchical"]

# prior scale of psi (HalfNormal): psi^2 is the group effect's size term in units of the
# group's sampling variance, a ratio, so one scale serves every measure.  Where the term is a
# finite population's own noise, the ratio is the sampling fraction n / N, below 1 and in an
# audit usually far below; HalfNormal(0.5) keeps 95% of its mass below a ratio of 1
PSI_SCALE = 0.5


def _design(labels: pd.DataFrame):
    """Codes and values of every attribute, the attributes that get an effect block and
    their pairs.  An attribute with one value has no effect to estimate (its sum-to-zero
    block is empty), and would leave the sampler a scale that only its prior informs."""
    # int64: pandas' codes are int8 for fewer than 128 values, and a pair's cell index
    # ``codes[c1] * n2 + codes[c2]`` wrapped around past 127 cells
    codes = {
        c: pd.Categorical(labels[c], categories=pd.unique(labels[c])).codes.astype(np.int64)
        for c in labels
    }
    levels = {c: list(pd.unique(labels[c])) for c in labels}
    attributes = [c for c in labels.columns if len(levels[c]) > 1]
    return codes, levels, attributes, list(combinations(attributes, 2))


def pinned_down(values: pd.Series, sizes: np.ndarray, rows: int = 1000) -> bool:
    """Whether an attribute is one whose main effects centred coordinates suit: three or
    more values, each with at least ``rows`` rows.  With two values its scale rests on
    one contrast, and on the simulated Adult audit (sex, and race and age bands with
    small values) centred main effects diverged where non-centred ones did not."""
    per_value = pd.Series(np.asarray(sizes, float)).groupby(values.to_numpy()).sum()
    return len(per_value) >= 3 and bool((per_value >= rows).all())


class _Problem:
    """What both the PyMC model and the closed-form density of one fit are built from."""

    def __init__(
        self,
        labels,
        metric_names,
        k,
        m,
        s,
        se,
        interactions,
        main_effects="non-centred",
        sizes=None,
        group_variance="exchangeable",
    ) -> None:
        self.binomial = k is not None
        self.labels, self.metric_names, self.interactions = labels, list(metric_names), interactions
        self.codes, self.levels, self.attributes, self.pairs = _design(labels)
        # with one attribute the group effect of a count model would repeat the main effect
        # (both one value per group): a ridge the sampler can only cross by its priors
        self.group_effect = len(self.attributes) > 1
        self.G, self.M = len(labels), len(self.metric_names)
        if self.binomial:
            center = np.log((np.nansum(k, 1) + 0.5) / (np.nansum(m - k, 1) + 0.5))
            self.data = {"k_obs": np.asarray(k, float), "m_obs": np.asarray(m, float)}
        else:
            center = np.array([np.nanmean(r) if np.isfinite(r).any() else 0.0 for r in s])
            mask = np.isfinite(s) & np.isfinite(se) & (se > 0)
            self.data = {
                "s_obs": np.where(mask, s, 0.0),
                "se_obs": np.where(mask, se, 1.0),
                "mask": mask.astype(float),
            }
        self.data["center"] = np.asarray(center, float)
        # group_variance="size": the group effect's variance is sigma_group^2 + psi^2 v_a,
        # v_a the group's sampling variance (see HierarchicalBayes); a count model with
        # one attribute has no group effect to give it
        self.size_variance = group_variance == "size" and (self.group_effect or not self.binomial)
        if self.size_variance:
            self.data["v_obs"] = _sampling_variance(self.data, self.binomial)
        self.tau = 2.5 if self.binomial else 1.0
        # prior scale of the spreads: 1 on the log-odds scale; for Fay-Herriot the spread
        # of the standard estimates (as rstanarm's autoscaling), since a metric such as an
        # AUC varies by hundredths, where HalfNormal(1) scales leave the sampler a funnel
        self.scale = np.ones(self.M)
        if not self.binomial:
            for i, row in enumerate(np.where(self.data["mask"] > 0, s, np.nan)):
                ok = row[np.isfinite(row)]
                spread = np.std(ok, ddof=1) if len(ok) > 1 else 0.0
                self.scale[i] = spread if spread > 0 else 1.0
        # centring weight of each attribute's main effects per measure (0: non-centred,
        # 1: centred; see fit_hierarchical); interactions and group effects: non-centred
        if main_effects == "auto":
            self.centring = _partial_centring(self, k, m, s, se, sizes)
        else:
            w = 1.0 if main_effects == "centred" else 0.0
            self.centring = {c: np.full(self.M, w) for c in self.attributes}

    def pymc_model(self):
        import pymc as pm

        G, M, d0 = self.G, self.M, self.data
        coords = {"measure": self.metric_names, "group": np.arange(G)}
        sc = self.scale
        for c, lv in self.levels.items():
            coords[f"{c}_level"] = [str(v) for v in lv]
        with pm.Model(coords=coords) as model:
            d = {name: pm.Data(name, val) for name, val in d0.items()}
            alpha = pm.Normal("alpha", d["center"], self.tau * sc, dims="measure")
            eta = alpha[:, None] * np.ones((1, G))
            for c in self.attributes:
                sd = pm.HalfNormal(f"sigma_{c}", sc, dims="measure")
                dims = ("measure", f"{c}_level")
                effect = _effects(pm, c, sd, sc, self.centring[c], dims=dims)
                eta = eta + effect[:, self.codes[c]]
            if self.interactions:
                for c1, c2 in self.pairs:
                    n1, n2 = len(self.levels[c1]), len(self.levels[c2])
                    sd = pm.HalfNormal(f"sigma_{c1}_{c2}", sc, dims="measure")
                    z = pm.ZeroSumNormal(
                        f"z_{c1}_{c2}", 1.0, shape=(M, n1, n2), n_zerosum_axes=2
                    ).reshape((M, n1 * n2))
                    eta = eta + (sd[:, None] * z)[:, self.codes[c1] * n2 + self.codes[c2]]
            if self.binomial:
                if self.group_effect:
                    sd_g = pm.HalfNormal("sigma_group", sc, dims="measure")
                    z_g = pm.Normal("z_group", 0.0, 1.0, dims=("measure", "group"))
                    var_g = sd_g[:, None] ** 2
                    if self.size_variance:
                        psi = pm.HalfNormal("psi_group", PSI_SCALE, dims="measure")
                        var_g = var_g + psi[:, None] ** 2 * d["v_obs"]
                    eta = eta + pm.math.sqrt(var_g) * z_g
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
                sd_g = pm.HalfNormal("sigma_group", sc, dims="measure")
                # the group effect is integrated out analytically (s_a ~ N(eta_a, se_a^2 +
                # sigma_group^2)), which removes the funnel between the group effects and their
                # scale when large groups' standard errors are small; theta is drawn afterwards
                pm.Deterministic("eta", eta, dims=("measure", "group"))
                tot = d["se_obs"] ** 2 + sd_g[:, None] ** 2
                if self.size_variance:
                    psi = pm.HalfNormal("psi_group", PSI_SCALE, dims="measure")
                    tot = tot + psi[:, None] ** 2 * d["v_obs"]
                z = (d["s_obs"] - eta) ** 2 / tot
                pm.Potential("s", pm.math.sum(d["mask"] * (-0.5 * z - 0.5 * pm.math.log(tot))))
        return model

    def layout(self):
        from ..models._fastlogp import zero_sum_basis
        from ._hb_logp import HBLayout

        codes, levels = self.codes, self.levels
        blocks = [
            (c, [str(v) for v in levels[c]], codes[c], zero_sum_basis(len(levels[c])))
            for c in self.attributes
        ]
        if self.interactions:
            for c1, c2 in self.pairs:
                n1, n2 = len(levels[c1]), len(levels[c2])
                cells = [f"{a}, {b}" for a in levels[c1] for b in levels[c2]]
                basis = np.kron(zero_sum_basis(n1), zero_sum_basis(n2))
                blocks.append((f"{c1}_{c2}", cells, codes[c1] * n2 + codes[c2], basis))
        d = self.data
        if self.binomial:
            g = self.G
            if self.group_effect:
                blocks.append(("group", [str(i) for i in range(g)], np.arange(g), np.eye(g)))
            d1, d2, mask = d["k_obs"], d["m_obs"], None
        else:
            d1, d2, mask = d["s_obs"], d["se_obs"], d["mask"]
        # the group block (last, for counts) is sampled non-centred
        centring = np.zeros((len(blocks), self.M))
        for i, (name, *_) in enumerate(blocks):
            centring[i] = self.centring.get(name, 0.0)
        return HBLayout(
            self.metric_names,
            self.G,
            blocks,
            d["center"],
            fay_herriot=not self.binomial,
            tau=self.tau,
            scale=self.scale,
            d1=d1,
            d2=d2,
            mask=mask,
            centring=centring,
            v=self.data.get("v_obs"),
        )


def _sampling_variance(data: dict, binomial: bool) -> np.ndarray:
    """Each group's sampling variance v_a per measure, the unit of the group effect's
    size term psi^2 v_a: for counts the variance of a log-odds estimate from m_a trials at
    the measure's pooled rate p, 1 / (m_a p (1 - p)); for Fay-Herriot the standard
    error's square.  A group without data for a measure gets the largest v of the
    measure's groups with data (the smallest group's), or 1 trial's."""
    if binomial:
        p = 1.0 / (1.0 + np.exp(-data["center"]))[:, None]
        m = data["m_obs"]
        return 1.0 / (np.maximum(m, 1.0) * p * (1.0 - p))
    v = np.where(data["mask"] > 0, data["se_obs"] ** 2, np.nan)
    largest = np.array([np.nanmax(r) if np.isfinite(r).any() else 1.0 for r in v])
    return np.where(np.isfinite(v), v, largest[:, None])


def _variance_without_data(data: dict, binomial: bool) -> np.ndarray:
    """The sampling variance v per measure of a group without data (see
    ``_sampling_variance``): no trials for counts, the largest standard error's square for
    Fay-Herriot."""
    if binomial:
        return _sampling_variance(data | {"m_obs": np.zeros((len(data["center"]), 1))}, True)[:, 0]
    return _sampling_variance(data, False).max(axis=1)


def _partial_centring(prob: _Problem, k, m, s, se, sizes, level: float = 0.05) -> dict:
    """Centring weights of the main effects per attribute and measure for
    ``main_effects="auto"`` (see ``fit_hierarchical``).

    For an effect u ~ Normal(mu, sigma^2) observed with information I (precision),
    Papaspiliopoulos, Roberts and Skold (2007, "A general framework for the
    parametrization of hierarchical models") show that the partially non-centred
    coordinates with weight w = I sigma^2 / (1 + I sigma^2) make the effect and its
    location mu independent a posteriori: w -> 0 (non-centred) where the data say
    little, w -> 1 (centred) where they pin u down.  The same weight interpolates here
    between the two coordinates of the scale (``_effects``: the effects are scale
    rho^(1 - w) u with u ~ ZeroSumNormal(rho^w)), a heuristic that the measurements in
    ``fit_hierarchical`` support, not an optimality result.

    I is the smallest information among the attribute's values about the value's
    effect, and it counts what the model puts between that effect and the data: a
    value's pooled estimate (the log-odds of its pooled counts; for Fay-Herriot the
    precision-weighted mean of its standard estimates) is an average over the groups
    that have the value, each of which carries its own interactions and group effect.
    With ``_residual_variance`` tau^2 of the groups beyond the main effects and w_g the
    groups' shares of the value's precision, 1 / I = 1 / (pooled precision) + tau^2
    sum_g w_g^2: a value spread over a few heterogeneous groups pins its effect down
    far less than its row count says.  sigma^2 is not the estimate of the values'
    spread (the method-of-moments variance of their pooled estimates, less their
    noise 1 / I) but its lower ``level`` confidence bound (chi-square with L - 1
    degrees of freedom for L values).  Centred coordinates fail (a funnel) where sigma
    is small for the data's precision, and a spread resting on one or two contrasts can
    be much smaller than its estimate.  Only an attribute that ``pinned_down`` accepts
    (three or more values, each with 1,000 rows or more of ``sizes``, the rows per
    group) gets a weight; the others stay non-centred.  Without that rule, the partial
    weights that the simulated Adult audit's attributes got (its sex has two values,
    its race and age bands small ones) gave 11 divergent transitions in 40 fits where
    non-centred gave none; without tau^2, the demo's data (24 groups of 10-5,558 rows
    with fitted group effects of spread about 0.6) got weights 0.47-0.88 and 13-35 divergent
    transitions per fit, where non-centred had none."""
    from scipy.stats import chi2

    pinned = [
        c for c in prob.attributes if sizes is not None and pinned_down(prob.labels[c], sizes)
    ]
    out = {c: np.zeros(prob.M) for c in prob.attributes}
    for i in range(prob.M if pinned else 0):
        # each group's estimate (log-odds or standard estimate) and its precision
        if prob.binomial:
            kk, mm = np.nan_to_num(k[i]), np.nan_to_num(m[i])
            est, prec = _smoothed_logit(kk, mm)
        else:
            ok = np.isfinite(s[i]) & np.isfinite(se[i]) & (se[i] > 0)
            est = np.where(ok, s[i], 0.0)
            prec = np.where(ok, 1 / np.where(ok, se[i], 1.0) ** 2, 0.0)
        tau2 = _residual_variance(prob, est, prec)
        for c in pinned:
            codes, n_values = prob.codes[c], len(prob.levels[c])
            total = np.bincount(codes, prec, n_values)
            if prob.binomial:
                pos, tot = np.bincount(codes, kk, n_values), np.bincount(codes, mm, n_values)
                u, pooled = _smoothed_logit(pos, tot)
            else:
                pooled = total
                u = np.bincount(codes, est * prec, n_values) / np.maximum(total, 1e-300)
            seen = (pooled > 0) & (total > 0)
            dof = int(seen.sum()) - 1
            if dof < 1:
                continue
            shares2 = np.bincount(codes, prec**2, n_values)[seen] / total[seen] ** 2
            info = 1 / (1 / pooled[seen] + tau2 * shares2)
            spread = max(0.0, np.var(u[seen], ddof=1) - np.mean(1 / info))
            ratio = info.min() * spread * chi2.ppf(level, dof) / dof  # I sigma^2
            out[c][i] = ratio / (1 + ratio)
    return out


def _smoothed_logit(k: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Log-odds of ``k`` positives in ``m`` trials, smoothed as (k + 1/2) / (m + 1), and
    their information m p (1 - p) (0 without trials)."""
    p = (k + 0.5) / (m + 1.0)
    return np.log(p / (1 - p)), m * p * (1 - p)


def _residual_variance(prob: _Problem, est: np.ndarray, prec: np.ndarray) -> float:
    """Variance of the groups' estimates ``est`` beyond an additive model of the
    attributes' main effects and beyond their noise 1 / ``prec`` (interactions and
    group effects together): the DerSimonian-Laird moment estimate of a weighted
    least-squares fit, tau^2 = (Q - df) / (tr W - tr((X'WX)^-1 X'W^2X)), floored at 0.
    Groups with ``prec`` 0 (no data) take no part."""
    ok = prec > 0
    cols = [np.ones(prob.G)] + [
        (prob.codes[c] == v).astype(float)
        for c in prob.attributes
        for v in range(1, len(prob.levels[c]))
    ]
    X, y, w = np.column_stack(cols)[ok], est[ok], prec[ok]
    xtw = X.T * w
    inv = np.linalg.pinv(xtw @ X)
    resid = y - X @ (inv @ (xtw @ y))
    df = len(y) - np.linalg.matrix_rank(X)
    denom = w.sum() - np.trace(inv @ ((xtw * w) @ X))
    if df < 1 or denom <= 0:
        return 0.0
    return max(0.0, (float(np.sum(w * resid**2)) - df) / denom)


def _effects(pm, name, sd, sc, w, dims):
    """An attribute's main effects ``sigma z`` sampled with centring weights ``w`` per
    measure (see ``main_effects`` of ``fit_hierarchical``): ``u ~
    ZeroSumNormal(rho^w)``, effects ``scale
    rho^(1 - w) u`` with ``rho = sigma / scale``; ``z`` is recorded either way.  With
    w = 0 this is the plain non-centred ``ZeroSumNormal`` z, under that name."""
    if not np.any(w):
        return sd[:, None] * pm.ZeroSumNormal(f"z_{name}", 1.0, dims=dims)
    rho = sd / sc
    u = pm.ZeroSumNormal(f"u_{name}", (rho**w)[:, None], dims=dims)
    effect = u * (sc * rho ** (1.0 - w))[:, None]
    pm.Deterministic(f"z_{name}", effect / sd[:, None], dims=dims)
    return effect


@moved_options(
    {
        name: f"estimator=HierarchicalBayes({name}=...)"
        for name in ("draws", "tune", "chains", "target_accept", "main_effects")
    }
)
@renamed_arguments(random_seed="random_state")
def fit_hierarchical(
    labels: pd.DataFrame,
    metric_names: list[str],
    *,
    k: np.ndarray | None = None,
    m: np.ndarray | None = None,
    s: np.ndarray | None = None,
    se: np.ndarray | None = None,
    estimator: HierarchicalBayes | None = None,
    interactions: bool = True,
    sizes: np.ndarray | None = None,
    random_state: int = 0,
):
    """Fit the model for several metrics at once.

    Binomial: ``k`` and ``m`` of shape (metrics, groups).  Fay-Herriot: ``s`` and
    ``se`` of shape (metrics, groups), NaN where undefined (left out of the
    likelihood).  Returns (idata, draws of the group values with shape
    (samples, metrics, groups)).  With nutpie installed the sampler runs on the
    closed-form density of :mod:`bayesfair.disaggregated._hb_logp` (no compilation
    per model); otherwise on the PyMC model with PyMC's sampler.

    ``estimator`` (a :class:`~bayesfair.disaggregated.HierarchicalBayes`) carries the NUTS
    settings and the coordinates of the main effects; default
    ``HierarchicalBayes(main_effects="non-centred")``.  ``interactions`` adds the
    pairwise interactions of the attributes; ``sizes`` (rows per group) informs
    ``main_effects="auto"``; ``random_state`` is an integer seed.

    ``main_effects`` gives the coordinates in which the attributes' main effects are
    sampled; the model is the same in all of them.  ``"non-centred"``: sigma z, z ~
    ZeroSumNormal(1), which suits effects the data say little about.  ``"centred"``:
    effects ~ ZeroSumNormal(sigma).  Where every value of an attribute has many rows,
    its effects are pinned and non-centred coordinates fix only sigma z, a curved
    ridge along which sigma mixes slowly; where a scale rests on few or poorly measured
    contrasts, its posterior reaches down to where centred coordinates form a funnel.
    ``"auto"`` partially centres the block of each attribute whose values all have
    many rows (``sizes``: rows per group) per measure, with the weight of
    Papaspiliopoulos, Roberts and Skold (see ``_partial_centring``), and leaves the
    others non-centred.  Which coordinates mix better depends on how much the data say
    about each scale; the measured R-hat, ESS and divergences on six designs, which chose
    this rule, are in ``models/cards/hierarchical_bayes.md``.
    """
    model = HierarchicalBayes(main_effects="non-centred") if estimator is None else estimator
    check_instance(model, HierarchicalBayes, "estimator", "a HierarchicalBayes(...)")
    main_effects = model.main_effects
    nuts = dict(
        draws=model.draws,
        tune=model.tune,
        chains=model.chains,
        target_accept=model.target_accept,
        random_seed=random_state,
    )
    # model variables are named after the columns (sigma_<col>), which PyMC and netCDF
    # refuse with a "/"
    labels = labels.rename(columns=safe_names(labels.columns))
    seen = _groups_with_seen_levels(labels, k, m, s, se)
    if seen.any() and not seen.all():
        return _fit_with_unseen_levels(
            labels,
            metric_names,
            seen,
            k=k,
            m=m,
            s=s,
            se=se,
            interactions=interactions,
            main_effects=main_effects,
            sizes=sizes,
            group_variance=model.group_variance,
            **nuts,
        )
    prob = _Problem(
        labels, metric_names, k, m, s, se, interactions, main_effects, sizes, model.group_variance
    )
    return _sample(prob, **nuts)


def _sample(prob: _Problem, *, draws, tune, chains, target_accept, random_seed):
    """NUTS draws of ``prob`` and the draws of its group values (see ``fit_hierarchical``)."""
    from .._sampling import sample_nuts
    from ._hb_logp import hierarchical_nutpie_model

    binomial, data_vals = prob.binomial, prob.data
    idata = sample_nuts(
        prob.pymc_model,
        lambda: hierarchical_nutpie_model(prob.layout()),
        draws=draws,
        tune=tune,
        chains=chains,
        seed=random_seed,
        target_accept=target_accept if binomial else max(target_accept, 0.99),
    )
    # which blocks were sampled (partially) centred: the closed-form density records z only
    idata.posterior.attrs["centred_main_effects"] = json.dumps(
        [c for c, w in prob.centring.items() if np.any(np.asarray(w) > 0)]
    )
    if binomial:
        th = idata.posterior["theta"].to_numpy()
        return idata, th.reshape(-1, *th.shape[2:])
    # Fay-Herriot: theta_a | eta_a, sigma_group, s_a is Normal (conjugate)
    eta = idata.posterior["eta"].to_numpy()
    eta = eta.reshape(-1, *eta.shape[2:])
    sg2 = _group_variance(idata.posterior, prob)
    se2 = data_vals["se_obs"][None] ** 2
    obs = data_vals["mask"][None] > 0
    prec = np.where(obs, 1.0 / se2, 0.0) + 1.0 / np.maximum(sg2, 1e-300)
    mean = (
        np.where(obs, data_vals["s_obs"][None] / se2, 0.0) + eta / np.maximum(sg2, 1e-300)
    ) / prec
    rng = np.random.default_rng(random_seed)
    theta = mean + rng.standard_normal(mean.shape) / np.sqrt(prec)
    return idata, theta


def _group_variance(post, prob: _Problem) -> np.ndarray:
    """Draws of the group effect's variance, (samples, measures, groups):
    sigma_group^2, plus psi^2 v_a with ``group_variance="size"``."""
    m = prob.M
    var = post["sigma_group"].to_numpy().reshape(-1, m)[:, :, None] ** 2
    if prob.size_variance:
        psi2 = post["psi_group"].to_numpy().reshape(-1, m)[:, :, None] ** 2
        var = var + psi2 * prob.data["v_obs"][None]
    return var


def _groups_with_data(k, m, s, se) -> np.ndarray:
    if k is not None:
        return (np.asarray(m, float) > 0).any(axis=0)
    s, se = np.asarray(s, float), np.asarray(se, float)
    return (np.isfinite(s) & np.isfinite(se) & (se > 0)).any(axis=0)


def _groups_with_seen_levels(labels: pd.DataFrame, k, m, s, se) -> np.ndarray:
    """Groups every one of whose attribute values some group with data also has."""
    has = _groups_with_data(k, m, s, se)
    seen = np.ones(len(labels), bool)
    for c in labels.columns:
        col = labels[c].to_numpy()
        seen &= pd.Series(col).isin(pd.unique(col[has])).to_numpy()
    return seen


def _fit_with_unseen_levels(
    labels,
    metric_names,
    seen,
    *,
    k,
    m,
    s,
    se,
    interactions,
    main_effects,
    sizes,
    group_variance,
    **kw,
):
    """Fit on the groups whose attribute values all occur in the data, and draw the others
    as groups with new levels.

    An attribute value that no row carries (an unused category, say) adds to a
    sum-to-zero block a direction that the likelihood does not see: the intercept
    and the observed values' effects can trade against the unseen value's effect, a
    ridge whose width grows with the block's scale, which NUTS crosses with
    divergences.  The value's groups are therefore left out of the fit and drawn
    afterwards, as ``brms`` does for new levels (``sample_new_levels="gaussian"``):
    from every posterior draw, a new value's effect is Normal(0, sigma_b^2 (1 + 1/L_b))
    for a block with L_b observed values (an effect relative to the mean of the L_b
    observed ones), an interaction cell with one or two new values likewise, and the
    group effect Normal(0, sigma_group^2), plus psi^2 v with ``group_variance="size"``
    and v the sampling variance of a group without data (``_sampling_variance``).  For
    a main effect this is the model that keeps the value, integrated over the ridge
    (``tests/disaggregated/test_hierarchical_bayes.py -k new_level`` compares the two by
    brute force); for an interaction cell the factor
    (1 + 1/L) bounds the variance from above, so those draws err on the wide side.
    Where an attribute has a single observed value, nothing in the data informs its
    spread, and its scale is drawn from the prior.  The posterior's ``group``
    coordinate holds the fitted groups' positions.
    """
    idx = np.flatnonzero(seen)
    sub = labels.iloc[idx].reset_index(drop=True)

    def take(a):
        return None if a is None else np.asarray(a, float)[:, idx]

    fitted = _Problem(
        sub,
        metric_names,
        take(k),
        take(m),
        take(s),
        take(se),
        interactions,
        main_effects,
        None if sizes is None else np.asarray(sizes)[idx],
        group_variance,
    )
    idata, th_fit = _sample(fitted, **kw)
    _arviz.assign_coords(idata, "posterior", group=idx)
    post = idata.posterior
    binomial = fitted.binomial
    new = np.flatnonzero(~seen)
    samples, n_measures = th_fit.shape[0], th_fit.shape[1]
    rng = np.random.default_rng([kw["random_seed"], 1])

    def flat(name: str) -> np.ndarray:
        x = post[name].to_numpy()
        return x.reshape(x.shape[0] * x.shape[1], x.shape[2], -1)  # (samples, measures, ...)

    def scale_of(name: str, prior_scale=None) -> np.ndarray:
        """Draws of a block's scale (``sigma_<name>``; for ``"psi"``, the group effect's
        size term ``psi_group``): its posterior, or its HalfNormal prior where the fit has
        no such block (an attribute with one observed value: nothing informs it)."""
        var = "psi_group" if name == "psi" else f"sigma_{name}"
        if var in post:
            return flat(var)[:, :, 0]
        sc = fitted.scale[None, :] if prior_scale is None else prior_scale
        return np.abs(rng.standard_normal((samples, n_measures))) * sc

    levels = fitted.levels
    pos = {c: {v: i for i, v in enumerate(lv)} for c, lv in levels.items()}
    inflate = {c: 1.0 + 1.0 / len(lv) for c, lv in levels.items()}
    eta = np.repeat(flat("alpha")[:, :, :1], len(new), axis=2)  # (samples, measures, new)

    def add_block(name: str, index, variance) -> None:
        """Add block ``name``'s effect: the fitted one of cell ``index[g]`` or, where that
        is -1, a new cell's draw with ``variance[g]`` times the block's sigma^2."""
        sd = scale_of(name)
        z = flat(f"z_{name}") if f"z_{name}" in post else None
        for j, (ix, var) in enumerate(zip(index, variance, strict=True)):
            if ix < 0:
                eta[:, :, j] += sd * np.sqrt(var) * rng.standard_normal(sd.shape)
            elif z is not None:  # an observed value of a one-valued attribute adds nothing
                eta[:, :, j] += sd * z[:, :, ix]

    lab_new = labels.iloc[new]
    _, _, varying, pairs = _design(labels)  # the blocks of the model that keeps every value
    for c in varying:
        ix = [pos[c].get(v, -1) for v in lab_new[c]]
        add_block(c, ix, [inflate[c]] * len(ix))
    if interactions:
        for c1, c2 in pairs:
            n2 = len(levels[c2])
            ix, var = [], []
            for v1, v2 in zip(lab_new[c1], lab_new[c2], strict=True):
                i1, i2 = pos[c1].get(v1, -1), pos[c2].get(v2, -1)
                ix.append(i1 * n2 + i2 if i1 >= 0 and i2 >= 0 else -1)
                var.append((inflate[c1] if i1 < 0 else 1.0) * (inflate[c2] if i2 < 0 else 1.0))
            add_block(f"{c1}_{c2}", ix, var)
    if not binomial or len(varying) > 1:  # the full model's group effect
        var = scale_of("group")[:, :, None] ** 2
        if group_variance == "size":
            v = _variance_without_data(fitted.data, binomial)[None, :, None]
            var = var + scale_of("psi", PSI_SCALE)[:, :, None] ** 2 * v
        eta += np.sqrt(var) * rng.standard_normal(eta.shape)
    theta = np.empty((samples, n_measures, len(labels)))
    theta[:, :, idx] = th_fit
    theta[:, :, new] = 1.0 / (1.0 + np.exp(-eta)) if binomial else eta
    return idata, theta
