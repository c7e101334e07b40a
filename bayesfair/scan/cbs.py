"""Conditional Bias Scan (Boxer, McFowland and Neill): the four scan types of Table 1.

Pipeline (Section 3 and Appendix A):

1. the event variable I and conditional variable C from the scan type;
2. expectations I-hat of I for the protected class under H0 (:mod:`bayesfair.scan.ihat`):
   I independent of A given (C, X), by propensity-odds weighting -- a model of P(A=1 | X) on
   all rows gives the non-protected rows weights p/(1-p); a weighted model of
   E[I | C, X] fitted on the non-protected rows predicts I-hat for the
   protected rows (two weighted records per row when I is a probability;
   logit(P) as the feature when C is a probability; rows filtered to C = z for
   value-conditional scans, after the propensity model);
3. the subset scan over the protected class's rows
   (:func:`bayesfair.scan.subset_scan`);
4. significance by permuting the protected-class labels and re-running the
   whole pipeline (I-hat included) on each copy (Appendix A.3), through
   joblib, so ``joblib.parallel_config(backend="dask")`` runs it on a cluster.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._parallel import EXCEEDANCES, chunked_resamples, sequential_resamples
from .._plotting import literal
from .._repr import compact_repr
from .._result import ResultMixin
from .._validation import (
    SeedLike,
    check_axes,
    check_binary,
    check_flag,
    check_no_missing_groups,
    check_probability,
    check_resamples,
    check_seed,
)
from .._vocabulary import N_RESAMPLES, moved_options, renamed_arguments
from .._warning_location import user_stacklevel
from ..data import AuditData
from .engine import (
    PreparedScan,
    ScanResult,
    check_attribute_values,
    check_direction,
    resolve_ordinal,
    row_codes,
    safe_logit,
    subgroup_mask,
    warn_impossible_events,
)
from .ihat import (
    Inestimable,
    expected_events,
    onehot,
    row_groups,
)
from .options import (
    MOVED_FROM_CBS,
    SubsetSearch,
    WeightedIhat,
    check_option,
)

__all__ = ["SCAN_TYPES", "CBSResult", "conditional_bias_scan"]

#: Restarts of the search by default (each permutation repeats the search).
N_RESTARTS = 50

#: scan type -> (event variable, conditional variable, score) with roles
#: "outcome" (Y), "score" (P) and "decision" (P_bin).
SCAN_TYPES: dict[str, tuple[str, str, str]] = {
    "separation_predictions": ("score", "outcome", "gaussian"),
    "separation_recommendations": ("decision", "outcome", "bernoulli"),
    "sufficiency_predictions": ("outcome", "score", "bernoulli"),
    "sufficiency_recommendations": ("outcome", "decision", "bernoulli"),
}


@dataclass
class CBSResult(ResultMixin):  # numpydoc ignore=PR01
    """Result of :func:`conditional_bias_scan`.

    Attributes
    ----------
    scan : ScanResult
        The detected subgroup S* of the protected class (score, q or mu, ...).
    protected_label : str
        The protected class in words (``"race = African-American"``).
    subgroup : dict
        ``{attribute: [values]}`` of S* (restricted attributes only).
    n_protected, n_comparison : int
        Sizes of S* in the protected class and of the same subgroup of the
        non-protected class (after value-conditional filtering).
    rate_protected, rate_comparison : float
        Observed mean event in both (FPR for the separation scan for
        recommendations with C = 0, and so on: Table 4's "observed rate").
    expected_rate : float
        Mean I-hat of S* (what the protected subgroup's rate would be under H0).
    pvalue : float or None
        Permutation p-value (1 + #null >= observed) / (1 + B), or Besag and Clifford's
        ``h / L`` when the sequential test stopped early; None without permutations.
    null_distribution : numpy.ndarray
        Maximum scores of the permuted data sets (those drawn).
    stopped_early : bool
        Whether the sequential test stopped before ``n_resamples`` permutations.
    ihat : numpy.ndarray
        I-hat of the scanned rows.
    scan_type, direction : str
        The CBS variant and the direction of the scan.
    condition_value : object
        The value of the conditioning variable (``None`` for scans without one).
    settings : dict
        The arguments of the scan.
    """

    __repr__ = compact_repr

    scan: ScanResult
    scan_type: str
    protected_label: str
    condition_value: Any
    direction: str
    n_protected: int
    n_comparison: int
    rate_protected: float
    rate_comparison: float
    expected_rate: float
    pvalue: float | None = None
    null_distribution: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)
    stopped_early: bool = False
    ihat: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)
    settings: dict = field(default_factory=dict, repr=False)

    @property
    def subgroup(self) -> dict[str, list]:
        """``{attribute: [values]}`` of S* (restricted attributes only)."""
        return self.scan.subgroup

    @property
    def score(self) -> float:
        """The penalised score of S*."""
        return self.scan.score

    def describe(self) -> str:
        """The detected subgroup and its comparison subgroup in words, with sizes.

        Returns
        -------
        str
        """
        kept = self.settings.get("kept")
        where = f" with {kept}" if kept else ""
        sub = f"{self.scan.describe()} among " if self.scan.subgroup else ""
        return (
            f"{sub}{self.protected_label}{where} ({self.n_protected} rows) vs {sub}the rest"
            f"{where} ({self.n_comparison} rows)"
        )

    def summary(self) -> pd.DataFrame:
        """One-row table in the layout of the paper's Table 4.

        Returns
        -------
        pandas.DataFrame
        """
        param = "q" if self.scan.score_type == "bernoulli" else "mu"
        return pd.DataFrame(
            [
                {
                    "scan_type": self.scan_type,
                    "protected": self.protected_label,
                    "condition": self.condition_value,
                    "direction": self.direction,
                    "subgroup": self.scan.describe(),
                    "n_protected": self.n_protected,
                    "n_comparison": self.n_comparison,
                    "rate_protected": self.rate_protected,
                    "rate_comparison": self.rate_comparison,
                    "expected_rate": self.expected_rate,
                    "score": self.scan.score,
                    param: self.scan.q if param == "q" else self.scan.mu,
                    # never a silent None: NaN, and the note says how to get one
                    "pvalue": np.nan if self.pvalue is None else self.pvalue,
                    "pvalue_note": self._pvalue_note(),
                    "n_resamples": len(self.null_distribution),
                    "note": self._direction_note(),
                }
            ]
        )

    def _direction_note(self) -> str:
        """Words for a scan that found nothing (score 0) in its direction while the
        protected class departs from its expectation the other way: the bias may be there,
        in the direction not scanned."""
        if self.scan.score > 0 or not np.isfinite(self.expected_rate):
            return ""
        positive = self.direction == "positive"
        gap = (self.rate_protected - self.expected_rate) * (1 if positive else -1)
        if gap >= 0:  # the class departs, if at all, in the direction scanned
            return ""
        scanned, other = ("above", "below") if positive else ("below", "above")
        return (
            f"no subgroup is {scanned} its expectation; the protected class is {other} it "
            f"({self.rate_protected:.3g} against {self.expected_rate:.3g}): "
            f"direction='{'negative' if positive else 'positive'}' scans for that"
        )

    def _pvalue_note(self) -> str:
        if self.pvalue is None:
            return "not computed: n_resamples=0; pass n_resamples (e.g. 999)"
        if self.stopped_early:
            return (
                f"sequential: stopped after {len(self.null_distribution)} permutations, "
                f"{EXCEEDANCES} of which reached the observed score (Besag-Clifford)"
            )
        return ""

    def plot(self, ax=None):
        """Null distribution of the maximum score with the observed score marked.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Draw into it; default a new figure.

        Returns
        -------
        matplotlib.axes.Axes
        """
        import matplotlib.pyplot as plt

        check_axes(ax)
        if ax is None:
            _, ax = plt.subplots(figsize=(5, 3))
        if len(self.null_distribution):
            ax.hist(self.null_distribution, bins=30, color="0.7", label="permuted data sets")
        ax.axvline(self.scan.score, color="C3", lw=2, label=f"observed {self.scan.score:.1f}")
        ax.set_xlabel("maximum penalised score F(S*)")
        ax.set_title(literal(f"{self.scan_type}: {self.protected_label}"))
        ax.legend(frameon=False, fontsize=8)
        return ax


def protected_mask(frame: pd.DataFrame, protected) -> tuple[np.ndarray, str, str | None]:
    if isinstance(protected, str):
        if protected not in frame.columns:
            raise ValueError(f"`protected_class` column {protected!r} is not in the data")
        col = frame[protected]
        vals = set(pd.unique(col.dropna()))
        if col.isna().any() or not vals <= {0, 1}:
            example = min(vals - {0, 1}, key=str, default="value")
            example = example.item() if isinstance(example, np.generic) else example
            raise ValueError(
                f"`protected_class` column {protected!r} must be boolean or 0/1; to take one value "
                f"of it as the protected class, pass protected_class=({protected!r}, {example!r})"
            )
        return col.to_numpy().astype(bool), protected, None
    if isinstance(protected, dict) and len(protected) == 1:
        protected = next(iter(protected.items()))
    if isinstance(protected, tuple) and len(protected) == 2:
        col, value = protected
        if col not in frame.columns:
            raise ValueError(f"`protected_class` attribute {col!r} is not in the data")
        check_no_missing_groups(
            frame[col],
            f"`protected_class` attribute {col!r}",
            ", rows that cannot be placed in or out of the protected class",
        )
        if isinstance(value, (list, set, frozenset, np.ndarray, pd.Index)):
            return _values_mask(frame[col], col, list(value))
        mask = (frame[col] == value).to_numpy()
        if not mask.any():
            raise ValueError(f"no row has {col} == {value!r} (the protected class)")
        return mask, f"{col} = {value}", col
    raise TypeError(
        "`protected_class` must be a boolean column, a (column, value) tuple or {column: value}"
        f" (value: one value or a list of values), got {protected!r}"
    )


def _values_mask(col: pd.Series, name: str, values: list) -> tuple[np.ndarray, str, str]:
    """The rows whose ``name`` is one of ``values``: a protected class of several values of
    one attribute (``{"race": ["Black", "Hispanic"]}``); each value must occur."""
    if not values:
        raise ValueError(f"`protected_class` lists no value of {name!r}")
    missing = [v for v in values if not (col == v).any()]
    if missing:
        raise ValueError(
            f"no row has {name} == {missing[0]!r} (one of the protected class's values "
            f"{values}); the column's values are {sorted(map(str, pd.unique(col.dropna())))}"
        )
    mask = col.isin(values).to_numpy()
    return mask, f"{name} in {{{', '.join(map(str, values))}}}", name


def frame_and_roles(data, outcome, score, decision):
    """The scans' input contract: a DataFrame with the roles' column names, or an
    :class:`~bayesfair.AuditData` whose rows and roles are the defaults."""
    if isinstance(data, AuditData):
        data, roles = data.rows_frame()
        outcome = outcome or roles["outcome"]
        score = score or roles["score"]
        decision = decision or roles["decision"]
    if not isinstance(data, pd.DataFrame):
        raise TypeError(
            f"`data` must be a pandas DataFrame or an AuditData, got {type(data).__name__}"
        )
    if len(data) == 0:
        raise ValueError("`data` has no rows; a scan needs data")
    return data, outcome, score, decision


def scan_attributes(
    data, attributes, ihat_attributes, attr: str | None, label: str, *, roles=None, protected=None
):
    """The scan and I-hat attributes as lists, without the protected attribute ``attr``
    (within the protected class it takes one value; leaving it out is warned about when
    the caller named it).  ``attributes=None``: every categorical (non-numeric) column
    but the ``roles``' columns, a boolean ``protected`` column and ``attr``.  Raises if
    none is left or one is not a column."""
    for role, column in (roles or {}).items():
        if column is not None and (not isinstance(column, str) or column not in data.columns):
            raise ValueError(f"`{role}` column {column!r} is not a column of the data")
    if attributes is None:
        used = {c for c in (roles or {}).values() if c} | (
            {protected} if isinstance(protected, str) else set()
        )
        attributes = [
            c
            for c in data.columns
            if c not in used and c != attr and not pd.api.types.is_numeric_dtype(data[c])
        ]
    attributes = [attributes] if isinstance(attributes, str) else list(attributes)
    if attr is not None and attr in attributes:
        attributes.remove(attr)
        warnings.warn(
            f"the protected attribute {attr!r} is left out of the scan attributes: within "
            f"the protected class ({label}) it takes a single value",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    if not attributes:
        raise ValueError("no scan attributes: pass `attributes`")
    missing = [a for a in attributes if a not in data.columns]
    if missing:
        raise ValueError(f"scan attributes not in the data: {missing}")
    ihat_attributes = list(attributes if ihat_attributes is None else ihat_attributes)
    missing = [a for a in ihat_attributes if a not in data.columns]
    if missing:
        raise ValueError(f"`ihat.attributes` {missing} are not columns of the data")
    if attr is not None and attr in ihat_attributes:
        ihat_attributes.remove(attr)
    return attributes, ihat_attributes


def scan_pipeline(
    data: pd.DataFrame,
    protected_class,
    scan_type: str,
    roles: dict,
    condition_value: int | None,
    direction: str,
    attributes,
    search,
    ihat_attributes,
    models: tuple = (None, None),
) -> tuple:
    """The checked pipeline of a scan, shared by the frequentist and the Bayesian scans:
    the protected class's rows ``A``, its label, and the :class:`ScanPipeline` (refused,
    by name, when the data leave nothing to estimate).

    ``search`` is a :class:`~bayesfair.scan.SubsetSearch`; ``models`` the propensity and
    I-hat models."""
    A, label, attr = protected_mask(data, protected_class)
    attributes, ihat_attributes = scan_attributes(
        data, attributes, ihat_attributes, attr, label, roles=roles, protected=protected_class
    )
    pipe = ScanPipeline(
        data,
        roles,
        scan_type,
        condition_value,
        direction,
        attributes,
        ihat_attributes,
        search.sigma,
        *models,
        search.ordinal,
    )
    pipe.require_estimable(A)
    return A, label, pipe


class ScanPipeline:
    """Everything that does not change when the protected labels are permuted."""

    def __init__(
        self,
        frame,
        roles,
        scan_type,
        condition_value,
        direction,
        attributes,
        ihat_attributes,
        sigma,
        propensity_model,
        ihat_model,
        ordinal=None,
    ):
        if scan_type not in SCAN_TYPES:
            raise ValueError(f"`scan_type` must be one of {sorted(SCAN_TYPES)}, got {scan_type!r}")
        check_direction(direction)  # before any model is fitted
        ev_role, cond_role, self.score = SCAN_TYPES[scan_type]
        for role in (ev_role, cond_role):
            if roles.get(role) is None:
                raise ValueError(f"scan type {scan_type!r} needs the `{role}` column")
            if roles[role] not in frame.columns:
                raise ValueError(f"`{role}` column {roles[role]!r} is not in the data")

        def column(role: str) -> np.ndarray:
            name = roles[role]
            if role == "score":
                return check_probability(frame[name], name, "`score`")
            return check_binary(frame[name], name, f"`{role}`", takes_pos_label=False).astype(float)

        self.event = column(ev_role)
        self.event_name = roles[ev_role]
        cond = column(cond_role)
        self.event_is_prob = ev_role == "score"
        self.cond_is_prob = cond_role == "score"
        if condition_value is not None:
            if self.cond_is_prob:
                raise ValueError(
                    "value-conditional scans need a binary conditional variable; "
                    f"{scan_type!r} conditions on the probability"
                )
            if condition_value not in (0, 1):
                raise ValueError(f"`condition_value` must be None, 0 or 1, got {condition_value!r}")
            self.keep = cond == condition_value
            self.condition = None
            self.kept = f"{roles[cond_role]} == {condition_value}"
        else:
            self.keep = np.ones(len(frame), bool)
            self.condition = cond
            self.kept = None  # every row: nothing for require_both_classes to check
        check_attribute_values(frame, attributes, "scan attribute")
        check_attribute_values(frame, ihat_attributes, "`ihat.attributes` column")
        self.ihat_attributes = list(ihat_attributes)
        self.X_ihat = onehot(frame, ihat_attributes)
        gx = row_groups(self.X_ihat)
        if self.condition is None:
            gf = gx
        else:
            c = safe_logit(self.condition) if self.cond_is_prob else self.condition
            gf = row_groups(np.column_stack([gx, c]))
        self.groups = (gx, gf)
        self.codes, self.values = row_codes(frame, attributes)
        self.attributes = list(attributes)
        self.ordinal = resolve_ordinal(frame, self.attributes, ordinal)
        self.direction = direction
        self.sigma = sigma
        self.propensity_model = propensity_model
        self.ihat_model = ihat_model

    def require_estimable(self, protected: np.ndarray) -> None:
        """Refuse, naming the columns, data that leave the scan nothing to estimate: a
        value-conditional scan that keeps no row in the protected class or outside it,
        or a binary event with one value among the kept rows outside the class, from
        which I-hat cannot be learned (:class:`Inestimable`, a ValueError)."""
        if self.kept is not None:
            for where, rows in (("in", protected), ("outside", ~protected)):
                if not (rows & self.keep).any():
                    raise Inestimable(f"no row {where} the protected class has {self.kept}")
        if not self.event_is_prob:
            seen = np.unique(self.event[~protected & self.keep])
            if len(seen) == 1:
                kept = f" with {self.kept}" if self.kept else ""
                raise Inestimable(
                    f"every row outside the protected class{kept} has {self.event_name} == "
                    f"{seen[0]:g}, so the expected {self.event_name} (I-hat) cannot be learned"
                )

    def ihat(self, protected: np.ndarray) -> np.ndarray:
        return expected_events(
            protected,
            self.event,
            self.event_is_prob,
            self.X_ihat,
            self.condition,
            self.cond_is_prob,
            self.keep,
            propensity_model=self.propensity_model,
            ihat_model=self.ihat_model,
            _groups=self.groups,
        )

    def prepared(self, protected: np.ndarray, ihat: np.ndarray) -> PreparedScan:
        rows = protected & self.keep
        return PreparedScan(
            self.codes[rows],
            self.values,
            self.attributes,
            self.event[rows],
            ihat,
            self.score,
            self.direction,
            self.sigma,
            self.ordinal,
        )

    def max_score(self, protected, n_restarts, penalty, rng) -> float:
        prep = self.prepared(protected, self.ihat(protected))
        return float(prep.run(n_restarts, penalty, rng)[1])


@moved_options(MOVED_FROM_CBS)
@renamed_arguments(protected="protected_class", n_permutations="n_resamples")
def conditional_bias_scan(
    data: pd.DataFrame,
    *,
    protected_class,
    scan_type: str,
    outcome: str | None = None,
    score: str | None = None,
    decision: str | None = None,
    condition_value: int | None = None,
    direction: str = "positive",
    attributes: Sequence[str] | None = None,
    search: SubsetSearch | None = None,
    ihat: WeightedIhat | None = None,
    n_resamples: int = N_RESAMPLES,
    sequential: bool = True,
    n_jobs: int | None = 1,
    random_state: SeedLike = None,
) -> CBSResult:
    """Find the most biased subgroup of a protected class (Conditional Bias Scan).

    Parameters
    ----------
    data : pandas.DataFrame or AuditData
        The rows; an :class:`~bayesfair.AuditData` brings its outcome, score and
        decision (a threshold's decision included) as the defaults of those arguments.
    protected_class : str, (column, value) or {column: value}
        The protected class: a boolean column, or an attribute value, or a list of its
        values (``{"race": ["Black", "Hispanic"]}``; the attribute then leaves the scan and
        I-hat attributes).
    scan_type : str
        ``"separation_predictions"`` (I = P, C = Y, Gaussian score),
        ``"separation_recommendations"`` (I = P_bin, C = Y),
        ``"sufficiency_predictions"`` (I = Y, C = P) or
        ``"sufficiency_recommendations"`` (I = Y, C = P_bin).
    outcome, score, decision : str
        Columns Y (0/1), P (probability) and P_bin (0/1); those the scan type needs.
    condition_value : {None, 0, 1}
        Value-conditional scan on C = z (for example ``0`` with a separation
        scan for recommendations scans false positive rates).
    direction : {"positive", "negative"}
        Positive: I above its expectation for the protected subgroup (higher
        predicted risk, higher FPR; for sufficiency scans, use "negative" for a
        lower reoffence rate at the same prediction, as in the paper's case study).
    attributes : list of str, optional
        Scan attributes; default every categorical (non-numeric) column except
        the roles and the protected attribute.
    search : SubsetSearch, optional
        The search: penalty (default 1, as the paper), restarts (default 50), the
        Gaussian score's sigma and ordinal attributes.
    ihat : WeightedIhat, optional
        The propensity and I-hat models and their attributes (default: L2 logistic
        regressions on the scan attributes).
    n_resamples : int, default 999
        Permutations of the protected labels for the p-value (0: none, and the summary says so).
    sequential : bool, default True
        Stop permuting once 20 permuted scores reach the observed one, with Besag and
        Clifford's (1991) sequential p-value ``20 / L`` after ``L`` permutations: as
        valid as the full test, and a clearly non-significant scan costs a few dozen
        permutations instead of ``n_resamples``.  False draws all ``n_resamples`` (the
        whole null distribution, for a plot).
    n_jobs : int, optional
        Workers for the permutations (joblib).
    random_state : None, int, or numpy SeedSequence, Generator or RandomState, optional

    Returns
    -------
    CBSResult

    Examples
    --------
    >>> from bayesfair.datasets import make_cbs_semisynthetic
    >>> ds = make_cbs_semisynthetic(mu_sep=1.5, protected_class=("race", "African-American"),
    ...                             random_state=1)
    >>> res = conditional_bias_scan(ds.frame, protected_class="protected", outcome="y",
    ...                             decision="p_bin", scan_type="separation_recommendations",
    ...                             condition_value=0, attributes=ds.covariates,
    ...                             search=SubsetSearch(n_restarts=10), random_state=0)
    >>> res.scan.q > 1
    True

    Notes
    -----
    Fifteen parameters: the question (``protected_class``, ``scan_type``,
    ``condition_value``, ``direction``, ``attributes``), the role columns every entry
    point takes (``outcome``, ``score``, ``decision``), the permutation test's settings
    in the package's vocabulary (``n_resamples``, ``sequential``, ``n_jobs``,
    ``random_state``); the search's and the I-hat model's options are in their objects,
    which :func:`~bayesfair.scan.posterior_bias_scan` shares.
    """
    search = check_option(search, SubsetSearch, "search")
    ihat_options = check_option(ihat, WeightedIhat, "ihat")
    n_restarts, penalty = search.restarts(N_RESTARTS), search.penalty
    data, outcome, score, decision = frame_and_roles(data, outcome, score, decision)
    check_resamples(n_resamples, "n_resamples", minimum=0)
    sequential = check_flag(sequential, "sequential")
    roles = {"outcome": outcome, "score": score, "decision": decision}
    A, label, pipe = scan_pipeline(
        data,
        protected_class,
        scan_type,
        roles,
        condition_value,
        direction,
        attributes,
        search,
        ihat_options.attributes,
        (ihat_options.propensity_model, ihat_options.ihat_model),
    )
    seq = check_seed(random_state)
    scan_seq, perm_seq = seq.spawn(2)
    ihat = pipe.ihat(A)
    if pipe.score == "bernoulli":
        warn_impossible_events(pipe.event[A & pipe.keep], ihat, "I-hat (the expected event)")
    prep = pipe.prepared(A, ihat)
    mask, sc, th, rs = prep.run(n_restarts, penalty, np.random.default_rng(scan_seq))
    res = prep.result(mask, sc, th, rs, penalty)

    in_sub = subgroup_mask(data, res.subgroup)
    comp = ~A & pipe.keep & in_sub
    prot = A & pipe.keep & in_sub
    null, pvalue, skipped = np.empty(0), None, 0
    if n_resamples:
        perm = _Permutations(pipe, prep.sigma, A, n_restarts, penalty)
        null, pvalue, skipped = perm.pvalue(res.score, n_resamples, sequential, perm_seq, n_jobs)
        perm.warn_skipped(skipped, n_resamples, len(null), label)
    return CBSResult(
        scan=res,
        scan_type=scan_type,
        protected_label=label,
        condition_value=condition_value,
        direction=direction,
        n_protected=int(prot.sum()),
        n_comparison=int(comp.sum()),
        rate_protected=float(pipe.event[prot].mean()) if prot.any() else float("nan"),
        rate_comparison=float(pipe.event[comp].mean()) if comp.any() else float("nan"),
        expected_rate=res.expected,
        pvalue=pvalue,
        null_distribution=null,
        stopped_early=bool(n_resamples) and len(null) + skipped < n_resamples,
        ihat=ihat,
        settings={
            "attributes": pipe.attributes,
            "ihat_attributes": pipe.ihat_attributes,
            "penalty": penalty,
            "n_restarts": n_restarts,
            "sigma": prep.sigma,
            "kept": pipe.kept,
        },
    )


class _Permutations:
    """The scan's permutation test: the protected labels permuted, I-hat refitted and the
    data rescanned (at the observed scan's sigma), each permutation once."""

    def __init__(self, pipe, sigma, A: np.ndarray, n_restarts: int, penalty: float) -> None:
        self.pipe, self.sigma, self.A = pipe, sigma, A
        self.n_restarts, self.penalty = n_restarts, penalty

    def chunk(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` permuted scores (NaN where a permuted data set cannot be scanned)."""
        out = np.empty(size)
        p = ScanPipeline.__new__(ScanPipeline)
        p.__dict__.update(self.pipe.__dict__)
        p.sigma = self.sigma
        for b in range(size):
            try:
                out[b] = p.max_score(rng.permutation(self.A), self.n_restarts, self.penalty, rng)
            except Inestimable:
                out[b] = np.nan
        return out

    @staticmethod
    def warn_skipped(skipped: int, n_resamples: int, used: int, label: str) -> None:
        """Say how many permuted data sets could not be scanned, if any.  The observed
        labels are uniform among the permutations that can be scanned (they can), so the
        p-value over those alone stays exact."""
        if skipped:
            warnings.warn(
                f"scan of {label}: {skipped} of {n_resamples} permuted data sets could not be "
                "scanned (I-hat had a single class of its target, or no rows, to learn from); "
                f"the p-value is over the other {used}",
                UserWarning,
                stacklevel=user_stacklevel(),
            )

    def pvalue(self, score: float, n_resamples: int, sequential: bool, seq, n_jobs) -> tuple:
        """The null distribution, the p-value of ``score`` and how many permuted data sets
        could not be scanned: Besag and Clifford's sequential p-value, or all
        ``n_resamples`` permutations."""
        if sequential:
            return sequential_resamples(self.chunk, n_resamples, seq, score - 1e-9, n_jobs=n_jobs)
        null = chunked_resamples(self.chunk, n_resamples, seq, n_jobs=n_jobs)
        skipped = int(np.isnan(null).sum())
        null = null[~np.isnan(null)]
        hits = np.sum(null >= score - 1e-9)
        pvalue = float((1 + hits) / (1 + len(null))) if len(null) else float("nan")
        return null, pvalue, skipped
