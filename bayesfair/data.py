"""Data in: a DataFrame plus column roles, aggregated to a per-intersection table.

The per-intersection table of counts is the sufficient statistic that every
model and count-based metric of the package consumes, so an audit of millions
of rows costs one vectorised pass over the rows and nothing more.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ._groups import Encoded, encode_values
from ._validation import (
    MAX_COUNT,
    as_column_list,
    check_binary,
    check_by,
    check_decision,
    check_group_values,
    check_no_missing_groups,
    check_probability,
    check_real,
    check_scalar_probability,
    intersection_labels,
    is_whole_count,
    require_columns,
)
from ._vocabulary import PSEUDO_COUNT, ROLE_RENAMES, renamed_arguments

__all__ = ["ROLE_KEYWORDS", "AuditData", "as_audit_data"]

#: Largest Cartesian product of protected values the table may have.
MAX_INTERSECTIONS = 2_000_000

_ROLES_AUDITED = ("outcome", "decision")


def _check_score_sums(sums: np.ndarray, n: np.ndarray, column: str) -> None:
    """A score is a probability, as the rows' ``score`` column must be: a row's sum of
    scores lies in [0, n], its mean in [0, 1] (with a little room for rounding)."""
    tol = 1e-9 * np.maximum(n, 1)
    bad = (sums < -tol) | (sums > n + tol)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        shown = sums[i] if column == "score_sum" else sums[i] / n[i]
        what = "in [0, n]" if column == "score_sum" else "in [0, 1]"
        raise ValueError(
            f"column {column!r} must lie {what} (scores are probabilities in [0, 1]); "
            f"{int(bad.sum())} row(s) do not (first: {float(shown):g} with n = {n[i]:g})"
        )


def _features_frame(features: object) -> pd.DataFrame:
    """``sensitive_features`` of :meth:`AuditData.from_arrays` as a DataFrame with a fresh
    index (rows pair by position, as fairlearn pairs them)."""
    if isinstance(features, pd.DataFrame):
        out = features.reset_index(drop=True)
    elif isinstance(features, pd.Series):
        out = features.reset_index(drop=True).to_frame(
            features.name if features.name is not None else "sensitive_feature_0"
        )
    elif isinstance(features, Mapping):
        out = pd.DataFrame({str(k): np.asarray(v) for k, v in features.items()})
    elif features is None or isinstance(features, (str, bytes)):
        raise TypeError(
            "`sensitive_features` must be an array, a Series, a DataFrame or a dict of arrays, "
            f"got {features!r}"
        )
    else:
        arr = np.asarray(features, dtype=object)
        if arr.ndim == 1:
            arr = arr[:, None]
        if arr.ndim != 2:
            raise ValueError("`sensitive_features` must be 1-d (one attribute) or 2-d (several)")
        out = pd.DataFrame(arr, columns=[f"sensitive_feature_{i}" for i in range(arr.shape[1])])
    out.columns = [str(c) for c in out.columns]
    return out


#: the roles of a DataFrame's columns: AuditData's keywords, which every function that takes
#: data accepts beside a DataFrame
ROLE_KEYWORDS = (
    "protected",
    "outcome",
    "score",
    "decision",
    "threshold",
    "covariates",
    "pos_label",
    "categories",
)


def as_audit_data(data: object, roles: Mapping[str, object], argument: str = "data") -> AuditData:
    """The input contract of every function that takes data: an :class:`AuditData` as it
    is, or a DataFrame with the column roles as keywords (``protected=``, ``outcome=``,
    ``score=``, ``decision=``, ``threshold=``, ...), which make one.

    Parameters
    ----------
    data : AuditData or pandas.DataFrame
    roles : mapping
        The role keywords the function was given (empty with an AuditData).
    argument : str
        The argument's name, for messages.

    Returns
    -------
    AuditData
    """
    unknown = sorted(set(roles) - set(ROLE_KEYWORDS))
    if unknown:
        # fairlearn's and scikit-learn's names of the roles, named with the package's
        known = [f"{k}= is {ROLE_RENAMES[k]}= here" for k in unknown if k in ROLE_RENAMES]
        raise TypeError(
            f"unexpected keyword argument(s) {unknown}; the column roles are "
            f"{list(ROLE_KEYWORDS)}" + (f" ({'; '.join(known)})" if known else "")
        )
    if isinstance(data, AuditData):
        if roles:
            raise TypeError(
                f"{sorted(roles)} given with an AuditData, whose columns have their roles "
                f"already: drop them, or pass the DataFrame (`{argument}.frame`) instead"
            )
        return data
    if isinstance(data, pd.DataFrame):
        if "protected" not in roles or "outcome" not in roles:
            raise TypeError(
                f"`{argument}` is a DataFrame: name its columns' roles with protected=[...] and "
                "outcome=... (and decision=, score=, threshold= as needed), or pass an AuditData"
            )
        return AuditData(data, **roles)
    raise TypeError(
        f"`{argument}` must be an AuditData, or a pandas DataFrame with protected= and outcome=, "
        f"got {type(data).__name__}"
    )


def _encode_protected(col: pd.Series, name: str, categories: Sequence | None) -> Encoded:
    """Integer-code one protected column; categories give the order of its values."""
    check_no_missing_groups(col, f"protected column {name!r}")
    enc = encode_values(col, f"protected column {name!r}", categories)
    check_group_values(col, f"protected column {name!r}", n_values=len(enc.categories))
    return enc


def _encode_all(
    frame: pd.DataFrame, protected: list[str], categories: Mapping[str, Sequence] | None
) -> tuple[list[Encoded], tuple[int, ...]]:
    """Encode every protected column of ``frame`` (checking ``categories`` and that each has
    two values or more) and the shape of their Cartesian product."""
    if categories is not None:
        if not isinstance(categories, Mapping):
            raise TypeError("`categories` must be a mapping {protected column: [values...]}")
        extra = [k for k in categories if k not in protected]
        if extra:
            raise ValueError(f"`categories` names columns that are not protected: {extra}")
    categories = dict(categories or {})
    encoded = []
    for col in protected:
        enc = _encode_protected(frame[col], col, categories.get(col))
        if len(enc.categories) < 2:
            raise ValueError(
                f"protected column {col!r} has a single value ({enc.categories[0]!r}); a "
                "sensitive attribute needs at least two values to compare groups"
            )
        encoded.append(enc)
    dims = tuple(len(e.categories) for e in encoded)
    if math.prod(dims) > MAX_INTERSECTIONS:
        raise ValueError(
            f"the protected columns {protected} have {math.prod(dims):,} intersections "
            f"(categories {dict(zip(protected, dims, strict=True))}), more than "
            f"{MAX_INTERSECTIONS:,}; use fewer or coarser attributes"
        )
    return encoded, dims


class AuditData:
    """A validated audit data set aggregated to one row per intersection.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per individual.
    protected : str or list of str
        Sensitive attribute columns; the groups are the intersections of their
        values (the full Cartesian product, including intersections with no rows).
    outcome : str
        Binary outcome (true label) column: bool, or numbers 0/1, or any two
        values with ``pos_label``.
    score : str, optional
        Predicted probability of the positive outcome, in [0, 1].
    decision : str, optional
        Binary decision of the audited mechanism, coded as the outcome: bool, 0/1, or
        the outcome's two values with ``pos_label``.  When absent and ``threshold``
        is given, the decision is ``score >= threshold``.
    threshold : float, optional
        Threshold that turns ``score`` into a decision.
    covariates : list of str, optional
        Further columns kept for methods that condition on them (bias scans,
        structured regression).  They are checked for presence only.
    pos_label : object, optional
        Value of the outcome column (and of a decision column of the same coding) that
        means 1, for non-0/1 codings.
    categories : mapping, optional
        ``{column: [values...]}`` fixing the order of a protected column's values
        and declaring values that may be absent from the data.

    Attributes
    ----------
    protected : tuple of str
    categories : dict
        Ordered values of each protected column.
    n_rows, n_intersections : int
    table : pandas.DataFrame
        Tidy per-intersection table: one column per protected attribute, then
        ``intersection`` (a label), ``n``, ``positives`` (outcome = 1) and, with a
        decision, ``decision_positives``, ``tp``, ``fp``, ``fn``, ``tn``; with a
        score, ``mean_score``.  Intersections with no rows are kept with ``n = 0``.
    empty_intersections : pandas.DataFrame
        The rows of ``table`` with ``n == 0``.
    row_group, row_outcome, row_decision, row_score : numpy.ndarray
        Row-level arrays (intersection index, 0/1 outcome, 0/1 decision, score)
        for methods that need more than counts (AUC, permutation tests, scans).

    Examples
    --------
    >>> import pandas as pd
    >>> from bayesfair import AuditData
    >>> df = pd.DataFrame({"race": ["a", "a", "b", "b"], "sex": ["f", "m", "f", "f"],
    ...                    "y": [1, 0, 1, 1]})
    >>> data = AuditData(df, protected=["race", "sex"], outcome="y")
    >>> data.table[["intersection", "n", "positives"]]
      intersection  n  positives
    0         a, f  1          1
    1         a, m  1          0
    2         b, f  2          2
    3         b, m  0          0
    """

    @renamed_arguments(levels="categories")
    def __init__(
        self,
        frame: pd.DataFrame,
        protected: str | Sequence[str],
        outcome: str,
        *,
        score: str | None = None,
        decision: str | None = None,
        threshold: float | None = None,
        covariates: str | Sequence[str] | None = None,
        pos_label: object | None = None,
        categories: Mapping[str, Sequence] | None = None,
    ) -> None:
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(f"`frame` must be a pandas DataFrame, got {type(frame).__name__}")
        if frame.columns.has_duplicates:
            dup = sorted(map(str, frame.columns[frame.columns.duplicated()].unique()))
            raise ValueError(f"the DataFrame has duplicate column names: {dup}")
        protected_cols = as_column_list(protected, "protected")
        if not protected_cols:
            raise ValueError("`protected` must name at least one sensitive attribute column")
        if not isinstance(outcome, str):
            raise TypeError(f"`outcome` must be a column name (str), got {outcome!r}")
        for arg, value in (("score", score), ("decision", decision)):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"`{arg}` must be a column name (str) or None, got {value!r}")
        covariate_cols = as_column_list(covariates, "covariates")
        _check_one_role_each(protected_cols, outcome, score, decision, covariate_cols)
        require_columns(frame, protected_cols, "protected")
        require_columns(frame, [outcome], "outcome")
        require_columns(frame, [c for c in (score, decision) if c], "score/decision")
        require_columns(frame, covariate_cols, "covariate")
        if len(frame) == 0:
            raise ValueError("the DataFrame has no rows; an audit needs data")

        encoded, dims = _encode_all(frame, protected_cols, categories)
        n_int = math.prod(dims)

        y = check_binary(frame[outcome], outcome, "outcome", pos_label)
        s = check_probability(frame[score], score, "score") if score else None
        threshold = _check_threshold(threshold, score, decision)
        if decision is not None:
            d = check_decision(frame[decision], decision, "decision", pos_label, frame[outcome])
        elif threshold is not None:
            d = (s >= threshold).astype(np.uint8)
        else:
            d = None

        self.frame = frame
        self.protected = tuple(protected_cols)
        self.outcome = outcome
        self.score = score
        self.decision = decision
        self.threshold = threshold
        self.covariates = tuple(covariate_cols)
        self.pos_label = pos_label
        self.categories = {c: e.categories for c, e in zip(protected_cols, encoded, strict=True)}
        self.shape_ = dims
        self.n_rows = len(frame)
        self.n_intersections = n_int
        if len(encoded) == 1:
            self.row_group = encoded[0].codes
        else:
            self.row_group = np.ravel_multi_index(tuple(e.codes for e in encoded), dims)
        self.row_outcome = y
        self.row_decision = d
        self.row_score = s
        self._counts = self._aggregate()
        self.grouping(None)  # builds the labels: refuses one that two intersections would share

    @classmethod
    @renamed_arguments(levels="categories")
    def from_arrays(
        cls,
        y_true: object,
        y_pred: object = None,
        *,
        sensitive_features: object,
        y_score: object = None,
        pos_label: object | None = None,
    ) -> AuditData:
        """An audit of arrays, as fairlearn's metrics take them: the one-line path from
        ``y_true``, ``y_pred`` and ``sensitive_features`` to an :class:`AuditData`.

        Parameters
        ----------
        y_true : array_like
            The outcome, one value per row (0/1, boolean, or two values with
            ``pos_label``).
        y_pred : array_like, optional
            The audited decision (0/1 or boolean).
        sensitive_features : array_like, Series, DataFrame or dict
            One protected attribute (an array or a named Series), several (a DataFrame, or
            a dict of name -> array); an unnamed one is called ``sensitive_feature_0``, ...
        y_score : array_like, optional
            A score in [0, 1].
        pos_label : object, optional
            The value of ``y_true`` that means 1.

        Returns
        -------
        AuditData
            With columns ``y_true``, ``y_pred`` and ``y_score`` beside the attributes.

        Examples
        --------
        >>> from bayesfair import AuditData
        >>> data = AuditData.from_arrays([1, 0, 1, 1], [1, 1, 0, 1],
        ...                              sensitive_features=["a", "a", "b", "b"])
        >>> data.table[["intersection", "n", "positives", "fp"]].values.tolist()
        [['a', 2, 1, 1], ['b', 2, 2, 0]]
        """
        features = _features_frame(sensitive_features)
        n = len(features)
        columns = {"y_true": y_true, "y_pred": y_pred, "y_score": y_score}
        frame = features.copy()
        for name, values in columns.items():
            if values is None:
                continue
            if isinstance(values, (str, bytes)) or np.ndim(values) != 1:
                raise ValueError(f"`{name}` must be a 1-d array of one value per row")
            if len(values) != n:
                raise ValueError(
                    f"`{name}` has {len(values)} values but `sensitive_features` has {n} rows"
                )
            if name in frame.columns:
                raise ValueError(f"`sensitive_features` has a column named {name!r}; rename it")
            frame[name] = np.asarray(values)
        return cls(
            frame,
            list(features.columns),
            "y_true",
            decision="y_pred" if y_pred is not None else None,
            score="y_score" if y_score is not None else None,
            pos_label=pos_label,
        )

    @classmethod
    @renamed_arguments(levels="categories")
    def from_counts(
        cls,
        table: pd.DataFrame,
        protected: str | Sequence[str],
        *,
        outcome: str = "outcome",
        decision: str | None = None,
        score: str | None = None,
        categories: Mapping[str, Sequence] | None = None,
    ) -> AuditData:
        """An audit of a per-intersection count table, for data too large to hold as rows.

        ``table`` is what :func:`~bayesfair.aggregate_counts` returns (computed where the
        data live, on a Dask cluster, say): the protected columns, ``n`` and
        ``positives``, and optionally the confusion cells ``tp``, ``fp``, ``fn``,
        ``tn`` (the decision's counts) and ``score_sum`` (or ``mean_score``, as in
        :attr:`table`, which therefore round-trips). Rows of the same intersection are
        added up, so partial tables (one per day, one per shard) can be stacked.
        Everything that needs only counts works as on the rows: epsilon-DF and gamma-SF
        with their intervals, every Bayesian model, rates and their permutation tests,
        :func:`~bayesfair.run_audit` and its report. What needs rows (AUC, scans,
        discrimination tests) refuses, saying so.

        Parameters
        ----------
        table : pandas.DataFrame
            One row per intersection (or part of one) with non-negative whole counts.
        protected : str or list of str
            The protected columns of ``table``.
        outcome : str, default "outcome"
            The outcome's name in reports.
        decision : str, optional
            The decision's name in reports (default ``"decision"`` when ``table`` has
            the confusion cells).
        score : str, optional
            The score's name in reports (default ``"score"`` when ``table`` has
            ``score_sum``).
        categories : mapping, optional
            ``{column: [values...]}``, as in :class:`AuditData`: the order of a
            column's values, and values no row has.

        Returns
        -------
        AuditData
            With ``has_rows`` False.

        Examples
        --------
        >>> import pandas as pd
        >>> from bayesfair import AuditData, aggregate_counts
        >>> df = pd.DataFrame({"g": ["a", "a", "b", "b"], "y": [1, 0, 1, 1], "d": [1, 1, 0, 1]})
        >>> data = AuditData.from_counts(aggregate_counts(df, "g", "y", decision="d"), "g")
        >>> data.table[["intersection", "n", "positives", "tp", "fp"]]
          intersection  n  positives  tp  fp
        0            a  2          1   1   1
        1            b  2          2   1   0
        """
        protected_cols, cells = _check_count_table(table, protected, outcome, decision, score)
        encoded, dims = _encode_all(table, protected_cols, categories)
        G = math.prod(dims)
        idx = (
            encoded[0].codes
            if len(encoded) == 1
            else np.ravel_multi_index(tuple(e.codes for e in encoded), dims)
        )
        counts = _summed_counts(table, cells, idx, G)
        if cells:
            decision = decision or "decision"
        if "score_sum" in table.columns or "mean_score" in table.columns:
            counts["score_sum"] = _summed_scores(table, idx, G)
            score = score or "score"
        self = cls.__new__(cls)
        self.frame = None
        self.protected = tuple(protected_cols)
        self.outcome, self.score, self.decision = outcome, score, decision
        self.threshold, self.covariates, self.pos_label = None, (), None
        self.categories = {c: e.categories for c, e in zip(protected_cols, encoded, strict=True)}
        self.shape_ = dims
        self.n_rows = int(counts["n"].sum())
        self.n_intersections = G
        self.row_group = self.row_outcome = self.row_decision = self.row_score = None
        self._counts = counts
        self.grouping(None)
        return self

    @property
    def has_rows(self) -> bool:
        """Whether the rows are here (False for :meth:`from_counts`)."""
        return self.frame is not None

    @property
    def has_decision(self) -> bool:
        """Whether the decision's counts are known (a decision column, a threshold on the
        score, or the confusion cells of a count table)."""
        return "tp" in self._counts

    def require_rows(self, what: str) -> None:
        """Refuse, naming ``what``, when only counts are here.

        Parameters
        ----------
        what : str
            The method that needs rows, for the message.
        """
        if self.frame is None:
            raise ValueError(
                f"{what} needs the rows, and this AuditData holds per-intersection counts "
                "only (AuditData.from_counts)"
            )

    # ------------------------------------------------------------------ internals
    def _aggregate(self) -> dict[str, np.ndarray]:
        g, y, d = self.row_group, self.row_outcome, self.row_decision
        G = self.n_intersections
        out: dict[str, np.ndarray] = {}
        if d is None:
            cells = np.bincount(g * 2 + y, minlength=2 * G).reshape(G, 2)
            out["n"] = cells.sum(axis=1)
            out["positives"] = cells[:, 1]
        else:
            # cells[g, y, d]: the confusion matrix of every intersection in one pass.
            cells = np.bincount(g * 4 + y * 2 + d, minlength=4 * G).reshape(G, 2, 2)
            out["n"] = cells.sum(axis=(1, 2))
            out["positives"] = cells[:, 1, :].sum(axis=1)
            out["decision_positives"] = cells[:, :, 1].sum(axis=1)
            out["tp"] = cells[:, 1, 1]
            out["fp"] = cells[:, 0, 1]
            out["fn"] = cells[:, 1, 0]
            out["tn"] = cells[:, 0, 0]
        if self.row_score is not None:
            out["score_sum"] = np.bincount(g, weights=self.row_score, minlength=G)
        return out

    def _reduce(self, arr: np.ndarray, by: Sequence[str]) -> np.ndarray:
        """Sum a per-intersection array over the attributes not in ``by``."""
        keep = [self.protected.index(b) for b in by]
        full = arr.reshape(self.shape_)
        drop = tuple(i for i in range(len(self.protected)) if i not in keep)
        reduced = full.sum(axis=drop) if drop else full
        # Order the remaining axes as in ``by``.
        remaining = [i for i in range(len(self.protected)) if i in keep]
        order = [remaining.index(k) for k in keep]
        return np.transpose(reduced, order).reshape(-1)

    def _check_by(self, by: str | Sequence[str] | None) -> list[str]:
        return check_by(by, self.protected)

    def _check_role(self, role: str) -> None:
        if role not in _ROLES_AUDITED:
            raise ValueError(f"`role` must be one of {_ROLES_AUDITED}, got {role!r}")
        if role == "decision" and not self.has_decision:
            raise ValueError(
                "role='decision' needs a decision: give `decision=` or `score=` with `threshold=`"
            )

    # ------------------------------------------------------------------ public API
    def grouping(self, by: str | Sequence[str] | None = None) -> pd.DataFrame:
        """The groups of ``by`` (default: all protected columns) in table order.

        Parameters
        ----------
        by : str or list of str, optional
            A subset of the protected columns.

        Returns
        -------
        pandas.DataFrame
            One row per group of the Cartesian product (categorical columns) and its
            label in ``intersection``.
        """
        cols = self._check_by(by)
        built = self.__dict__.setdefault("_groupings", {})  # the categories never change
        if tuple(cols) not in built:
            # the Cartesian product in C order (the last column varies fastest), from codes
            levels = [pd.Index(self.categories[c]) for c in cols]
            codes = np.indices([len(lv) for lv in levels]).reshape(len(cols), -1)
            groups = pd.DataFrame(
                {
                    c: pd.Categorical.from_codes(k, categories=self.categories[c])
                    for c, k in zip(cols, codes, strict=True)
                }
            )
            values = zip(*(lv.take(k) for lv, k in zip(levels, codes, strict=True)), strict=True)
            groups["intersection"] = intersection_labels(values, cols)
            built[tuple(cols)] = groups
        return built[tuple(cols)].copy()  # a caller may add columns to its copy

    def table_for(self, by: str | Sequence[str] | None = None) -> pd.DataFrame:
        """Tidy count table for the groups of ``by`` (a subset of the protected columns).

        ``by=None`` gives the full intersectional table; ``by="race"`` the
        marginal table of one attribute.  Counts are sums over the other
        attributes, so the table costs nothing extra to compute.

        Parameters
        ----------
        by : str or list of str, optional
            A subset of the protected columns.

        Returns
        -------
        pandas.DataFrame
            :meth:`grouping` with the counts (``n``, ``positives``, the confusion cells
            with a decision, ``mean_score`` with a score); empty groups are kept.
        """
        cols = self._check_by(by)
        table = self.grouping(cols)
        for key, arr in self._counts.items():
            table[key] = self._reduce(arr, cols)
        if "score_sum" in table:
            with np.errstate(invalid="ignore", divide="ignore"):
                table["mean_score"] = table.pop("score_sum") / table["n"].where(table["n"] > 0)
        return table

    @property
    def table(self) -> pd.DataFrame:
        """The per-intersection table (see the class docstring)."""
        return self.table_for(None)

    @property
    def empty_intersections(self) -> pd.DataFrame:
        """Intersections of the Cartesian product that have no rows."""
        t = self.grouping(None)
        return t.loc[self._counts["n"] == 0].reset_index(drop=True)

    @property
    def group_labels(self) -> list[str]:
        """Labels of the intersections, in table order."""
        return self.grouping(None)["intersection"].tolist()

    @renamed_arguments(target="role")
    def counts(self, role: str = "outcome", by: str | Sequence[str] | None = None) -> np.ndarray:
        """Counts ``N[s, y]`` shaped ``(n_groups, 2)``: column 0 is y = 0, column 1 y = 1.

        Parameters
        ----------
        role : {"outcome", "decision"}
            The true labels or the audited mechanism's decisions.
        by : str or list of str, optional
            A subset of the protected columns (default: all).

        Returns
        -------
        numpy.ndarray
            Integer counts in the order of :meth:`grouping`.
        """
        self._check_role(role)
        cols = self._check_by(by)
        n = self._reduce(self._counts["n"], cols)
        key = "positives" if role == "outcome" else "decision_positives"
        pos = self._reduce(self._counts[key], cols)
        return np.stack([n - pos, pos], axis=-1)

    @renamed_arguments(target="role", alpha="pseudo_count")
    def probabilities(
        self,
        role: str = "outcome",
        *,
        pseudo_count: float = PSEUDO_COUNT,
        by: str | Sequence[str] | None = None,
    ) -> np.ndarray:
        """Empirical ``P(y | s)``, ``(n_groups, 2)``, smoothed by a Dirichlet ``pseudo_count``.

        With ``pseudo_count = 0`` the rows of empty groups are NaN (the probability is
        undefined); with ``pseudo_count > 0`` they equal the prior mean ``1/2``.

        Parameters
        ----------
        role : {"outcome", "decision"}
            The true labels or the audited mechanism's decisions.
        pseudo_count : float, default 0.5
            Dirichlet concentration added to each count (Foulds et al., eq. 4).
        by : str or list of str, optional
            A subset of the protected columns (default: all).

        Returns
        -------
        numpy.ndarray
            Rows sum to 1 (NaN rows for empty groups when ``pseudo_count = 0``).
        """
        pseudo_count = check_real(pseudo_count, "pseudo_count", "non-negative")
        c = self.counts(role, by).astype(np.float64)
        num = c + pseudo_count
        den = num.sum(axis=-1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            p = num / den
        return p

    def group_sizes(self, by: str | Sequence[str] | None = None) -> np.ndarray:
        """Number of rows of every group, in table order.

        Parameters
        ----------
        by : str or list of str, optional
            A subset of the protected columns (default: all).

        Returns
        -------
        numpy.ndarray
            Shaped ``(n_groups,)``, in the order of :meth:`grouping`.
        """
        return self._reduce(self._counts["n"], self._check_by(by))

    def rows_frame(self) -> tuple[pd.DataFrame, dict[str, str | None]]:
        """The rows, as the methods that take a frame and column names take them: every
        column of the frame, the outcome and decision as 0/1 (a threshold's decision as a
        column of its own, ``"<score> >= <threshold>"``), and the roles' column names.

        Returns
        -------
        frame : pandas.DataFrame
        roles : dict
            ``protected`` (list), ``outcome``, ``decision``, ``score``.
        """
        frame, outcome, decision = self._coded_frame(list(self.frame.columns))
        return frame, {
            "protected": list(self.protected),
            "outcome": outcome,
            "decision": decision,
            "score": self.score,
        }

    def _coded_frame(self, columns: Sequence[str]) -> tuple[pd.DataFrame, str, str | None]:
        """``columns`` of the frame beside the 0/1 outcome and decision, named after their
        roles' columns (a decision from a threshold: ``"<score> >= <threshold>"``), for
        methods that take a frame and column names; with those names."""
        self.require_rows("a method of the rows (a scan, a per-group evaluation)")
        f = pd.DataFrame({c: self.frame[c] for c in columns})
        outcome, decision = self.outcome, None
        f[outcome] = self.row_outcome.astype(int)
        if self.row_decision is not None:
            decision = self.decision or f"{self.score} >= {self.threshold:g}"
            while decision in f.columns:  # roles are distinct columns; a derived name may not be
                decision += "_"
            f[decision] = self.row_decision.astype(int)
        return f, outcome, decision

    def __repr__(self) -> str:
        n_empty = int((self._counts["n"] == 0).sum())
        parts = [
            f"{self.n_rows:,} rows",
            f"protected={list(self.protected)}",
            f"{self.n_intersections} intersections ({n_empty} empty)",
            f"outcome={self.outcome!r}",
        ]
        if self.score:
            parts.append(f"score={self.score!r}")
        if self.decision:
            parts.append(f"decision={self.decision!r}")
        elif self.threshold is not None:
            parts.append(f"decision=score>={self.threshold:g}")
        if self.frame is None:
            parts.append("counts only")
        return "AuditData(" + ", ".join(parts) + ")"


def _check_count_table(table, protected, outcome, decision, score) -> tuple[list[str], list[str]]:
    """The protected columns and the confusion cells of a count table, after checking that
    its columns and the roles named agree (:meth:`AuditData.from_counts`)."""
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"`table` must be a pandas DataFrame, got {type(table).__name__}")
    protected_cols = as_column_list(protected, "protected")
    if not protected_cols:
        raise ValueError("`protected` must name at least one sensitive attribute column")
    require_columns(table, protected_cols, "protected")
    require_columns(table, ["n", "positives"], "count")
    cells = [c for c in ("tp", "fp", "fn", "tn") if c in table.columns]
    if cells and len(cells) < 4:
        raise ValueError(
            f"`table` has the confusion cells {cells} but not "
            f"{[c for c in ('tp', 'fp', 'fn', 'tn') if c not in cells]}: give all four "
            "for the decision's counts, or none"
        )
    if "decision_positives" in table.columns and not cells:
        raise ValueError(
            "`table` has decision_positives but not the confusion cells tp, fp, fn, tn, "
            "which the rates need: aggregate_counts(..., decision=...) gives them"
        )
    for arg, value in (("outcome", outcome), ("decision", decision), ("score", score)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"`{arg}` must be a name (str), got {value!r}")
    if decision is not None and not cells:
        raise ValueError("`decision` names the decision, but `table` has no tp, fp, fn, tn")
    if score is not None and not {"score_sum", "mean_score"} & set(table.columns):
        raise ValueError("`score` names the score, but `table` has no score_sum or mean_score")
    if len(table) == 0:
        raise ValueError("`table` has no rows; an audit needs counts")
    return protected_cols, cells


def _summed_counts(table: pd.DataFrame, cells: list[str], idx: np.ndarray, G: int) -> dict:
    """Rows, positives (and the confusion cells) per intersection, summed over the table's
    rows of each (whole numbers, checked to agree with each other)."""
    whole = {}
    for col in ["n", "positives", *cells]:
        v = pd.to_numeric(table[col], errors="coerce").to_numpy(dtype=float)
        bad = ~is_whole_count(v)
        if bad.any():
            first = table[col].to_numpy()[bad][:1].tolist()[0]
            raise ValueError(
                f"count column {col!r} must hold non-negative whole numbers; "
                f"{int(bad.sum())} row(s) do not (first: {first!r})"
            )
        whole[col] = np.bincount(idx, weights=v, minlength=G).round().astype(np.int64)
        if whole[col].max(initial=0) >= MAX_COUNT:
            raise ValueError(
                f"count column {col!r} adds up to {int(whole[col].max())} for an "
                f"intersection, at or above 2**53 = {MAX_COUNT}, beyond which floating "
                "point does not hold every whole number: the rates would lose precision"
            )
    counts = {"n": whole["n"], "positives": whole["positives"]}
    rules = [("positives <= n", (counts["positives"] <= counts["n"]).all())]
    if cells:
        tp, fp, fn, tn = (whole[c] for c in ("tp", "fp", "fn", "tn"))
        rules += [
            ("tp + fp + fn + tn == n", np.array_equal(tp + fp + fn + tn, counts["n"])),
            ("tp + fn == positives", np.array_equal(tp + fn, counts["positives"])),
        ]
        if "decision_positives" in table.columns:
            given = pd.to_numeric(table["decision_positives"], errors="coerce")
            summed = np.bincount(idx, weights=given.to_numpy(float), minlength=G)
            rules.append(("tp + fp == decision_positives", np.array_equal(tp + fp, summed)))
        counts.update(decision_positives=tp + fp, tp=tp, fp=fp, fn=fn, tn=tn)
    broken = [rule for rule, ok in rules if not ok]
    if broken:
        raise ValueError(f"`table`'s counts break {broken[0]} for some intersection")
    if counts["n"].sum() == 0:
        raise ValueError("`table` counts no rows; an audit needs data")
    return counts


def _summed_scores(table: pd.DataFrame, idx: np.ndarray, G: int) -> np.ndarray:
    """The scores' sum per intersection, from a ``score_sum`` or a ``mean_score`` column
    (AuditData.table gives the mean score, NaN where a group has no rows)."""
    col = "score_sum" if "score_sum" in table.columns else "mean_score"
    v = pd.to_numeric(table[col], errors="coerce").to_numpy(dtype=float)
    if col == "mean_score":
        rows = pd.to_numeric(table["n"]).to_numpy(dtype=float)
        v = np.where(rows > 0, v * rows, 0.0)
    if not np.isfinite(v).all():
        raise ValueError(f"column {col!r} must hold finite numbers (where n > 0)")
    _check_score_sums(v, pd.to_numeric(table["n"]).to_numpy(dtype=float), col)
    return np.bincount(idx, weights=v, minlength=G)


def _check_one_role_each(protected_cols, outcome, score, decision, covariate_cols) -> None:
    """Refuse a column given two roles (an outcome that is also protected, say)."""
    roles: dict[str, str] = {}
    for role, cols in (
        ("protected", protected_cols),
        ("outcome", [outcome]),
        ("score", [score] if score else []),
        ("decision", [decision] if decision else []),
        ("covariates", covariate_cols),
    ):
        for col in cols:
            if col in roles:
                raise ValueError(
                    f"column {col!r} is given two roles ({roles[col]} and {role}); "
                    "each column may have one role"
                )
            roles[col] = role


def _check_threshold(threshold, score, decision) -> float | None:
    """A threshold turns the score into the decision: a probability, with a score and
    without a decision column."""
    if threshold is None:
        return None
    threshold = check_scalar_probability(threshold, "threshold")
    if score is None:
        raise ValueError("`threshold` turns `score` into a decision, but no score was given")
    if decision is not None:
        raise ValueError(
            "give either `decision` (a column) or `threshold` (applied to `score`), not both"
        )
    return threshold
