"""One entry point for disaggregated evaluation with a choice of estimators."""

from __future__ import annotations

import itertools
import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Real
from typing import Any

import numpy as np
import pandas as pd

from .. import _arviz
from .._names import safe_names
from .._plotting import literal, literals
from .._repr import compact_repr
from .._result import ResultMixin, worst_diagnostics
from .._sampling import SamplerWarning
from .._validation import (
    SeedLike,
    check_axes,
    check_count,
    check_flag,
    check_random_state,
    check_resamples,
)
from .._vocabulary import (
    LEVEL,
    N_VARIANCE_RESAMPLES,
    ROLE_RENAMES,
    interval_columns,
    moved_options,
    renamed_arguments,
)
from .._warning_location import user_stacklevel
from ..data import AuditData
from .estimators import (
    ESTIMATORS,
    EmpiricalBayes,
    HierarchicalBayes,
    StructuredRegression,
    empirical_bayes_caveat,
    hierarchical_bayes_caveat,
    resolve_estimators,
    structured_regression_caveat,
)
from .groups import COUNT_METRICS, GroupedData, metric_name, pooled_sigma2
from .hierarchical import fit_hierarchical, pinned_down
from .shrinkage import empirical_bayes, james_stein, standard_intervals
from .structured import (
    drop_target_copies,
    goodness_of_fit,
    group_features,
    structured_regression,
)

__all__ = ["ESTIMATORS", "DisaggregatedResult", "disaggregated_evaluation"]


def truncate_to_range(values, metric):
    """A rate or an AUC lies in [0, 1]: estimates, draws and interval ends are truncated to it
    (which keeps every value in [0, 1] an interval covered); a user metric's range is
    unknown, so its values are left as they are."""
    return values if callable(metric) else np.clip(values, 0.0, 1.0)


def _truncate_interval(interval, metric):
    lo, hi = interval
    return truncate_to_range(lo, metric), truncate_to_range(hi, metric)


@dataclass
class DisaggregatedResult(ResultMixin):  # numpydoc ignore=PR01
    """Per-group estimates of every metric by every estimator.

    Attributes
    ----------
    table : pandas.DataFrame
        Tidy: group, the sensitive features, n, metric, estimator, estimate,
        lower, upper (at ``level``; NaN where an estimator has no interval) and
        ``defined`` (whether the group's standard estimate exists).
    intervals : pandas.DataFrame
        Intervals at every requested level (group, metric, estimator, level, lower, upper).
    sigma2 : dict
        Pooled variance parameter sigma^2 of each metric (sigma_a^2 = sigma^2 / n_a); 0 when
        every group's estimate is 0 or 1, NaN when no group has a bootstrap variance.
    level : float
        Confidence level of ``lower`` and ``upper`` in ``table``.
    structured : dict
        Per metric: chosen lambda, selected features, coefficients, the features left
        out because they copy the metric (``dropped``), and the variance of the groups'
        departures from the surface in rBLPR's bootstrap world (``departure_variance``:
        ``(tau2, phi)``, group a's is ``tau2 + phi * sigma2 / n_a``).
    idata : dict
        ArviZ InferenceData of the hierarchical model(s): "binomial", "fay_herriot".
    diagnostics : dict
        Per hierarchical model: divergences, largest R-hat, smallest bulk ESS (problems
        also raise a ``SamplerWarning``).
    grouped : GroupedData
        The coded rows (used by :meth:`goodness_of_fit`).
    eb_interval : str
        Which empirical-Bayes interval the table holds ("prasad_rao", "posterior" or
        "robust", whose estimates are the robust empirical Bayes ones too).
    structured_estimator : StructuredRegression or None
        The options of the structured regression the table holds (None without it).
    hierarchical_estimator : HierarchicalBayes or None
        The options of the hierarchical model the table holds (None without it).
    metric_definitions : dict
        Each metric's definition by name (a count metric's name, ``"auc"`` or the user's
        function), so that :meth:`goodness_of_fit` can recompute it on part of the rows.
    """

    __repr__ = compact_repr

    table: pd.DataFrame
    intervals: pd.DataFrame
    sigma2: dict
    level: float
    structured: dict = field(default_factory=dict)
    idata: dict = field(default_factory=dict)
    diagnostics: dict = field(default_factory=dict)
    grouped: GroupedData | None = field(default=None, repr=False)
    eb_interval: str = "prasad_rao"
    structured_estimator: StructuredRegression | None = None
    hierarchical_estimator: HierarchicalBayes | None = None
    metric_definitions: dict = field(default_factory=dict, repr=False)

    @property
    def notes(self) -> list[str]:
        """What the intervals in ``table`` do not hold: structured regression's, empirical
        Bayes' and hierarchical Bayes' are calibrated on average over groups, not group by
        group (:func:`~bayesfair.disaggregated.structured_regression_caveat`,
        :func:`~bayesfair.disaggregated.empirical_bayes_caveat`,
        :func:`~bayesfair.disaggregated.hierarchical_bayes_caveat`), and the metrics whose
        structured-regression departure variance came out 0 in this evaluation set (their
        intervals carry the fitted surface's uncertainty alone); empty without them."""
        have = set(self.table["estimator"])
        notes = []
        if "structured" in have:
            notes.append(structured_regression_caveat(self.structured_estimator))
            sr = self.structured_estimator or StructuredRegression()
            flat = _without_departures(self.structured) if sr.departures else []
            if flat:
                notes.append(_no_departure_note(flat))
        if "empirical_bayes" in have:
            notes.append(empirical_bayes_caveat(self.eb_interval))
        if "hierarchical" in have:
            hb = self.hierarchical_estimator
            notes.append(hierarchical_bayes_caveat("size" if hb is None else hb.group_variance))
        return notes

    def to_frame(self) -> pd.DataFrame:
        """The tidy per-group, per-metric, per-estimator table (``table``).

        Returns
        -------
        pandas.DataFrame
        """
        return self.table

    def summary(self) -> pd.DataFrame:
        """One row per metric and estimator: groups with an estimate, groups with an
        interval, the mean interval width, and that width relative to the standard
        estimator's on the same groups (how much an estimator narrows the intervals).

        Returns
        -------
        pandas.DataFrame
        """
        t = self.table.assign(width=self.table["upper"] - self.table["lower"])
        std = t[t["estimator"] == "standard"].set_index(["metric", "group"])["width"]
        rows = []
        for metric, est in itertools.product(pd.unique(t["metric"]), pd.unique(t["estimator"])):
            part = t[(t["metric"] == metric) & (t["estimator"] == est)]
            if part.empty:
                continue
            w = part["width"].to_numpy(float)
            base = std.reindex(pd.MultiIndex.from_arrays([part["metric"], part["group"]]))
            b = base.to_numpy(float)
            both = ~np.isnan(w) & ~np.isnan(b)  # groups where both have an interval
            ratio = w[both].mean() / b[both].mean() if both.any() and b[both].mean() > 0 else np.nan
            rows.append(
                {
                    "metric": metric,
                    "estimator": est,
                    "groups": len(part),
                    "with_estimate": int(part["estimate"].notna().sum()),
                    "with_interval": int((~np.isnan(w)).sum()),
                    "mean_width": float(np.nanmean(w)) if (~np.isnan(w)).any() else np.nan,
                    "width_vs_standard": float(ratio),
                    # hierarchical Bayes' sampler diagnostics, of the model that fits it
                    **(
                        worst_diagnostics([self.diagnostics.get(_hb_model(metric), {})])
                        if est == "hierarchical"
                        else {}
                    ),
                }
            )
        return pd.DataFrame(rows)

    def _rows(self, metric: str) -> pd.DataFrame:
        """The table's rows of ``metric``; a metric the result lacks is a ValueError."""
        have = list(pd.unique(self.table["metric"]))
        if not isinstance(metric, str) or metric not in have:
            raise ValueError(f"metric {metric!r} is not in this result; it has {have}")
        return self.table[self.table["metric"] == metric]

    def estimates(self, metric: str) -> pd.DataFrame:
        """Wide table of one metric: a column per estimator.

        Parameters
        ----------
        metric : str
            A metric of the result (the name of a callable metric for user metrics).

        Returns
        -------
        pandas.DataFrame
            One row per group (``group``, ``n``), one column per estimator.
        """
        t = self._rows(metric)
        wide = t.pivot(index=["group", "n"], columns="estimator", values="estimate")
        order = pd.MultiIndex.from_frame(t[["group", "n"]].drop_duplicates())
        wide = wide.reindex(index=order, columns=pd.unique(t["estimator"]))
        wide.columns.name = "estimator"
        return wide.reset_index()

    def goodness_of_fit(
        self,
        metric: str | Callable,
        explanatory: Mapping[str, Callable] | None = None,
        outcome_rates: bool = True,
        split: bool = False,
        random_state: SeedLike = None,
    ) -> pd.DataFrame:
        """The paper's Table 1 layout: expl vs intercept, sens vs intercept, expl+sens vs
        expl, expl+sens+Y.sens vs expl+sens (no group identities: they fit perfectly).

        Parameters
        ----------
        metric : str or callable
            A metric of the result, by name (or as the function it was given as).
        explanatory : mapping of str to callable, optional
            Explanatory features ``{name: f(frame) -> one value per row}`` (group means),
            beside the outcome rate.
        outcome_rates : bool, default True
            Whether the explanatory features include the group's outcome rate ``P(Y=1)``
            (the paper's ``phi_ay``). ``False`` tests the other explanatory features
            alone: comparing both says whether a metric's differences follow the groups'
            base rates (a rate conditioned on the decision, such as PPV, does at a fixed
            threshold) or the other features.
        split : bool, default False
            Compute the explanatory features (and ``Y.sens``) on a random half of each
            group's rows and the metric's estimates on the other half, so that the
            features are independent of the estimates' noise, as the F-test assumes.
            The default computes both on all rows, as the paper does.
        random_state : None, int, or numpy SeedSequence, Generator or RandomState, optional
            Seed of the split (``split=True`` only).

        Returns
        -------
        pandas.DataFrame
            As :func:`~bayesfair.disaggregated.goodness_of_fit`, with a ``metric`` column.

        Notes
        -----
        The F-test treats the features as fixed. A group's outcome rate estimated on the
        same rows as its PPV is not: both count the group's positives, so their errors are
        correlated and the explanatory features appear to explain PPV where nothing does.
        Under a null with no structure (y independent of everything, 32 groups, 5,000
        rows) the paper's test of PPV's explanatory features rejects at 0.05 about half
        the time, the split one at about the nominal rate
        (``tests/disaggregated/test_structured.py`` measures both). The split costs
        power: each side sees half the rows.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from bayesfair.disaggregated import disaggregated_evaluation
        >>> rng = np.random.default_rng(0)
        >>> df = pd.DataFrame({"race": rng.choice(list("ABC"), 3000),
        ...                    "sex": rng.choice(list("FM"), 3000)})
        >>> df["y"] = (rng.random(3000) < 0.3).astype(int)
        >>> df["d"] = (rng.random(3000) < 0.4).astype(int)
        >>> res = disaggregated_evaluation(df, ["race", "sex"], "y", "d",
        ...                                metrics=["ppv"], estimators=["standard"])
        >>> fit = res.goodness_of_fit("ppv", split=True, random_state=0)
        >>> fit[["model", "versus"]].values.tolist()[0]
        ['expl', 'intercept']
        """
        check_flag(outcome_rates, "outcome_rates")
        check_flag(split, "split")
        name = metric
        if callable(metric):
            given = [k for k, f in self.metric_definitions.items() if f is metric]
            name = given[0] if given else metric_name(metric)
        self._rows(name)  # a metric the result lacks is refused before any work
        gd = self.grouped
        if split:
            definition = metric if callable(metric) else self.metric_definitions.get(name)
            if definition is None:
                raise ValueError(
                    f"split=True recomputes the estimates of {name!r} on half the rows and "
                    "this result does not hold its definition: pass the metric's function"
                )
            half = gd.folds(2, check_random_state(random_state)) == 0
            feature_rows, rows, s = half, ~half, gd.estimate(definition, ~half)
        else:
            t = self._rows(name)
            feature_rows = rows = None
            s = t.loc[t["estimator"] == "standard", "estimate"].to_numpy(float)
        models = _table1_models(gd, s, explanatory, outcome_rates, feature_rows, rows, name)
        comparisons = [
            ("expl", "intercept"),
            ("sens", "intercept"),
            ("expl+sens", "expl"),
            ("expl+sens+Y.sens", "expl+sens"),
        ]
        fit = goodness_of_fit(gd, s, self.sigma2[name], models, comparisons, rows=rows)
        return fit.assign(metric=name)

    def plot(
        self,
        metric: str | None = None,
        estimators: Sequence[str] | None = None,
        ax=None,
        truth: Mapping[str, float] | None = None,
        labels: str = "group",
        max_groups: int | None = None,
    ):
        """Figure 1 of Herlihy et al.: estimates and intervals by group, ordered by size.

        ``estimators`` default to standard and hierarchical (those of them the result
        has; every estimator it has when it has neither).  ``truth`` (group label ->
        value) adds the true values, for simulations.
        ``labels`` marks each group on the axis by its name and size (``"group"``, the
        default, so that a reader can tell which groups the data cannot speak for) or by
        its size alone (``"size"``, as the paper's figure).  ``max_groups`` keeps the plot to that
        many of the smallest groups (the axis label says so); a default figure is 0.3 inch
        wide per group shown.

        Parameters
        ----------
        metric : str, optional
            A metric of the result; default its first (the only one, often), so that
            ``plot()`` and ``plot(ax=ax)`` draw as every result's plot does.
        estimators : sequence of str, optional
            Estimators to show side by side.
        ax : matplotlib.axes.Axes, optional
            Draw into it; default a new figure.
        truth : mapping, optional
            Group label -> true value.
        labels : {"group", "size"}
        max_groups : int, optional
            Show only this many groups, the smallest; default all.

        Returns
        -------
        matplotlib.axes.Axes
        """
        import matplotlib.pyplot as plt

        if labels not in ("size", "group"):
            raise ValueError(f"`labels` must be 'size' or 'group', got {labels!r}")
        t = self._rows(self.table["metric"].iloc[0] if metric is None else metric)
        have = list(pd.unique(t["estimator"]))
        if estimators is None:
            estimators = [e for e in ("standard", "hierarchical") if e in have] or have
        missing = [e for e in estimators if e not in have]
        if missing:
            raise ValueError(f"estimator(s) {missing} are not in this result; it has {have}")
        if max_groups is not None:
            check_count(max_groups, "max_groups")
        check_axes(ax)
        if truth is not None:
            if not isinstance(truth, (Mapping, pd.Series)):
                raise TypeError(
                    "`truth` must map group labels to true values (a dict or a Series "
                    f"indexed by group), got {type(truth).__name__}"
                )
            truth = pd.Series(truth, dtype=float)
            named = pd.unique(t["group"])
            if not truth.index.isin(named).any():
                raise ValueError(
                    f"`truth` names none of the result's groups (it has {list(truth.index)[:3]}"
                    f"{' ...' if len(truth) > 3 else ''}; the groups are like {list(named)[:3]})"
                )
        groups = t.drop_duplicates("group").sort_values("n", kind="stable")
        n_all = len(groups)
        groups = groups.iloc[: max_groups or n_all]
        t = t[t["group"].isin(groups["group"])]
        order = {g: i for i, g in enumerate(groups["group"])}
        if ax is None:
            _, ax = plt.subplots(figsize=(max(6, 0.3 * len(order)), 3.5))
        width = 0.7 / max(1, len(estimators))
        for j, est in enumerate(estimators):
            e = t[t["estimator"] == est]
            x = e["group"].map(order).to_numpy() + (j - (len(estimators) - 1) / 2) * width
            y = e["estimate"].to_numpy()
            lo, hi = e["lower"].to_numpy(), e["upper"].to_numpy()
            fin = np.isfinite(lo) & np.isfinite(hi)
            ax.vlines(x[fin], lo[fin], hi[fin], color=f"C{j}", lw=1)
            ax.plot(x, y, "o", ms=3, color=f"C{j}", label=literal(est))
        if truth is not None:
            tv = groups["group"].map(truth)
            ax.scatter(
                groups["group"].map(order),
                tv,
                marker="_",
                s=120,
                color="k",
                label="truth",
                zorder=3,
            )
        ax.set_xticks(range(len(order)))
        shown = f"; the {len(order)} smallest of {n_all} groups" if len(order) < n_all else ""
        if labels == "size":
            ax.set_xticklabels(groups["n"].astype(int), fontsize=7, rotation=90)
            ax.set_xlabel("group size (groups ordered by size)" + shown)
        else:
            ticks = [f"{g} (n={n})" for g, n in zip(groups["group"], groups["n"], strict=True)]
            ax.set_xticklabels(literals(ticks), fontsize=7, rotation=90)
            ax.set_xlabel("group (ordered by size)" + shown)
        ax.set_ylabel(literal(metric))
        ax.legend(frameon=False, fontsize=8)
        return ax


def _hb_model(metric: str) -> str:
    """The hierarchical model that fits ``metric``: binomial for a count metric, the
    Fay-Herriot model for the others (AUC, callables)."""
    return "binomial" if metric_name(metric) in COUNT_METRICS else "fay_herriot"


def _model_variables(idata) -> list[str]:
    """The hierarchical model's variables other than the group values (theta, eta), which
    its diagnostics cover."""
    return [v for v in idata.posterior.data_vars if v not in ("theta", "eta")]


def _worst_r_hat(idata) -> str | None:
    """The variable (other than the group values) with the fit's largest R-hat, where that
    is above the threshold; otherwise None."""
    r_hat = _arviz.r_hat_by_variable(idata, _model_variables(idata))
    if not r_hat or max(r_hat.values()) <= _arviz.R_HAT_MAX:
        return None
    return max(r_hat, key=r_hat.get)


def _sampler_advice(idata, diag, labels, sizes, *, target_accept, main_effects, draws) -> str:
    """What to change when a hierarchical fit has sampler problems, in the order that
    removes them: a larger target acceptance for divergences, or, where ``"auto"`` sampled
    some main effects partially centred (``_partial_centring``), non-centred main effects;
    centred main effects when the worst R-hat is in the main effect of an attribute whose
    values all have many rows (``pinned_down``: the data pin those effects down, so the
    non-centred scale mixes slowly), and under ``"auto"`` non-centred ones as the other
    way out; otherwise, for an R-hat problem without divergences, more draws (slow
    mixing). The fits that showed each case are in the commits that added the advice."""
    advice = ""
    if diag["divergences"] > 0:
        advice = (
            "; a larger target acceptance (HierarchicalBayes(target_accept=...), now "
            f"{target_accept}) usually removes them"
        )
        centred = json.loads(idata.posterior.attrs.get("centred_main_effects", "[]"))
        if main_effects == "auto" and centred:
            advice += (
                f"; if not, the main effects of {centred} are sampled partially centred "
                "(main_effects='auto'), and HierarchicalBayes(main_effects='non-centred') may "
                "remove "
                "them, at the price of slower mixing where their values have many rows"
            )
    worst = _worst_r_hat(idata)
    if worst is None:
        return advice
    var = safe_names(labels.columns)
    attribute = {f"{p}_{var[c]}": c for c in labels.columns for p in ("sigma", "z")}.get(worst)
    if (
        attribute is not None
        and main_effects != "centred"
        and pinned_down(labels[attribute], sizes)
    ):
        said = (
            f"; the largest R-hat is in the main effect of {attribute!r}, whose values "
            "all have many rows: HierarchicalBayes(main_effects='centred') usually mixes it "
            "better"
        )
        if main_effects == "auto":  # partially centred already: either way may help
            said += (
                " where the groups differ little beyond their main effects, "
                "'non-centred' where they do (interactions, group effects)"
            )
        return advice + said
    if diag["divergences"] == 0:
        advice += (
            f"; the largest R-hat is in `{worst}`, and with no divergent transitions that is "
            f"slow mixing: more draws (HierarchicalBayes(draws=...), now {draws}) usually "
            f"bring it under {_arviz.R_HAT_MAX}"
        )
    return advice


#: the flat options the estimators now carry: old keyword -> where it lives now
MOVED_OPTIONS = {
    "n_resamples": "StructuredRegression(n_resamples=...)",
    "n_bootstrap": "StructuredRegression(n_resamples=...)",
    "interactions": "StructuredRegression(interactions=...)",
    "explanatory": "StructuredRegression(explanatory=...)",
    "outcome_rates": "StructuredRegression(outcome_rates=...)",
    "sr_interval": "StructuredRegression(interval=...)",
    "sr_ridge": "StructuredRegression(ridge=...)",
    "eb_interval": "EmpiricalBayes(interval=...)",
    "hb_draws": "HierarchicalBayes(draws=...)",
    "hb_tune": "HierarchicalBayes(tune=...)",
    "hb_chains": "HierarchicalBayes(chains=...)",
    "hb_target_accept": "HierarchicalBayes(target_accept=...)",
    "hb_main_effects": "HierarchicalBayes(main_effects=...)",
    "hb_point_estimate": "HierarchicalBayes(point_estimate=...)",
}


@moved_options(MOVED_OPTIONS, into="estimators")
@renamed_arguments(
    **ROLE_RENAMES,
    levels="level",
    n_bootstrap_variance="n_variance_resamples",
)
def disaggregated_evaluation(
    data: pd.DataFrame,
    protected: Sequence[str] | None = None,
    outcome: str | None = None,
    decision: str | None = None,
    score: str | None = None,
    *,
    metrics: Sequence[str | Callable] | Mapping[str, str | Callable] = (
        "selection_rate",
        "fpr",
        "fnr",
    ),
    estimators: Sequence[Any] = ESTIMATORS,
    level: float | Sequence[float] = LEVEL,
    n_variance_resamples: int = N_VARIANCE_RESAMPLES,
    pos_label: object | None = None,
    random_state: SeedLike = None,
) -> DisaggregatedResult:
    """Estimate per-group metrics for every intersectional group with several estimators.

    Parameters
    ----------
    data : pandas.DataFrame or AuditData
        The rows. An :class:`~bayesfair.AuditData` brings its roles: its protected
        columns, outcome, decision and score are the defaults of the next four arguments.
    protected : list of str
        Columns whose value combinations define the groups (all combinations,
        empty ones included, so a reader sees which groups have no data).
    outcome, decision, score : str
        Outcome (0/1), decision (0/1; for confusion-matrix metrics) and score (for AUC).
    metrics : list or dict
        Names among "selection_rate", "accuracy", "fpr", "fnr", "tpr", "tnr", "ppv", "fdr",
        "npv", "for", "base_rate", "auc", or callables ``f(y_true, y_pred, y_score) -> float``
        (called with one group's arrays; return None or NaN where undefined). A
        callable is named by its ``__name__``; a dict ``{name: metric}`` names them
        (two metrics of one name, such as two lambdas, are an error).
    estimators : list
        Names among "standard", "james_stein", "empirical_bayes", "structured" and
        "hierarchical" (each with its defaults), or estimator objects carrying their
        options: :class:`~bayesfair.disaggregated.Standard` (intervals from the pooled
        variance, eq. 7), :class:`~bayesfair.disaggregated.JamesStein`,
        :class:`~bayesfair.disaggregated.EmpiricalBayes` (``interval=``),
        :class:`~bayesfair.disaggregated.StructuredRegression` (lasso with rBLPR
        intervals; ``ridge=``, ``interval=``, features, ``n_resamples=``) and
        :class:`~bayesfair.disaggregated.HierarchicalBayes` (PyMC; ``draws=``,
        ``chains=``, ...). Every estimator's intervals of a rate or an AUC are truncated
        to [0, 1]; hierarchical Bayes' are central credible intervals, one-sided from 0 or
        to 1 for a count metric whose rows in a group are all on one side, so that a rate
        of exactly 0 or 1 can be covered. An attribute value that no row carries (an
        unused category) is left out of the hierarchical fit, and its groups are drawn as
        new levels from the fitted scales.
    level : float or list of float, default 0.9
        Interval level, or levels (the first is the one in ``table``; ``intervals``
        holds them all).
    n_variance_resamples : int, default 200
        Bootstrap resamples per group for the pooled variance (eq. 6).
    pos_label : optional
        The value of ``outcome`` that means 1, when it is not coded as bool or 0/1
        (for example ``">50K"``); it applies to ``decision`` too when that column is
        coded the same way.
    random_state : None, int, or numpy SeedSequence, Generator or RandomState, optional

    Returns
    -------
    DisaggregatedResult

    Notes
    -----
    Eleven parameters: the four role arguments are the package's input contract (an
    ``AuditData`` brings them); every estimator's options live in its object, so that
    adding an estimator adds no argument here. The options' old flat names
    (``hb_draws=``, ``sr_ridge=``, ...) fail with a message naming the object that
    carries them now.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from bayesfair.disaggregated import EmpiricalBayes
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"a": rng.choice(["x", "y"], 400), "b": rng.choice(["u", "v"], 400),
    ...                    "y": rng.integers(0, 2, 400), "d": rng.integers(0, 2, 400)})
    >>> res = disaggregated_evaluation(df, protected=["a", "b"], outcome="y", decision="d",
    ...                                metrics=["selection_rate"],
    ...                                estimators=["standard", EmpiricalBayes()], random_state=0)
    >>> sorted(res.table["estimator"].unique())
    ['empirical_bayes', 'standard']
    """
    if isinstance(data, AuditData):
        data, roles = data.rows_frame()
        protected = roles["protected"] if protected is None else protected
        outcome = outcome or roles["outcome"]
        decision = decision or roles["decision"]
        score = score or roles["score"]
    if protected is None or outcome is None:
        raise TypeError(
            "disaggregated_evaluation needs `protected` and `outcome` (column names) "
            "with a DataFrame; an AuditData brings them"
        )
    ests = resolve_estimators(estimators)
    check_resamples(n_variance_resamples, "n_variance_resamples", minimum=2)
    levels = _levels(level)
    rng = check_random_state(random_state)
    gd = GroupedData.from_frame(data, protected, outcome, decision, score, pos_label)
    names, metrics = _metric_names(metrics, gd)
    out = _Rows(gd, levels)
    sr = ests.get("structured")
    sr_run = _StructuredRun(gd, sr) if sr is not None else None
    degenerate: dict[str, str] = {}
    for name, m in zip(names, metrics, strict=True):
        s = gd.estimate(m)
        out.std[name] = s
        bv = gd.bootstrap_variance(m, n_variance_resamples, rng)
        sigma2 = pooled_sigma2(out.n, bv) if np.any(np.isfinite(bv) & (out.n > 0)) else np.nan
        out.sigma2[name] = sigma2
        why = _degenerate(s, out.n, sigma2)
        if why:
            degenerate[name] = why
            _degenerate_rows(out, ests, name, m, s, sigma2)
        else:
            _shrinkage_rows(out, ests, name, m, s, sigma2)
            if sr_run is not None:
                sr_run.add(out, name, m, s, sigma2, rng)
    idatas = {}
    if "hierarchical" in ests:
        idatas = _hierarchical_rows(out, ests["hierarchical"], names, metrics, rng)
    if degenerate:
        _warn_degenerate(degenerate)
    diagnostics = _diagnostics(idatas, gd, out.n, ests.get("hierarchical"))
    eb = ests.get("empirical_bayes", EmpiricalBayes())
    return DisaggregatedResult(
        table=pd.DataFrame(out.rows),
        intervals=pd.DataFrame(out.irows),
        sigma2=out.sigma2,
        level=levels[0],
        structured=sr_run.info if sr_run is not None else {},
        idata=idatas,
        diagnostics=diagnostics,
        grouped=gd,
        eb_interval=eb.interval,
        structured_estimator=sr,
        hierarchical_estimator=ests.get("hierarchical"),
        metric_definitions=dict(zip(names, metrics, strict=True)),
    )


def _levels(level: float | Sequence[float]) -> list[float]:
    levels = [level] if isinstance(level, Real) else list(level)
    if not levels or not all(
        isinstance(lv, Real) and not isinstance(lv, bool) and 0 < lv < 1 for lv in levels
    ):
        raise ValueError(f"`level` must be a number in (0, 1), or a list of them, got {level!r}")
    return levels


def _metric_names(metrics, gd: GroupedData) -> tuple[list[str], list]:
    """The metrics' names and the metrics (names or callables), checked against the data."""
    if not metrics:
        raise ValueError("`metrics` must name at least one metric")
    if isinstance(metrics, Mapping):
        names, metrics = [str(k) for k in metrics], list(metrics.values())
    else:
        metrics = [metrics] if isinstance(metrics, str) or callable(metrics) else list(metrics)
        names = [metric_name(m) for m in metrics]
    repeated = sorted({nm for nm in names if names.count(nm) > 1})
    if repeated:
        raise ValueError(
            f"`metrics` names more than one metric {repeated}: each needs a name of its own "
            "(pass a dict {name: metric} to name callables such as lambdas)"
        )
    metrics = [m if callable(m) else metric_name(m) for m in metrics]
    missing = [f"{m} needs {gd.missing_column(m)}" for m in metrics if gd.missing_column(m)]
    if missing:
        raise ValueError("; ".join(missing) + ": give the column or leave the metric out")
    return names, metrics


class _Rows:
    """The result's two tables, filled one (metric, estimator) at a time."""

    def __init__(self, gd: GroupedData, levels: list[float]) -> None:
        self.gd, self.levels = gd, levels
        self.n = gd.sizes().astype(float)
        self.labels = gd.group_names()
        self.rows: list[dict] = []
        self.irows: list[dict] = []
        self.std: dict[str, np.ndarray] = {}
        self.sigma2: dict[str, float] = {}

    def add(self, metric: str, est: str, values: np.ndarray, ivals: dict) -> None:
        """``ivals``: ``{level: (lower, upper)}`` (empty for an estimator without one)."""
        gd, lv0 = self.gd, self.levels[0]
        defined = np.isfinite(self.std[metric])
        nan = np.full(gd.n_groups, np.nan)
        lo, hi = ivals.get(lv0, (nan, nan))
        for a in range(gd.n_groups):
            group, n = self.labels[a], int(self.n[a])
            self.rows.append(
                {
                    "group": group,
                    **gd.labels.iloc[a].to_dict(),
                    "n": n,
                    "metric": metric,
                    "estimator": est,
                    "estimate": values[a],
                    **interval_columns(lo[a], hi[a], lv0),
                    "defined": bool(defined[a]),
                }
            )
            for lv, (l2, h2) in ivals.items():
                self.irows.append(
                    {
                        "group": group,
                        "n": n,
                        "metric": metric,
                        "estimator": est,
                        **interval_columns(l2[a], h2[a], lv),
                    }
                )


def _table1_models(gd, s, explanatory, outcome_rates, feature_rows, rows, name) -> dict:
    """The nested feature frames of Table 1 (:meth:`DisaggregatedResult.goodness_of_fit`),
    the explanatory ones computed on ``feature_rows`` and left out where they copy the
    estimates ``s`` (computed on ``rows``)."""
    expl = group_features(
        gd,
        identity=False,
        attributes=False,
        explanatory=explanatory,
        outcome_rates=outcome_rates,
        rows=feature_rows,
    )
    ok = np.isfinite(s) & (gd.sizes(rows) > 0)
    expl, _ = drop_target_copies(expl, s, ok, f"goodness of fit of {name!r}")
    sens = group_features(gd, identity=False, attributes=True)
    ysens = group_features(
        gd, identity=False, attributes=False, outcome_interactions=True, rows=feature_rows
    )
    return {
        "intercept": pd.DataFrame(index=sens.index),
        "expl": expl,
        "sens": sens,
        "expl+sens": pd.concat([expl, sens], axis=1),
        "expl+sens+Y.sens": pd.concat([expl, sens, ysens], axis=1),
    }


def _degenerate(s: np.ndarray, n: np.ndarray, sigma2: float) -> str | None:
    """Why a metric has nothing to shrink or no interval width, or None."""
    n_defined = int(np.sum(np.isfinite(s) & (n > 0)))
    if sigma2 > 0 and n_defined >= 2:
        return None
    if n_defined == 0:
        return "no group has an estimate"
    if sigma2 > 0:
        return "only one group has an estimate"
    if sigma2 == 0:
        return (
            "no group's bootstrap resamples vary (estimates of 0 or 1, or a constant "
            "score), so the pooled variance (eq. 6) is 0"
        )
    return "no group has two rows to bootstrap a variance from"


def _degenerate_rows(out: _Rows, ests: dict, name: str, m, s, sigma2: float) -> None:
    """The standard estimates under every shrinkage estimator's name, with the standard
    intervals only where the pooled variance exists (nothing to shrink towards)."""
    nan = np.full(out.gd.n_groups, np.nan)
    for est in ("standard", "james_stein", "empirical_bayes", "structured"):
        if est not in ests:
            continue
        if est == "standard" and sigma2 > 0:
            ivals = {
                lv: _truncate_interval(standard_intervals(s, out.n, sigma2, lv), m)
                for lv in out.levels
            }
        else:
            ivals = {lv: (nan, nan) for lv in out.levels} if est != "james_stein" else {}
        out.add(name, est, s, ivals)


def _shrinkage_rows(out: _Rows, ests: dict, name: str, m, s, sigma2: float) -> None:
    """Standard, James-Stein and empirical-Bayes estimates of one metric."""
    n, levels = out.n, out.levels
    if "standard" in ests:
        ivals = {lv: _truncate_interval(standard_intervals(s, n, sigma2, lv), m) for lv in levels}
        out.add(name, "standard", s, ivals)
    if "james_stein" in ests:
        out.add(name, "james_stein", james_stein(s, n, sigma2), {})
    if "empirical_bayes" in ests:
        ivals = {}
        for lv in levels:
            est, lo, hi, _ = empirical_bayes(s, n, sigma2, lv, ests["empirical_bayes"].interval)
            ivals[lv] = _truncate_interval((lo, hi), m)
        out.add(name, "empirical_bayes", est, ivals)


class _StructuredRun:
    """Structured regression of every metric with one estimator's options. Its features
    are group means over all rows, and in cross-validation over each fold's training rows;
    the explanatory functions run once, not per metric and fold (only their per-row values
    are needed)."""

    def __init__(self, gd: GroupedData, sr: StructuredRegression) -> None:
        self.gd, self.sr = gd, sr
        self.per_row = {name: fn(gd.frame) for name, fn in (sr.explanatory or {}).items()}
        self.all_rows = self.features()
        self.info: dict[str, dict] = {}

    def features(self, rows: np.ndarray | None = None) -> pd.DataFrame:
        return group_features(
            self.gd,
            rows=rows,
            interactions=self.sr.interactions,
            explanatory=self.per_row,
            outcome_rates=self.sr.outcome_rates,
        )

    def add(self, out: _Rows, name: str, m, s, sigma2: float, rng) -> None:
        res = structured_regression(
            self.gd,
            m,
            s,
            sigma2,
            features=self.all_rows,
            fold_features=self.features,
            level=out.levels,
            estimator=self.sr,
            rng=rng,
        )
        keys = ("lam", "selected", "coef", "cv_loss", "lambdas", "dropped", "departure_variance")
        self.info[name] = {k: res[k] for k in keys}
        # the linear model of a rate or an AUC is projected onto [0, 1]
        ivals = {lv: _truncate_interval(iv, m) for lv, iv in res["intervals"].items()}
        out.add(name, "structured", truncate_to_range(res["estimate"], m), ivals)


def _without_departures(structured: dict) -> list[str]:
    """The metrics whose estimated departure variance (``structured[metric]
    ["departure_variance"]``) is 0 in both parts."""
    return [
        metric
        for metric, info in structured.items()
        if tuple(info.get("departure_variance", (np.nan, np.nan))) == (0.0, 0.0)
    ]


def _no_departure_note(metrics: list[str]) -> str:
    """The note for the metrics whose groups showed no departure from structured
    regression's surface beyond their sampling noise.

    The departure variance is a moment estimate from one evaluation set's residuals
    (:func:`~bayesfair.disaggregated.structured.departure_variance`): with a few small
    groups, whose residuals are mostly sampling noise, it comes out 0 in many sets of a
    population whose small groups do depart, and those sets' intervals allow for the
    surface's uncertainty alone, so they are where structured regression falls short."""
    return (
        f"Structured regression's intervals of {', '.join(metrics)}: this evaluation set's "
        "residuals show no departure of the groups from the fitted surface beyond their "
        "sampling noise (departure variance estimated 0, structured[metric]"
        "['departure_variance']), so those intervals allow for the surface's uncertainty "
        "alone. One set's small groups are too few to show a departure that is there, and "
        "such sets are where these intervals fall short of their level; read a small "
        "group's standard or hierarchical interval beside them."
    )


def _hierarchical_rows(out: _Rows, hb: HierarchicalBayes, names, metrics, rng) -> dict:
    """Hierarchical Bayes' estimates and intervals of every metric; its InferenceData by
    model (``"binomial"`` for the count metrics, ``"fay_herriot"`` for the others)."""
    gd, n = out.gd, out.n
    is_count = [isinstance(m, str) and m in COUNT_METRICS for m in metrics]
    cells = gd.cells() if any(is_count) else None
    # a count metric that no group has a row of the denominator for (FPR where every
    # outcome is positive) would be fitted from its prior alone: it gets no estimate
    km_of = {i: gd.count_ratio(cells, metrics[i]) for i in range(len(metrics)) if is_count[i]}
    count = [i for i, (_, m) in km_of.items() if np.sum(m) > 0]
    other = [i for i in range(len(metrics)) if not is_count[i] and out.sigma2[names[i]] > 0]
    seed = int(rng.integers(2**31))
    nuts = dict(estimator=hb, sizes=n)
    posts, boundary, idatas = {}, {}, {}
    if count:
        km = [km_of[i] for i in count]
        k, m = np.array([x[0] for x in km]), np.array([x[1] for x in km])
        idata, th = fit_hierarchical(
            gd.labels, [names[i] for i in count], k=k, m=m, random_state=seed, **nuts
        )
        idatas["binomial"] = idata
        for j, i in enumerate(count):
            posts[names[i]] = th[:, j, :]
            boundary[names[i]] = km[j]
    if other:
        S = np.array([out.std[names[i]] for i in other])
        SE = np.array([np.sqrt(out.sigma2[names[i]] / np.maximum(n, 1)) for i in other])
        idata, th = fit_hierarchical(
            gd.labels, [names[i] for i in other], s=S, se=SE, random_state=seed + 1, **nuts
        )
        idatas["fay_herriot"] = idata
        for j, i in enumerate(other):
            # the Fay-Herriot model is Normal on the metric's own scale: an AUC's
            # posterior is the projection of its draws onto [0, 1]
            posts[names[i]] = truncate_to_range(th[:, j, :], metrics[i])
    for name in names:
        if name not in posts:  # no data for the model: see `count` and `other`
            nan = np.full(gd.n_groups, np.nan)
            out.add(name, "hierarchical", nan, {lv: (nan, nan) for lv in out.levels})
            continue
        post = posts[name]
        ivals = {lv: _credible(post, lv, boundary.get(name)) for lv in out.levels}
        point = np.median(post, axis=0) if hb.point_estimate == "median" else post.mean(0)
        out.add(name, "hierarchical", point, ivals)
    return idatas


def _credible(post: np.ndarray, lv: float, km: tuple | None) -> tuple:
    """Central credible interval of each group's draws. With the counts ``km`` of a count
    metric, a group whose every counted row is on one side (0 of m, or m of m) gets the
    one-sided interval of the same posterior mass, reaching that boundary (as the modified
    Jeffreys interval of Brown, Cai and DasGupta reaches it): a central interval of a
    posterior on (0, 1) can never contain a rate of exactly 0 or 1, which such data
    cannot rule out."""
    lo, hi = np.quantile(post, [(1 - lv) / 2, (1 + lv) / 2], axis=0)
    if km is None:
        return lo, hi
    k, m = (np.asarray(v, dtype=float) for v in km)
    none, every = (m > 0) & (k == 0), (m > 0) & (k == m)
    lo = np.where(none, 0.0, np.where(every, np.quantile(post, 1 - lv, 0), lo))
    hi = np.where(every, 1.0, np.where(none, np.quantile(post, lv, 0), hi))
    return lo, hi


def _warn_degenerate(degenerate: dict[str, str]) -> None:
    reasons = "; ".join(f"{k!r}: {v}" for k, v in degenerate.items())
    warnings.warn(
        f"metric(s) without a pooled variance or without two groups to shrink ({reasons}). "
        "Their standard, James-Stein, empirical-Bayes and structured rows carry the "
        "standard estimates, with intervals only where the pooled variance exists (the "
        "standard ones). Hierarchical Bayes models the counts of a count metric and "
        "still gives credible intervals if some group has rows in the metric's "
        "denominator; a metric without such rows, or without counts and without a "
        "pooled variance, gets no hierarchical estimate.",
        UserWarning,
        stacklevel=user_stacklevel(),
    )


def _diagnostics(idatas: dict, gd: GroupedData, n: np.ndarray, hb) -> dict:
    """Sampler diagnostics of every hierarchical fit, warning with advice on problems."""
    diagnostics = {}
    for name, idata in idatas.items():
        diag = _arviz.diagnostics(idata, _model_variables(idata))
        diagnostics[name] = diag
        problems = _arviz.sampler_problems(diag)
        if problems:
            advice = _sampler_advice(
                idata,
                diag,
                gd.labels,
                n,
                target_accept=hb.target_accept,
                main_effects=hb.main_effects,
                draws=hb.draws,
            )
            warnings.warn(
                f"hierarchical model ({name}): " + ", ".join(problems) + advice,
                SamplerWarning,
                stacklevel=user_stacklevel(),
            )
    return diagnostics
