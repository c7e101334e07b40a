"""Posterior epsilon-DF, gamma-SF and bias amplification from fitted models (Algorithm 1)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .. import _arviz
from .._plotting import literal, new_axes
from .._repr import compact_repr
from .._result import ResultMixin, worst_diagnostics
from .._validation import (
    SeedLike,
    check_by,
    check_flag,
    check_open_probability,
    check_seed,
    intersection_labels,
)
from .._vocabulary import LEVEL, interval_columns, renamed_arguments
from ..metrics.fairness import epsilon_df, epsilon_df_argmax, gamma_sf, gamma_sf_argmax
from ._design import Design
from .base import FairnessModel

__all__ = ["PosteriorFairness", "posterior_fairness"]


def _p_full(p1: np.ndarray, present: np.ndarray) -> np.ndarray:
    p = np.stack([1.0 - p1, p1], axis=-1)
    return np.where(present[..., :, None], p, np.nan)


def _quantile(values: np.ndarray, q: float) -> float:
    """``np.quantile`` that reads infinite draws as the infinite values they are: linear
    interpolation between two infinite neighbours gives ``inf - inf = nan``, and the
    nearest draw is then the answer."""
    with np.errstate(invalid="ignore"):
        v = float(np.quantile(values, q))
    return float(np.quantile(values, q, method="nearest")) if np.isnan(v) else v


def _interval(values: np.ndarray, level: float) -> tuple[float, float]:
    """An interval holding ``level`` of the draws: the HDI when every draw is finite.

    A model whose probabilities reach 0 or 1 in floating point gives infinite epsilon
    draws.  When they are at most ``1 - level`` of the draws, the interval is the HDI of
    the finite draws that holds ``level`` of *all* draws; when they are more, it must
    reach infinity, from the ``1 - level`` quantile (``[-inf, level quantile]`` for
    ``-inf`` draws, which an amplification can have)."""
    finite = values[np.isfinite(values)]
    pos, neg = np.mean(values == np.inf), np.mean(values == -np.inf)
    if pos + neg <= 1 - level:
        mass = level / (1 - pos - neg)
        if len(finite) <= 2:
            return np.nan, np.nan
        if mass * len(finite) > len(finite) - 1:  # ArviZ needs at least one draw left out
            return float(finite.min()), float(finite.max())
        lo, hi = _arviz.hdi(finite, mass)
        return float(lo), float(hi)
    if neg == 0:
        return _quantile(values, 1 - level), np.inf
    if pos == 0:
        return -np.inf, _quantile(values, level)
    return -np.inf, np.inf


def _metric_summary(draws: np.ndarray, x: float, o: float, level: float) -> dict[str, float]:
    """O, X and the posterior of one metric.  Infinite draws count as such: they move the
    mean to infinity and the quantiles and interval towards it.  An amplification draw
    where both models' metric is infinite is undefined (``inf - inf``); those draws are
    counted in ``share_undefined`` and left out of the rest."""
    flat = draws.reshape(-1)
    defined = flat[~np.isnan(flat)]
    out = {"O (point estimate)": o, "X (posterior predictive)": x}
    if len(flat) > 1:
        if len(defined):
            with np.errstate(invalid="ignore"):
                mean = float(defined.mean())
            quartiles = [_quantile(defined, q) for q in (0.25, 0.5, 0.75)]
            lo, hi = _interval(defined, level)
        else:
            mean, quartiles, (lo, hi) = np.nan, [np.nan] * 3, (np.nan, np.nan)
        out.update(
            {
                "mean": mean,
                "q25": quartiles[0],
                "median": quartiles[1],
                "q75": quartiles[2],
                **interval_columns(lo, hi, level),
                "share_infinite": float(np.mean(np.isinf(flat))),
                "share_undefined": float(np.mean(np.isnan(flat))),
            }
        )
    return out


@dataclass
class PosteriorFairness(ResultMixin):  # numpydoc ignore=PR01
    """The paper's three estimates of each metric, with where they are attained.

    Attributes
    ----------
    draws : dict of numpy.ndarray
        Posterior draws (chain, draw) of ``epsilon``, ``gamma`` and, with a
        mechanism model, ``epsilon_mechanism``, ``gamma_mechanism`` and the
        amplifications ``df_amplification``, ``sf_amplification``.
    x, o : dict of float
        Plug-in of the posterior predictive ("X") and of the point estimate ("O").
    pairs : pandas.DataFrame
        Posterior probability of each (high group, low group, outcome) being the
        pair that attains epsilon: columns ``metric`` (``"epsilon"``, and with a
        mechanism ``"epsilon_mechanism"``), ``high``, ``low``, ``outcome`` and
        ``probability``, most probable first within each metric.
    gamma_groups : pandas.DataFrame
        Posterior probability of each intersection attaining gamma: columns ``metric``
        (``"gamma"``, and ``"gamma_mechanism"``), ``intersection``, ``probability``.
    model_names : tuple of str
        The data model's name and, with a mechanism, the mechanism model's.
    level : float
        Credible mass of the reported intervals.
    excluded : list of str
        Intersections left out of epsilon (no rows).
    diagnostics : dict
        Model name -> its sampler diagnostics (``diagnostics_``; empty for exact draws).
    """

    __repr__ = compact_repr

    draws: dict[str, np.ndarray]
    x: dict[str, float]
    o: dict[str, float]
    pairs: pd.DataFrame
    gamma_groups: pd.DataFrame
    model_names: tuple[str, ...]
    level: float = LEVEL
    excluded: list[str] = field(default_factory=list)
    diagnostics: dict[str, dict] = field(default_factory=dict)

    @property
    def notes(self) -> list[str]:
        """What the intervals in :meth:`summary` are and are not: the posterior's, not
        checked for coverage here (:func:`~bayesfair.interval_calibration` checks them);
        or, for a fit with one draw (``method="map"``), that there is none."""
        if all(d.size <= 1 for d in self.draws.values()):
            return [
                "a point estimate (method='map'): one draw, no posterior, so no interval; "
                "fit with method='nuts' (or 'advi') for the posterior and its intervals"
            ]
        return [
            f"lower and upper are the posterior's {self.level:.0%} intervals, not checked "
            "for coverage here: a posterior of a largest log-ratio (epsilon-DF) sits above "
            "the truth where intersections are small or alike, and its interval can miss "
            "more often than its level says. bayesfair.interval_calibration(data) measures "
            "how often they cover on replicate tables like this one and gives the calibrated "
            "interval bayesfair.audit reports."
        ]

    def summary(self) -> pd.DataFrame:
        """One row per metric: O, X, posterior mean, quartiles, HDI, and the shares of
        infinite draws (a model probability of exactly 0 or 1 in floating point) and of
        undefined ones (an amplification of two infinite metrics, ``inf - inf``); with
        sampled models, the worst of their sampler diagnostics (largest R-hat, smallest
        bulk and tail ESS, divergences), so that a summary of a poor fit says so.

        Returns
        -------
        pandas.DataFrame
        """
        rows = []
        for name, d in self.draws.items():
            row = {"metric": name}
            row.update(_metric_summary(d, self.x[name], self.o[name], self.level))
            row.update(worst_diagnostics(self.diagnostics.values()))
            rows.append(row)
        return pd.DataFrame(rows)

    def plot(self, ax=None):
        """Box plots of the posterior of every metric with the O and X markers (paper Fig. 4).

        Parameters
        ----------
        ax : sequence of matplotlib.axes.Axes, optional
            One per metric (``len(draws)``); default a new figure.

        Returns
        -------
        numpy.ndarray of matplotlib.axes.Axes
        """
        names = list(self.draws)
        axes = new_axes(ax, figsize=(2.2 * len(names) + 1, 3.6), count=len(names))
        for ax_, name in zip(axes, names, strict=True):
            d = self.draws[name].reshape(-1)
            d = d[np.isfinite(d)]
            ax_.boxplot(d, widths=0.5, showfliers=False)
            ax_.plot([1], [self.o[name]], "o", mfc="none", mec="k", ms=9, label="O (point est.)")
            ax_.plot([1], [self.x[name]], "x", color="C3", ms=9, label="X (post. predictive)")
            ax_.set_title(literal(name), fontsize=9)
            ax_.set_xticks([])
            ax_.grid(axis="y", alpha=0.3)
        axes[0].legend(fontsize=7, loc="best")
        axes[0].figure.suptitle(literal(" vs ".join(self.model_names)), fontsize=9)
        return axes


def _shares(metric: str, key: dict[str, tuple[np.ndarray, np.ndarray | None]]) -> pd.DataFrame:
    """How often each row of ``key`` occurs, most often first (ties in the order of their
    first draw), under a ``metric`` column: ``DataFrame.value_counts(normalize=True)`` of
    the columns ``key`` describes, each as per-draw codes and the labels they index (None:
    the codes are the values). Counted on the codes and labelled once, not per draw."""
    codes = np.column_stack([c for c, _ in key.values()]).astype(np.int64)
    # one integer per draw (mixed radix over the columns): a 1-d unique, many times faster
    # than unique(axis=0) of rows; the order below depends on the counts and first draws only
    radix = codes.max(axis=0, initial=0) + 1
    keys = np.ravel_multi_index(tuple(codes.T), tuple(radix))
    _, first, counts = np.unique(keys, return_index=True, return_counts=True)
    order = np.argsort(first)
    order = order[np.argsort(-counts[order], kind="stable")]
    rows, counts = codes[first[order]], counts[order]
    out = pd.DataFrame(
        {
            name: rows[:, i] if labels is None else labels[rows[:, i]]
            for i, (name, (_, labels)) in enumerate(key.items())
        }
    )
    out.insert(0, "metric", metric)
    out["probability"] = counts / counts.sum()
    return out


def _groups_of(d: Design, by: str | Sequence[str] | None) -> tuple[np.ndarray, list[str]]:
    """The group of every intersection and the groups' labels: the intersections
    themselves, or the groups of the protected attributes ``by`` (in ``by``'s order)."""
    if by is None:
        return np.arange(d.n_groups), list(d.labels)
    cols = check_by(by, d.attributes)
    index = [d.attributes.index(c) for c in cols]
    shape = tuple(len(d.categories[c]) for c in cols)
    group_of = np.ravel_multi_index(tuple(d.codes[i] for i in index), shape)
    labels = intersection_labels(itertools.product(*(d.categories[c] for c in cols)), cols)
    return group_of, labels


def _average(p: np.ndarray, share: np.ndarray, member: np.ndarray) -> np.ndarray:
    """P(y=1 | group): P(y=1 | s) averaged over each group's intersections (``member``,
    an indicator matrix intersection x group) with weights P(s) (``share``: shaped like
    ``p``, or one vector for every draw); NaN for a group without weight. Intersections
    of P(s) = 0 (no rows) take no part, whatever the model says of them."""
    w = np.broadcast_to(share, p.shape)
    num = (np.where(w > 0, p, 0.0) * w) @ member
    den = w @ member
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _draws_of(model: FairnessModel, n_draws: int | None, rng) -> np.ndarray:
    p = model.p_draws_.reshape(-1, model.p_draws_.shape[-1])
    if n_draws is None or len(p) == n_draws:
        return p
    return p[rng.integers(0, len(p), n_draws)]


@renamed_arguments(prob="level")
def posterior_fairness(
    model: FairnessModel,
    mechanism: FairnessModel | None = None,
    *,
    include_empty: bool = False,
    level: float = LEVEL,
    point: bool = True,
    p_s: str = "posterior",
    by: str | Sequence[str] | None = None,
    random_state: SeedLike = None,
) -> PosteriorFairness:
    """epsilon-DF and gamma-SF of a fitted model of P(y|s), and the bias amplification of a
    mechanism (Foulds et al. Algorithm 1).

    Parameters
    ----------
    model : FairnessModel
        Fitted on the true labels (or any target of interest).
    mechanism : FairnessModel, optional
        Fitted on the mechanism's decisions for the same intersections; adds
        the mechanism's metrics and the amplification ``mechanism - data``.
        The two posteriors are independent, so their draws are paired at random.
    include_empty : bool
        Whether intersections without rows enter epsilon (default: no, as
        P(s) = 0 there, and gamma gives them P(s) = 0; see ``p_s``).
    level : float
        Credible mass (default: the package's 0.90).
    point : bool, default True
        Compute the point-estimate ("O") values; for PyMC models this runs an
        optimisation (MAP), which simulation studies may skip (O is then NaN).
    p_s : {"posterior", "empirical"}
        P(s) in gamma-SF's posterior.  ``"posterior"`` (default) draws it with every
        draw of P(y|s), from Dirichlet(N_s) over the non-empty intersections (the
        Bayesian bootstrap, Rubin 1981; its mean is the empirical frequency): gamma
        of the population the rows were drawn from, whose P(s) the sample only
        estimates (gamma's definition takes P(s) from the same distribution as
        P(y|s)).  ``"empirical"`` fixes P(s) at the sample's frequencies, as the
        plug-ins X and O do either way: gamma of the audited sample itself, with
        narrower intervals.  With a mechanism, both models share each draw of P(s).
        On the Gaussian threshold generator (Dirichlet-multinomial, 300 replicates
        per setting, truth with the generating P(s)), 90% intervals covered gamma in
        0.79-0.91 of replicates with the empirical P(s) and 0.88-0.93 with the
        posterior one on race 4 x sex 2 at 500 and 2,000 rows, three truths each
        (``pytest -s tests/models/test_models.py -k p_s_covers`` runs three of the six).
    by : str or list of str, optional
        Compare the groups of a subset of the protected attributes (race alone, say)
        instead of the intersections, from the same intersectional model: every draw
        of ``P(y | s_by)`` is the average of the draw's ``P(y | s)`` over the
        intersections in the group, weighted by P(s) (as ``p_s`` says; the plug-ins use
        the empirical P(s)). Each draw's epsilon over a subset is at most its epsilon
        over the intersections (Foulds et al.'s intersectionality property), so a
        marginal audit can look fairer than the intersectional one, never less fair.
        Groups without rows are left out (``excluded``); ``include_empty`` applies to
        intersections only.
    random_state : None, int, or numpy SeedSequence, Generator or RandomState, optional
        Seeds the pairing of draws and the draws of P(s).

    Returns
    -------
    PosteriorFairness
        ``.summary()``, ``.plot()``, ``.draws``, ``.pairs``.

    Notes
    -----
    Every model here gives each intersection a rate of its own, so each draw's epsilon (a
    largest absolute log-ratio) and gamma are positive: where the population is fair or
    nearly so, the posterior sits above the truth and its HDI can exclude it, a fair
    population's 0 always (notebook 02, section 6, measures it). The intervals of
    :func:`~bayesfair.frequentist.fairness_confidence_interval` hold there too.

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.models import DirichletMultinomial, posterior_fairness
    >>> data = make_gaussian_threshold(n_rows=3000, random_state=0).audit_data()
    >>> fit = DirichletMultinomial(random_state=0).fit(data)
    >>> posterior_fairness(fit).summary()["metric"].tolist()
    ['epsilon', 'gamma']
    """
    d = _checked_design(model, mechanism)
    if p_s not in ("empirical", "posterior"):
        raise ValueError(f"`p_s` must be 'empirical' or 'posterior', got {p_s!r}")
    check_open_probability(level, "level")
    check_flag(include_empty, "include_empty")
    check_flag(point, "point")
    seq = check_seed(random_state)
    rng = np.random.default_rng(seq)
    group_of, group_labels = _groups_of(d, by)
    if group_labels == d.labels:
        by = None  # every attribute in the table's order: the intersections themselves
    if by is not None and include_empty:
        raise ValueError("`include_empty` applies to intersections, not to the groups of `by`")
    present = (np.bincount(group_of, d.n, len(group_labels)) > 0) | include_empty
    excluded = [lab for lab, pr in zip(group_labels, present, strict=True) if not pr]

    models = {"": model} if mechanism is None else {"": model, "_mechanism": mechanism}
    # draws per model: every draw of the model, or (with a mechanism) the larger model's
    n_draws = max(m.p_draws_.shape[0] * m.p_draws_.shape[1] for m in models.values())
    g = _Groups.of(d, seq, p_s, n_draws, present, group_of, group_labels, by)
    draws: dict[str, np.ndarray] = {}
    x: dict[str, float] = {}
    o: dict[str, float] = {}
    pairs, gamma_groups = [], []
    for suffix, m in models.items():
        p1 = _draws_of(m, n_draws if mechanism is not None else None, rng)
        found = _model_metrics(m, p1, g, point)
        for name in ("epsilon", "gamma"):
            draws[name + suffix], x[name + suffix], o[name + suffix] = found[name]
        pairs.append(_shares("epsilon" + suffix, found["pairs"]))
        gamma_groups.append(_shares("gamma" + suffix, found["gamma_groups"]))
    if mechanism is not None:
        for metric in ("epsilon", "gamma"):
            amp = "df_amplification" if metric == "epsilon" else "sf_amplification"
            with np.errstate(invalid="ignore"):  # inf - inf: undefined, kept as NaN
                draws[amp] = draws[f"{metric}_mechanism"] - draws[metric]
                x[amp] = x[f"{metric}_mechanism"] - x[metric]
                o[amp] = o[f"{metric}_mechanism"] - o[metric]
    names = tuple(type(m).__name__ for m in models.values())
    return PosteriorFairness(
        draws=draws,
        x=x,
        o=o,
        pairs=pd.concat(pairs, ignore_index=True),
        gamma_groups=pd.concat(gamma_groups, ignore_index=True),
        model_names=names,
        level=level,
        excluded=excluded,
        diagnostics={
            type(m).__name__ + suffix: dict(m.diagnostics_)
            for suffix, m in models.items()
            if getattr(m, "diagnostics_", None)
        },
    )


def _checked_design(model, mechanism):
    """The table of ``model`` (a fitted model), which ``mechanism`` (if any) must share."""
    for arg, m in (("model", model), ("mechanism", mechanism)):
        if (m is not None or arg == "model") and not isinstance(m, FairnessModel):
            raise TypeError(
                f"`{arg}` must be a fitted bayesfair model (DirichletMultinomial, ..., "
                f"model_average), got {type(m).__name__}"
            )
        if m is not None:
            m._check_fitted()
    d = model.design_
    if mechanism is not None and (
        mechanism.design_.labels != d.labels or not np.array_equal(mechanism.design_.n, d.n)
    ):
        raise ValueError(
            "`model` and `mechanism` must be fitted on the same intersections and rows"
        )
    return d


@dataclass(frozen=True)
class _Groups:
    """The compared groups: which are present, each intersection's membership (None: the
    intersections themselves), and P(s) fixed and per draw, of intersections and groups."""

    labels: np.ndarray
    present: np.ndarray
    member: np.ndarray | None
    share: np.ndarray
    share_draws: np.ndarray
    group_share: np.ndarray
    group_share_draws: np.ndarray

    @classmethod
    def of(cls, d, seq, p_s: str, n_draws: int, present, group_of, group_labels, by):
        share = d.n / d.n.sum()  # the empirical P(s)
        share_draws = share  # P(s) in gamma's draws: fixed, or one draw per draw of P(y|s)
        if p_s == "posterior":
            # its own stream, so that the draws of P(y|s) are those of p_s="empirical"
            entropy = [seq.entropy] if np.ndim(seq.entropy) == 0 else list(seq.entropy)
            share_rng = np.random.default_rng(
                np.random.SeedSequence([*entropy, 1], spawn_key=seq.spawn_key)
            )
            share_draws = np.zeros((n_draws, len(d.n)))
            share_draws[:, d.n > 0] = share_rng.dirichlet(d.n[d.n > 0], n_draws)
        # P(s) of the compared groups: the intersections' own, or pooled over each group
        member = None if by is None else np.eye(len(group_labels))[group_of]
        return cls(
            labels=np.asarray(group_labels),
            present=present,
            member=member,
            share=share,
            share_draws=share_draws,
            group_share=share if member is None else share @ member,
            group_share_draws=share_draws if member is None else share_draws @ member,
        )


def _model_metrics(m, p1: np.ndarray, g: _Groups, point: bool) -> dict:
    """Of one model: epsilon's and gamma's (draws, x, o), and which pair attains epsilon
    and which group gamma in every draw."""
    pp = m.predict_proba()
    if g.member is not None:
        p1 = _average(p1, g.share_draws, g.member)
        pp = _average(pp, g.share, g.member)
    pf = _p_full(p1, g.present)
    x_eps = float(epsilon_df(_p_full(pp, g.present)))
    x_gamma = float(gamma_sf(pp, g.group_share))
    o_eps = o_gamma = np.nan
    if point:
        po = m.p_point_ if g.member is None else _average(m.p_point_, g.share, g.member)
        o_eps = float(epsilon_df(_p_full(np.where(g.present, po, 0.5), g.present)))
        o_gamma = float(gamma_sf(np.where(g.group_share > 0, po, 0.0), g.group_share))
    i, j, y = (a.reshape(-1) for a in epsilon_df_argmax(pf))
    return {
        "epsilon": (epsilon_df(pf), x_eps, o_eps),
        "gamma": (gamma_sf(p1, g.group_share_draws), x_gamma, o_gamma),
        "pairs": {"high": (i, g.labels), "low": (j, g.labels), "outcome": (y, None)},
        "gamma_groups": {
            "intersection": (gamma_sf_argmax(p1, g.group_share_draws).reshape(-1), g.labels)
        },
    }
