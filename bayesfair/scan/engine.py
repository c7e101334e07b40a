"""Multidimensional fast subset scan (Neill 2012; Zhang and Neill's Bias Scan; Boxer et al.).

Finds the subgroup -- a non-empty subset of values for every scan attribute --
that maximises a log-likelihood-ratio score of observed events against their
expectations, minus a penalty per included attribute value (no penalty for an
attribute whose values are all included).  Each coordinate step is exact: it
finds the optimal subset of one attribute's values, the others held fixed, by
the interval construction of Boxer et al. (Appendix A.2, Algorithm 1) that the
additive (ALTSS) property of the scores allows, with the penalty folded into
the per-value scores.  Random restarts (the first at all values) approach the
global optimum.

The compiled core (:mod:`bayesfair.scan._kernel`, numba) works on *atoms*, rows
that share all attribute values and the expectation, so the cost grows with the
number of distinct (cell, expectation) pairs, never quadratically in rows.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .._plotting import literals, new_axes
from .._repr import compact_repr
from .._result import ResultMixin
from .._validation import (
    SeedLike,
    as_column_list,
    check_count,
    check_group_values,
    check_random_state,
    check_real,
    check_same_index,
    is_numeric_not_bool,
)
from .._vocabulary import renamed_arguments
from .._warning_location import user_stacklevel
from . import _kernel

__all__ = [
    "ScanResult",
    "check_attribute_values",
    "describe_subgroup",
    "resolve_ordinal",
    "subgroup_mask",
    "subset_scan",
]

SCORES = ("bernoulli", "gaussian")
DIRECTIONS = ("positive", "negative")


def check_direction(direction: str) -> None:
    """Refuse a scan direction that is not one of :data:`DIRECTIONS`, by name."""
    if direction not in DIRECTIONS:
        raise ValueError(f"`direction` must be one of {DIRECTIONS}, got {direction!r}")


_EPS = 1e-9


def safe_logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, _EPS, 1 - _EPS)
    return np.log(p) - np.log1p(-p)


def warn_impossible_events(observed: np.ndarray, expected: np.ndarray, what: str) -> None:
    """Warn when the Bernoulli score gets rows whose event ``expected`` calls impossible.

    An event where the expectation is 0 (or no event where it is 1) has
    probability 0 under the null, so the likelihood ratio of any subgroup holding it grows
    without bound in q: the scan's score and q then measure the contradiction, not a bias.
    Typical cause: 0/1 decisions, or a model that predicts exactly 0 or 1, given as the
    expectation.
    """
    # the score clips expectations to [_EPS, 1 - _EPS]; beyond that they count as 0 or 1
    bad = ((expected <= _EPS) & (observed == 1)) | ((expected >= 1 - _EPS) & (observed == 0))
    if bad.any():
        warnings.warn(
            f"{int(bad.sum())} of {len(bad)} rows have an outcome that {what} gives probability "
            "0 (an event where it is 0, or none where it is 1, to within 1e-9): under the null "
            "they cannot happen, so the Bernoulli score of a subgroup holding them grows without "
            "bound in q; give predicted probabilities strictly inside (0, 1)",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def warn_clipped_logits(p: np.ndarray, what: str) -> None:
    """Warn when the Gaussian score meets probabilities of exactly 0 or 1.

    The Gaussian score works on logits, which are infinite there; they are clipped to
    ``[1e-9, 1 - 1e-9]`` (a logit of +-20.7), so the score of a subgroup holding such rows
    is set by the clip rather than by the data.
    """
    bad = (p <= _EPS) | (p >= 1 - _EPS)
    if bad.any():
        warnings.warn(
            f"{int(bad.sum())} of {len(bad)} rows have {what} probability 0 or 1 (to within "
            "1e-9): the Gaussian score works on logits, which are infinite there, so they are "
            "clipped to [1e-9, 1 - 1e-9] and the score depends on that clip; clip them yourself "
            "to a bound your model supports, e.g. np.clip(p, 1e-3, 1 - 1e-3)",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def describe_subgroup(
    subgroup: dict[str, list], prefix: str = "", ordinal: Sequence[str] = ()
) -> str:
    """Words for a subgroup: ``"sex = Male; age = Under 25"`` (``"all values"`` when
    unrestricted); a range of three or more values of an ``ordinal`` attribute reads
    ``"priors = 2 to 9"``.

    Parameters
    ----------
    subgroup : dict
        ``{attribute: [included values]}``.
    prefix : str, optional
        Put in front of the words.
    ordinal : sequence of str, optional
        Attributes whose values are ordered (their runs read as ranges).

    Returns
    -------
    str

    Examples
    --------
    >>> from bayesfair.scan import describe_subgroup
    >>> describe_subgroup({"sex": ["Male"], "priors": [2, 3, 4]}, ordinal=["priors"])
    'sex = Male; priors = 2 to 4'
    """
    parts = [
        f"{k} = {v[0]} to {v[-1]}"
        if k in ordinal and len(v) > 2
        else f"{k} = {' or '.join(map(str, v))}"
        for k, v in subgroup.items()
    ]
    text = "; ".join(parts) if parts else "all values"
    return f"{prefix}{text}" if prefix else text


def subgroup_mask(frame: pd.DataFrame, subgroup: dict[str, list]) -> np.ndarray:
    """Boolean row mask of a subgroup given as ``{attribute: [values]}``.

    Parameters
    ----------
    frame : pandas.DataFrame
    subgroup : dict
        ``{attribute: [included values]}`` (for example ``ScanResult.subgroup``).

    Returns
    -------
    numpy.ndarray
        True for the rows in the subgroup.

    Examples
    --------
    >>> import pandas as pd
    >>> from bayesfair.scan import subgroup_mask
    >>> df = pd.DataFrame({"sex": ["M", "F", "M"], "age": ["<25", "<25", "25+"]})
    >>> subgroup_mask(df, {"sex": ["M"], "age": ["<25"]}).tolist()
    [True, False, False]
    """
    mask = np.ones(len(frame), bool)
    for col, vals in subgroup.items():
        if col not in frame.columns:
            raise ValueError(f"subgroup attribute {col!r} is not a column of the data")
        mask &= frame[col].isin(vals).to_numpy()
    return mask


@dataclass
class ScanResult(ResultMixin):  # numpydoc ignore=PR01
    """The highest-scoring subgroup of a subset scan.

    Attributes
    ----------
    subgroup : dict
        ``{attribute: [included values]}`` for the attributes the subgroup restricts
        (attributes with all values included are left out).
    score : float
        Penalised log-likelihood-ratio score F(S*) - penalty.
    llr : float
        The unpenalised score F(S*).
    q, mu : float
        Maximum-likelihood odds multiplier (Bernoulli) or log-odds mean shift
        (Gaussian) of the subgroup; the other is ``nan``.
    n : int
        Rows in the subgroup.
    observed, expected : float
        Mean event and mean expectation in the subgroup.
    membership : numpy.ndarray
        Boolean mask of the subgroup over the scanned rows.
    restart_scores : numpy.ndarray
        Score reached by each restart (the first started at all values).
    score_type, direction : str
        The scan's score (``"bernoulli"`` or ``"gaussian"``) and direction.
    penalty : float
        Penalty per restricted attribute value.
    sigma : float or None
        Noise scale of the Gaussian score.
    attributes : tuple of str
        The scanned attributes.
    values : dict
        Every value of every scanned attribute.
    ordinal : tuple of str
        Attributes scanned as ordered (contiguous ranges only).
    """

    __repr__ = compact_repr

    subgroup: dict[str, list]
    score: float
    llr: float
    q: float
    mu: float
    n: int
    observed: float
    expected: float
    score_type: str
    direction: str
    penalty: float
    sigma: float | None
    membership: np.ndarray = field(repr=False)
    restart_scores: np.ndarray = field(repr=False)
    attributes: tuple[str, ...] = ()
    values: dict[str, list] = field(default_factory=dict, repr=False)
    ordinal: tuple[str, ...] = ()

    def describe(self) -> str:
        """The subgroup in words (:func:`describe_subgroup`).

        Returns
        -------
        str
        """
        return describe_subgroup(self.subgroup, ordinal=self.ordinal)

    def summary(self) -> pd.DataFrame:
        """One-row table of the detected subgroup.

        Returns
        -------
        pandas.DataFrame
        """
        return pd.DataFrame(
            [
                {
                    "subgroup": self.describe(),
                    "n": self.n,
                    "observed": self.observed,
                    "expected": self.expected,
                    "score": self.score,
                    "q" if self.score_type == "bernoulli" else "mu": (
                        self.q if self.score_type == "bernoulli" else self.mu
                    ),
                    "direction": self.direction,
                    "penalty": self.penalty,
                }
            ]
        )

    def plot(self, ax=None):
        """Which values of every scanned attribute the detected subgroup takes.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Where to draw (default: a new figure's axes).

        Returns
        -------
        matplotlib.axes.Axes
        """
        labels, inside = [], []
        for attr in self.attributes:
            for v in self.values.get(attr, []):
                labels.append(f"{attr} = {v}")
                inside.append(attr not in self.subgroup or v in self.subgroup[attr])
        ax = new_axes(ax, figsize=(4.5, 0.22 * len(labels) + 1.2))
        y = np.arange(len(labels))[::-1]
        ax.barh(y, np.ones(len(y)), color=["C3" if i else "0.85" for i in inside])
        ax.set_yticks(y, literals(labels), fontsize=7)
        ax.set_xticks([])
        ax.set_title(f"subgroup (red), score {self.score:.3g}, {self.n} rows", fontsize=9)
        return ax


def row_codes(frame: pd.DataFrame, attributes: Sequence[str]):
    codes = np.empty((len(frame), len(attributes)), np.int64)
    values: dict[str, list] = {}
    for j, col in enumerate(attributes):
        s = frame[col]
        if s.isna().any():
            raise ValueError(
                f"scan attribute {col!r} has {int(s.isna().sum())} missing values; "
                "fill or drop them before scanning"
            )
        if isinstance(s.dtype, pd.CategoricalDtype):
            s = s.cat.remove_unused_categories()
            c, cats = s.cat.codes.to_numpy(), list(s.cat.categories)
        else:
            c, cats = pd.factorize(s, sort=True)
            cats = list(cats)
        codes[:, j] = c
        values[col] = list(cats)
    return codes, values


def _as_array(frame: pd.DataFrame, x, name: str) -> np.ndarray:
    if isinstance(x, str):
        if x not in frame.columns:
            raise ValueError(f"`{name}` column {x!r} is not in the data")
        arr = frame[x].to_numpy(dtype=float)
    else:
        check_same_index(data=frame, **{name: x})
        arr = np.asarray(x, dtype=float)
        if arr.shape != (len(frame),):
            raise ValueError(
                f"`{name}` must have one value per row ({len(frame)}), got {arr.shape}"
            )
    if not np.isfinite(arr).all():
        raise ValueError(f"`{name}` has missing or infinite values")
    return arr


#: a numeric scan attribute with more distinct values than this, scanned as unordered
#: categories, gets a warning: any subset of its values can form the subgroup
MANY_VALUES = 10
#: an ordinal attribute with more values than this gets a warning: a coordinate step scores
#: every contiguous range of its values, k (k + 1) / 2 of them
MANY_ORDINAL_VALUES = 50


def check_attribute_values(data: pd.DataFrame, columns: Sequence[str], argument: str) -> None:
    """Refuse columns with more than ``MAX_GROUP_VALUES`` (1,000) distinct values (a
    continuous measurement, an identifier): a scan searches subsets of an attribute's
    values, and the expectations model holds one indicator per value."""
    for c in columns:
        check_group_values(data[c], f"{argument} {c!r}", " (then ordinal='auto' scans ranges)")


def check_ordinal(ordinal) -> None:
    """Refuse an ``ordinal`` that is not None, ``"auto"`` or a list of column names."""
    if isinstance(ordinal, str):
        if ordinal != "auto":
            raise ValueError(
                f"`ordinal` must be a list of scan attributes, 'auto' or None, got {ordinal!r}"
            )
    elif ordinal is not None:
        as_column_list(ordinal, "ordinal")


def resolve_ordinal(data: pd.DataFrame, attributes: Sequence[str], ordinal) -> tuple[str, ...]:
    """The scan attributes treated as ordinal: a list of names, ``"auto"`` (the
    attributes stored as *ordered* pandas Categoricals, e.g. from ``pd.cut``, and the
    numeric ones) or None.  Warns about numeric attributes with many values that are
    left unordered."""
    check_ordinal(ordinal)
    if ordinal is None:
        chosen: tuple[str, ...] = ()
    elif isinstance(ordinal, str):
        chosen = tuple(
            a
            for a in attributes
            if (isinstance(data[a].dtype, pd.CategoricalDtype) and data[a].cat.ordered)
            or is_numeric_not_bool(data[a])
        )
    else:
        chosen = tuple(ordinal)
        unknown = [a for a in chosen if a not in attributes]
        if unknown:
            raise ValueError(f"`ordinal` names columns that are not scan attributes: {unknown}")
    many = [
        a
        for a in attributes
        if a not in chosen and is_numeric_not_bool(data[a]) and data[a].nunique() > MANY_VALUES
    ]
    if many:
        warnings.warn(
            f"numeric scan attribute(s) {many} have more than {MANY_VALUES} values and are "
            "scanned as unordered categories (any subset of values can form the subgroup); "
            "pass ordinal='auto' (or their names) to scan contiguous ranges, or bin them",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    long = {a: int(data[a].nunique()) for a in chosen if data[a].nunique() > MANY_ORDINAL_VALUES}
    if long:
        warnings.warn(
            f"ordinal scan attribute(s) {long} (distinct values) have more than "
            f"{MANY_ORDINAL_VALUES} values: each step of the scan scores every range of an "
            "ordinal attribute's values, k (k + 1) / 2 of them, so the scan (and each "
            "permutation) slows with the square of k; binning them (pd.qcut) speeds it up",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    return chosen


def _atoms(*keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The scan's atoms: rows alike in every key (a cell, and for the Bernoulli score the
    row's expected log-odds), numbered in the order of their first row.

    Returns each row's atom and each atom's first row.  One stable ``lexsort`` of the rows
    by the keys: an atom starts wherever a key changes, and its first row in sorted order is
    its first row in the data.  The scan's permutations aggregate the rows once per
    permuted data set, where pandas' groupby cost more than the scan itself.  The keys are
    finite (log-odds are clipped), so equality is ``==``.
    """
    order = np.lexsort(keys[::-1])
    start = np.zeros(len(order), bool)
    start[:1] = True
    for key in keys:
        k = key[order]
        start[1:] |= k[1:] != k[:-1]
    atom = np.empty(len(order), np.int64)  # each row's atom, numbered in sorted order
    atom[order] = np.cumsum(start) - 1
    first = order[start]
    by_first = np.argsort(first, kind="stable")
    rank = np.empty_like(by_first)
    rank[by_first] = np.arange(len(by_first))
    return rank[atom], first[by_first]


class PreparedScan:
    """Atoms and settings shared by the scans of one data set."""

    def __init__(
        self,
        codes,
        values,
        attributes,
        observed,
        expected,
        score,
        direction,
        sigma,
        ordinal: Sequence[str] = (),
    ):
        if score not in SCORES:
            raise ValueError(f"`score_type` must be one of {SCORES}, got {score!r}")
        check_direction(direction)
        if not ((expected >= 0) & (expected <= 1)).all():
            raise ValueError("`expected` must be probabilities in [0, 1] (no NaN)")
        sign = 1.0 if direction == "positive" else -1.0
        self.codes_rows = codes
        self.values = values
        self.attributes = tuple(attributes)
        self.arity = np.array([len(values[a]) for a in attributes], np.int64)
        self.ordinal = np.array([a in ordinal for a in attributes], np.bool_)
        self.offsets = np.concatenate([[0], np.cumsum(self.arity)[:-1]]).astype(np.int64)
        self.score = score
        self.direction = direction
        cell = (
            np.ravel_multi_index(codes.T, self.arity) if len(attributes) else np.zeros(len(codes))
        )
        if score == "bernoulli":
            if not np.isin(observed, (0.0, 1.0)).all():
                raise ValueError("`observed` must be 0/1 events for the Bernoulli score")
            lg = sign * safe_logit(expected)
            ev = observed if sign > 0 else 1.0 - observed
            atom, first = _atoms(cell, lg)
            self.sig2 = 1.0
            self.sigma = None
            self.lg = lg[first]
            self.m = np.bincount(atom).astype(float)
            self.s = np.bincount(atom, weights=ev)
            cells = cell[first]
        else:
            if (observed < 0).any() or (observed > 1).any():
                raise ValueError(
                    "`observed` must be probabilities in [0, 1] for the Gaussian score"
                )
            warn_clipped_logits(observed, "`observed`")
            warn_clipped_logits(expected, "`expected`")
            delta = safe_logit(observed) - safe_logit(expected)
            if sigma == "estimate":  # any other string is refused by check_scan_options
                sigma = float(np.std(delta, ddof=1)) if len(delta) > 1 else 1.0
                if not sigma > 0:
                    raise ValueError(
                        "sigma='estimate' finds no spread: logit(observed) - logit(expected) "
                        "is the same in every row; give `sigma` as a number"
                    )
            self.sigma = check_real(sigma, "sigma", "positive")
            self.sig2 = self.sigma**2
            atom, first = _atoms(cell)
            self.lg = np.zeros(len(first))
            self.m = np.bincount(atom).astype(float)
            self.s = np.bincount(atom, weights=sign * delta)
            cells = cell[first]
        self.family = _kernel.BERNOULLI if score == "bernoulli" else _kernel.GAUSSIAN
        self.atom_codes = (
            np.stack(np.unravel_index(cells.astype(np.int64), self.arity), axis=1).astype(np.int64)
            if len(attributes)
            else np.zeros((len(cells), 0), np.int64)
        )
        self.observed = observed
        self.expected = expected

    def init_masks(self, n_restarts: int, rng: np.random.Generator) -> np.ndarray:
        V = int(self.arity.sum())
        masks = rng.random((n_restarts, V)) < 0.5
        masks[0] = True
        for off, k, ordl in zip(self.offsets, self.arity, self.ordinal, strict=True):
            block = masks[:, off : off + k]
            if ordl:  # a random contiguous range
                ends = np.sort(rng.integers(0, k, size=(n_restarts, 2)), axis=1)
                v = np.arange(k)
                block[:] = (v >= ends[:, :1]) & (v <= ends[:, 1:])
                block[0] = True
                continue
            empty = ~block.any(axis=1)
            if empty.any():
                block[empty, rng.integers(0, k, size=int(empty.sum()))] = True
        return masks

    def run(self, n_restarts: int, penalty: float, rng: np.random.Generator):
        masks = self.init_masks(n_restarts, rng)
        seed = int(rng.integers(0, 2**31 - 1))
        return _kernel.scan(
            self.atom_codes,
            self.offsets,
            self.arity,
            self.family,
            self.m,
            self.s,
            self.lg,
            float(self.sig2),
            float(penalty),
            masks,
            seed,
            self.ordinal,
        )

    def result(self, mask, score, theta, restart_scores, penalty) -> ScanResult:
        subgroup: dict[str, list] = {}
        member = np.ones(len(self.codes_rows), bool)
        for j, a in enumerate(self.attributes):
            block = mask[self.offsets[j] : self.offsets[j] + self.arity[j]]
            if not block.all():
                subgroup[a] = [self.values[a][v] for v in np.flatnonzero(block)]
                member &= block[self.codes_rows[:, j]]
        sign = 1.0 if self.direction == "positive" else -1.0
        pen = penalty * sum(len(v) for v in subgroup.values())
        return ScanResult(
            subgroup=subgroup,
            score=float(score),
            llr=float(score + pen),
            q=float(np.exp(sign * theta)) if self.score == "bernoulli" else float("nan"),
            mu=float(sign * theta) if self.score == "gaussian" else float("nan"),
            n=int(member.sum()),
            observed=float(self.observed[member].mean()) if member.any() else float("nan"),
            expected=float(self.expected[member].mean()) if member.any() else float("nan"),
            score_type=self.score,
            direction=self.direction,
            penalty=float(penalty),
            sigma=self.sigma,
            membership=member,
            restart_scores=np.asarray(restart_scores),
            attributes=self.attributes,
            values=self.values,
            ordinal=tuple(a for a, o in zip(self.attributes, self.ordinal, strict=True) if o),
        )


def check_scan_options(penalty, n_restarts, sigma=1.0):
    check_count(n_restarts, "n_restarts")
    check_real(penalty, "penalty", "non-negative")
    # sigma scales the Gaussian score only, but a meaningless one is refused for every score
    if isinstance(sigma, str):
        if sigma != "estimate":
            raise ValueError(f"`sigma` must be a positive number or 'estimate', got {sigma!r}")
    else:
        check_real(sigma, "sigma", "positive")


@renamed_arguments(score="score_type")  # `score=` is a score column everywhere else
def subset_scan(
    data: pd.DataFrame,
    attributes: Sequence[str],
    observed,
    expected,
    *,
    score_type: str = "bernoulli",
    direction: str = "positive",
    penalty: float = 0.0,
    n_restarts: int = 50,
    sigma: float | str = 1.0,
    ordinal: Sequence[str] | str | None = None,
    random_state: SeedLike = None,
) -> ScanResult:
    """Scan for the subgroup whose events deviate most from their expectations.

    With ``observed`` the outcomes and ``expected`` a model's predicted
    probabilities over the whole population this is the original Bias Scan
    (Zhang and Neill); :func:`bayesfair.scan.conditional_bias_scan` builds the
    four CBS variants on it.

    Parameters
    ----------
    data : pandas.DataFrame
    attributes : list of str
        Categorical columns that define subgroups.
    observed, expected : str or array-like
        Event variable I (0/1 for the Bernoulli score, a probability for the
        Gaussian score) and its expectation I-hat under the null (a probability).
    score_type : {"bernoulli", "gaussian"}
        The scan's score function (as ``ScanResult.score_type``; not ``score=``, which
        names a score column in the rest of the package).  Bernoulli: H1 multiplies the
        odds of I-hat by q.  Gaussian: Delta = logit(I) - logit(I-hat) ~ N(mu, sigma)
        with a mean shift mu (Table 2).
    direction : {"positive", "negative"}
        Under-estimation (I above I-hat: q > 1, mu > 0) or over-estimation.
    penalty : float
        Subtracted per included attribute value (attributes with all values
        included cost nothing).
    n_restarts : int
        Coordinate-ascent restarts; the first starts at all values.
    sigma : float or "estimate"
        Standard deviation of Delta for the Gaussian score (default 1, which
        reproduces Boxer et al.'s Table 4; "estimate" uses the sample standard
        deviation of Delta over the scanned rows).  The score scales as 1/sigma^2.
    ordinal : list of str, "auto" or None
        Attributes whose subgroups must be contiguous ranges of their values
        (binned continuous covariates: "age 25-45", never "under 25 or over 65"),
        in the order of their categories (sorted values otherwise).  ``"auto"``
        takes the attributes stored as ordered Categoricals and the numeric
        ones.  Each coordinate step scores every range, so it stays exact.  A
        numeric attribute with more than 10 values left unordered gets a warning.
    random_state : None, int, or numpy SeedSequence, Generator or RandomState, optional

    Returns
    -------
    ScanResult

    Notes
    -----
    Eleven parameters: the data and the columns scanned, the observed and expected values,
    the score and its direction, the search's four options and the seed.  The Conditional
    Bias Scan groups the search's options in :class:`~bayesfair.scan.SubsetSearch`; this
    engine keeps them flat, with a penalty of 0 by default (the original Bias Scan's).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"a": rng.integers(0, 3, 2000), "b": rng.integers(0, 2, 2000)})
    >>> p = np.full(2000, 0.3)
    >>> y = rng.random(2000) < np.where((df.a == 2) & (df.b == 1), 0.6, 0.3)
    >>> res = subset_scan(df, ["a", "b"], y.astype(float), p, n_restarts=5, random_state=0)
    >>> res.subgroup
    {'a': [2], 'b': [1]}

    With ``a`` ordinal, a subgroup may only take a range of its values: values 0 and 2
    are under-predicted but 1 is not, and the best range is then all of ``a``:

    >>> y2 = rng.random(2000) < np.where(df.a == 1, 0.3, 0.6)
    >>> subset_scan(df, ["a"], y2.astype(float), p, n_restarts=5, random_state=0).subgroup
    {'a': [0, 2]}
    >>> subset_scan(df, ["a"], y2.astype(float), p, ordinal=["a"], n_restarts=5,
    ...             random_state=0).subgroup
    {}
    """
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"`data` must be a pandas DataFrame, got {type(data).__name__}")
    attributes = [attributes] if isinstance(attributes, str) else list(attributes)
    missing = [a for a in attributes if a not in data.columns]
    if missing:
        raise ValueError(f"scan attributes not in the data: {missing}")
    if not attributes:
        raise ValueError("`attributes` must name at least one column")
    if len(data) == 0:
        raise ValueError("`data` has no rows; a scan needs data")
    check_scan_options(penalty, n_restarts, sigma)
    check_attribute_values(data, attributes, "scan attribute")
    codes, values = row_codes(data, attributes)
    obs = _as_array(data, observed, "observed")
    exp = _as_array(data, expected, "expected")
    if score_type == "bernoulli":
        warn_impossible_events(obs, exp, "`expected`")
    ordinal = resolve_ordinal(data, attributes, ordinal)
    prep = PreparedScan(codes, values, attributes, obs, exp, score_type, direction, sigma, ordinal)
    rng = check_random_state(random_state)
    mask, sc, th, rs = prep.run(n_restarts, penalty, rng)
    return prep.result(mask, sc, th, rs, penalty)
