"""The report's Bayesian section: posterior fairness per model, averaging weights, P(y|s)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import pandas as pd

from .._validation import SeedLike, check_instance
from .._vocabulary import LEVEL
from ..frequentist.fairness_bounds import intervals_from_counts
from ..models import (
    FairnessModel,
    HierarchicalLogisticRegression,
    model_average,
    posterior_fairness,
)
from ..models.averaging import unique_names
from . import plots as _plots
from .html import Figure, Report, Section, Table, Text, whole_numbers
from .plots import plot_posterior_boxes, plot_posterior_rates

__all__ = ["add_bayesian_section"]


def _named(models, argument: str, names: list[str] | None = None) -> dict:
    """``models`` as a dict name -> fitted model (a list is named like model_average)."""
    if isinstance(models, Mapping):
        out = dict(models)
    elif isinstance(models, Sequence) and not isinstance(models, str):
        bad = [type(m).__name__ for m in models if not isinstance(m, FairnessModel)]
        if bad:
            raise TypeError(f"`{argument}` must hold fitted bayesfair models only, got {bad}")
        if names is not None and len(models) != len(names):
            raise ValueError(f"`{argument}` has {len(models)} models, `models` {len(names)}")
        out = dict(zip(names or unique_names(models), models, strict=True))
    else:
        raise TypeError(
            f"`{argument}` must be a dict name -> fitted model or a list of fitted models, "
            f"got {type(models).__name__}"
        )
    bad = [k for k, m in out.items() if not isinstance(m, FairnessModel)]
    if bad:
        raise TypeError(f"`{argument}` entries {bad} are not bayesfair models")
    return out


def add_bayesian_section(
    report: Report,
    models: Mapping[str, FairnessModel] | Sequence[FairnessModel],
    mechanism: Mapping[str, FairnessModel] | Sequence[FairnessModel] | None = None,
    *,
    detail: str | None = None,
    level: float = LEVEL,
    random_state: SeedLike = None,
) -> Report:
    """Add posterior epsilon-DF / gamma-SF of every fitted model to ``report``.

    Parameters
    ----------
    report : Report
        The report to extend.
    models : mapping name -> fitted model of the labels (or one role), or a list
        A list is named as :func:`~bayesfair.models.model_average` names it
        (``"HLR-nuts"``, ...).
    mechanism : mapping name -> fitted model of the decisions, same names, optional
        Or a list in the order of ``models``.  Adds the mechanism's metrics and the
        bias amplification.
    detail : str, optional
        The model whose per-intersection posterior is shown (default: HLR if
        present, else the first).
    level : float, default 0.9
        Level of the section's intervals (HDIs and the frequentist interval beside them).
    random_state : None, int, or numpy SeedSequence, Generator or RandomState, optional
        Seeds the posterior draws of the intersections' shares (gamma's Bayesian
        bootstrap), so that a seeded audit writes the same section again.

    Returns
    -------
    Report
        ``report``, extended.

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.models import DirichletMultinomial
    >>> from bayesfair.report import Report, add_bayesian_section
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> rep = add_bayesian_section(Report("audit"), {"EDF": DirichletMultinomial().fit(data)})
    >>> [s.title for s in rep.sections]  # doctest: +ELLIPSIS
    ['Bayesian ...']
    """
    check_instance(report, Report, "report", "a Report")
    models, mechanism = _checked_models(models, mechanism, detail)
    results = {
        name: posterior_fairness(
            m,
            None if mechanism is None else mechanism[name],
            level=level,
            random_state=random_state,
        )
        for name, m in models.items()
    }
    sec = report.section("Bayesian intersectional fairness")
    sec.add(Text(_INTRO.format(level=level)))
    rows = []
    for name, r in results.items():
        s = r.summary()
        s.insert(0, "model", name)
        rows.append(s)
    sec.add(Table(pd.concat(rows, ignore_index=True), float_format="{:.4f}"))
    for words in _point_estimate_notes(models):
        sec.add(Text(words))
    _add_posterior_boxes(sec, results, next(iter(models.values())).design_, level)
    _add_pairs(sec, results, mechanism is not None)
    name = detail or ("HLR" if "HLR" in models else next(iter(models)))
    if len(models[name].design_.attributes) > 1:
        _add_by_attribute(sec, name, models, mechanism, results[name], level, random_state)
    _add_diagnostics(sec, models, mechanism)
    if len(models) >= 2:
        _add_averaging_weights(sec, models, mechanism is not None)
    sec.add(
        Figure(
            plot_posterior_rates(models[name], level=level, max_groups=_plots.MAX_CHART_ROWS),
            caption=f"{name}: posterior of P(y=1|s) per intersection beside the empirical rate; "
            "small groups borrow strength, and their intervals show what the data cannot say."
            + _plots.chart_rows_note(models[name].design_.n_groups, "the model's summary()"),
        )
    )
    return report


_INTRO = (
    "Each model of P(y|s) gives three estimates (Foulds et al.): O, the metric of the "
    "point estimate; X, the metric of the posterior predictive; and the posterior "
    "distribution of the metric (box: quartiles; whiskers: 1.5 IQR). "
    "Intervals are {level:.0%} HDIs. gamma's posterior also draws P(s), the "
    "intersections' shares, from its posterior (the Bayesian bootstrap): it is gamma "
    "of the population the rows were sampled from; O and X use the sample's shares. "
    "Near a fair population these intervals mislead: each model gives every "
    "intersection a rate of its own, so each draw of epsilon and gamma is positive "
    "and an HDI never contains a fair population's 0. The audit's default intervals "
    "(bayesfair.interval_calibration, in the section on intervals and how often they "
    "cover) and the confidence intervals of the fairness section hold there too."
)


def _checked_models(models, mechanism, detail) -> tuple[dict, dict | None]:
    """The models (and the decisions' models) by name, checked against each other."""
    models = _named(models, "models")
    if not models:
        raise ValueError("`models` must name at least one fitted model")
    if mechanism is not None:
        mechanism = _named(mechanism, "mechanism", names=list(models))
        if set(mechanism) != set(models):
            raise ValueError(
                f"`mechanism` must name the same models as `models`: {sorted(models)}, "
                f"got {sorted(mechanism)}"
            )
    if detail is not None and detail not in models:
        raise ValueError(f"`detail` must be one of the models {list(models)}, got {detail!r}")
    return models, mechanism


def _point_estimate_notes(models: dict) -> list[str]:
    """What O means for the hierarchical models, by how their point estimate is made."""
    hier = {
        kind: [
            n
            for n, m in models.items()
            if isinstance(m, HierarchicalLogisticRegression) and m.point_estimate == kind
        ]
        for kind in ("empirical_bayes", "joint_map")
    }
    notes = []
    if hier["empirical_bayes"]:
        spread = ", ".join(f"{n} {models[n].sigma2_point_:.3g}" for n in hier["empirical_bayes"])
        notes.append(
            f"{', '.join(hier['empirical_bayes'])}: O is the empirical-Bayes point estimate "
            "of a hierarchical model (sigma2 at the mode of its marginal posterior, the "
            "effects at their mode given it), the same in every parameterization; "
            "Foulds et al. report no point estimate for HLR. sigma2 there, the spread of "
            "the intersections' log-odds around the additive model (0: additive): "
            f"{spread}."
        )
    if hier["joint_map"]:
        notes.append(
            f"{', '.join(hier['joint_map'])}: the joint mode of a hierarchical model depends "
            "on the coordinates it is computed in (in the centred ones its density has no "
            "maximum), so its O, PyMC's find_MAP in the sampler's coordinates, can sit far "
            "from the posterior. Read it through X and the posterior, or use "
            "point_estimate='empirical_bayes'."
        )
    return notes


def _add_posterior_boxes(sec: Section, results: dict, design, level: float) -> None:
    """The posterior boxes of every model, with the frequentist interval of the table."""
    confidence = None
    if (design.n > 0).sum() >= 2:
        with warnings.catch_warnings():  # the posterior's own warning names empty groups
            warnings.filterwarnings("ignore", message=".*without rows", category=UserWarning)
            confidence = intervals_from_counts(
                design.n,
                design.k,
                design.labels,
                level=level,
                role=design.role,
                by=tuple(design.attributes),
            )
    sec.add(
        Figure(
            plot_posterior_boxes(results, confidence),
            caption="Posterior of the fairness metrics per model"
            + (
                f", and the frequentist {level:.0%} confidence interval of the same table "
                "(green; an arrow: its upper end lies above the plot, or is infinite)."
                if confidence is not None
                else "."
            ),
        )
    )


def _add_pairs(sec: Section, results: dict, with_mechanism: bool) -> None:
    """The pairs of intersections that attain epsilon, with their posterior probability."""
    pairs = []
    for name, r in results.items():
        top = r.pairs.groupby("metric", sort=False).head(3)
        top.insert(0, "model", name)
        pairs.append(top)
    sec.add(
        Text(
            "Which pair of intersections attains epsilon"
            + (" (of the labels, and of the decisions: epsilon_mechanism)" * with_mechanism)
            + ", with its posterior probability; outcome 1 compares P(y=1|s), outcome 0 "
            "P(y=0|s):"
        )
    )
    sec.add(Table(pd.concat(pairs, ignore_index=True), float_format="{:.3f}"))


def _add_by_attribute(sec, name, models, mechanism, own, level, random_state) -> None:
    """epsilon over each protected attribute alone beside the intersections' (``own``)."""
    attrs = models[name].design_.attributes
    sec.add(
        Text(
            f"{name}: epsilon over each protected attribute alone, from the same model "
            "(P(y|s) averaged over the intersections of each value with weights P(s)), "
            "beside the intersections'. An attribute alone can look fairer than the "
            "intersections; it cannot look less fair (each draw's epsilon over a "
            "subset is at most its epsilon over the intersections):"
        )
    )
    mech = None if mechanism is None else mechanism[name]
    rows = []
    for by in [[a] for a in attrs] + [attrs]:
        # the intersections' row is the section's own result, not computed again
        fair = (
            own
            if by == attrs
            else posterior_fairness(
                models[name], mech, by=by, level=level, random_state=random_state
            )
        )
        s = fair.summary()
        s = s[s["metric"].isin(["epsilon", "epsilon_mechanism"])]
        s.insert(0, "groups", " x ".join(by))
        rows.append(s)
    sec.add(Table(pd.concat(rows, ignore_index=True), float_format="{:.4f}"))


def _add_diagnostics(sec: Section, models: dict, mechanism: dict | None) -> None:
    """Sampler diagnostics and posterior predictive misfit of every fit."""
    fits = {"labels": models} if mechanism is None else {"labels": models, "decisions": mechanism}
    diag = pd.DataFrame(
        [
            {
                "model": n,
                **({"fitted to": role} if mechanism is not None else {}),
                **m.diagnostics_,
                "counts not reproduced": int((m._predictive_pvalues() < 0.05).sum()),
                "warnings": "; ".join(m.warnings_) or "none",
            }
            for role, group in fits.items()
            for n, m in group.items()
        ]
    )
    # the sampler's columns first (a conjugate model in the first row has none of them)
    last = ["counts not reproduced", "warnings"]
    diag = diag[[c for c in diag.columns if c not in last] + last]
    sec.add(
        Text(
            "Sampler diagnostics of every fit (NUTS: divergences, R-hat, ESS), and how many "
            "intersections' counts its posterior predictive does not reproduce (two-sided "
            "posterior predictive p-value below 0.05; the fit's predictive_check() lists them):"
        )
    )
    sec.add(Table(whole_numbers(diag), float_format="{:.3f}"))


def _add_averaging_weights(sec: Section, models: dict, with_mechanism: bool) -> None:
    """BMA (and, with more than one draw per fit, LOO stacking) weights of the models."""
    fitted = list(models.values())
    weights = pd.DataFrame(
        {"BMA (paper, eq. 5)": model_average(fitted, "bma").weights_.to_numpy()},
        index=list(models),
    )
    if all(m.p_draws_.shape[0] * m.p_draws_.shape[1] > 1 for m in fitted):
        weights["LOO stacking"] = model_average(fitted, "stacking").weights_.to_numpy()
    which = " (models of the labels):" if with_mechanism else ":"
    sec.add(Text("Model-averaging weights" + which))
    sec.add(Table(weights.reset_index(names="model"), float_format="{:.4f}"))
