"""Input validation helpers shared by the public entry points.

Every check raises a ``ValueError`` or ``TypeError`` that names the offending
column or argument and says what was expected.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from numbers import Real

import numpy as np
import pandas as pd

from ._warning_location import user_stacklevel

__all__ = [
    "SeedLike",
    "as_column_list",
    "check_binary",
    "check_by",
    "check_count",
    "check_n_jobs",
    "check_no_missing_groups",
    "check_open_probability",
    "check_probability",
    "check_random_state",
    "check_resamples",
    "check_seed",
    "intersection_labels",
    "is_numeric_not_bool",
    "is_whole_count",
    "require_columns",
]

#: what every ``random_state`` argument takes (see :func:`check_seed`)
SeedLike = int | np.random.SeedSequence | np.random.Generator | np.random.RandomState | None


def as_column_list(value: str | Sequence[str] | None, argument: str) -> list[str]:
    """Normalise a column-name argument to a list of strings."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, Iterable):
        raise TypeError(
            f"`{argument}` must be a column name or a list of column names, "
            f"got {type(value).__name__}"
        )
    names = list(value)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(
                f"`{argument}` must contain column names (str), got {name!r} "
                f"of type {type(name).__name__}"
            )
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"`{argument}` names a column more than once: {dup}")
    return names


def require_columns(frame: pd.DataFrame, names: Iterable[str], role: str) -> None:
    """Raise a ValueError naming every column of ``names`` that ``frame`` lacks."""
    missing = [n for n in names if n not in frame.columns]
    if missing:
        shown = ", ".join(map(repr, list(frame.columns)[:20]))
        raise ValueError(
            f"{role} column(s) {missing} not found in the DataFrame; available columns: {shown}"
        )


def is_numeric_not_bool(values: pd.Series) -> bool:
    """Whether a column holds numbers (pandas counts booleans as numeric; this does not)."""
    return pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)


def _plain(values) -> list:
    """The first values of an array as Python scalars, for messages (``1``, not
    ``np.int64(1)``)."""
    return [v.item() if hasattr(v, "item") else v for v in values]


#: what a column coded with two values other than 0/1 needs
POS_LABEL_HINT = "pass pos_label= (command line: --pos-label) to say which value means 1"


def check_binary(
    values: pd.Series,
    column: str,
    role: str,
    pos_label: object | None = None,
    *,
    takes_pos_label: bool = True,
) -> np.ndarray:
    """Return a column as a ``uint8`` 0/1 array, or raise a clear error.

    Accepts booleans and numbers equal to 0 or 1; any other coding needs
    ``pos_label`` (the value that means 1).  ``takes_pos_label=False`` is for callers
    without that argument: the error then asks for a 0/1 or boolean column.
    """
    if values.isna().any():
        n_bad = int(values.isna().sum())
        if pos_label is not None:
            expected = f"{pos_label!r} or another value"
        else:
            expected = "True/False" if pd.api.types.is_bool_dtype(values.dtype) else "0/1"
        raise ValueError(
            f"{role} column {column!r} has {n_bad} missing value(s); expected {expected} for "
            "every row: remove those rows first and report how many were left out (in Python: "
            f"df.dropna(subset=[{column!r}]))"
        )
    if pos_label is not None:
        hit = (values == pos_label).to_numpy()
        if not hit.any():
            seen = _plain(pd.unique(values)[:10])
            raise ValueError(
                f"pos_label={pos_label!r} does not occur in {role} column {column!r}; "
                f"values seen: {seen}"
            )
        if hit.all():
            raise ValueError(
                f"every row of {role} column {column!r} equals pos_label={pos_label!r}; "
                "a binary column needs two values"
            )
        n_values = values.nunique()
        if n_values > 2:
            raise ValueError(
                f"{role} column {column!r} has {n_values} distinct values; expected two "
                f"(one of them pos_label={pos_label!r})"
            )
        return hit.astype(np.uint8)
    dtype = values.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return values.to_numpy(dtype=bool).astype(np.uint8)
    if not pd.api.types.is_numeric_dtype(dtype):
        seen = list(pd.unique(values))[:5]
        raise ValueError(
            f"{role} column {column!r} must be binary (bool or 0/1), got dtype {dtype} with "
            f"values like {seen}; "
            + (
                POS_LABEL_HINT
                if takes_pos_label
                else f"recode it as 0/1 or boolean (for example df[{column!r}] == {seen[0]!r})"
            )
        )
    arr = values.to_numpy()
    ok = (arr == 0) | (arr == 1)
    if not ok.all():
        bad = _plain(pd.unique(arr[~ok])[:5])
        hint = f"; {POS_LABEL_HINT}" if takes_pos_label else "; recode it as 0/1 or boolean"
        if role == "decision" and ((arr >= 0) & (arr <= 1)).all():
            # fractions in [0, 1]: scores passed as decisions
            hint = (
                "; these look like scores: pass them as score= (y_score= in from_arrays) "
                "with threshold= to turn them into decisions"
            )
        raise ValueError(f"{role} column {column!r} must contain only 0 and 1, found {bad}{hint}")
    return arr.astype(np.uint8)


def check_decision(
    values: pd.Series, column: str, role: str, pos_label: object | None, outcome: pd.Series
) -> np.ndarray:
    """A decision column as a ``uint8`` 0/1 array, coded as the ``outcome`` column: bool,
    0/1, or words, the outcome's two values with ``pos_label``. Words beside a numeric
    outcome are refused with how to recode them (``pos_label`` codes the outcome)."""
    words = not pd.api.types.is_numeric_dtype(values.dtype)  # bool counts as numeric
    return check_binary(
        values,
        column,
        role,
        pos_label if words else None,
        takes_pos_label=not pd.api.types.is_numeric_dtype(outcome.dtype),
    )


def check_probability(values: pd.Series, column: str, role: str) -> np.ndarray:
    """Return a column of probabilities in [0, 1] as float64, or raise."""
    if not is_numeric_not_bool(values):
        text = values.dropna().astype(str)
        comma = text.str.fullmatch(r"[-+]?\d*,\d+").to_numpy()
        hint = (
            f" with decimal commas (values like {text[comma].iloc[0]!r}): convert them, e.g. "
            f"pd.to_numeric(df[{column!r}].str.replace(',', '.')), or on the command line "
            'pass --decimal , (in an audit spec: [data] decimal = ",")'
            if comma.any()
            else ""
        )
        raise ValueError(
            f"{role} column {column!r} must be numeric probabilities in [0, 1], "
            f"got dtype {values.dtype}{hint}"
        )
    arr = values.to_numpy(dtype=np.float64)
    nan = np.isnan(arr)
    if nan.any():
        raise ValueError(
            f"{role} column {column!r} has {int(nan.sum())} missing value(s); expected a "
            "probability in [0, 1] for every row: remove those rows first and report how many "
            f"were left out (in Python: df.dropna(subset=[{column!r}]))"
        )
    out = (arr < 0) | (arr > 1)
    if out.any():
        raise ValueError(
            f"{role} column {column!r} must lie in [0, 1]; {int(out.sum())} value(s) outside, "
            f"range [{arr.min():g}, {arr.max():g}]"
        )
    return arr


def check_scalar_probability(value: object, argument: str) -> float:
    """Validate a scalar in [0, 1] (for thresholds and levels)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"`{argument}` must be a number in [0, 1], got {value!r}")
    value = float(value)
    if not 0.0 <= value <= 1.0 or np.isnan(value):
        raise ValueError(f"`{argument}` must be in [0, 1], got {value}")
    return value


def check_real(value: object, argument: str, sign: str | None = None) -> float:
    """Validate a finite number (a prior's location), a finite ``sign="positive"`` one (a
    prior's scale, rate or concentration) or a finite ``sign="non-negative"`` one (a
    penalty)."""
    what = f"a finite {sign} number" if sign else "a finite number"
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"`{argument}` must be {what}, got {value!r}")
    low_ok = {None: True, "positive": value > 0, "non-negative": value >= 0}[sign]
    if not (np.isfinite(value) and low_ok):
        raise ValueError(f"`{argument}` must be {what}, got {value!r}")
    return float(value)


def check_same_index(**objects: object) -> None:
    """Refuse pandas objects among ``objects`` (argument name -> value) whose indexes
    differ: the rows would be paired by position, not by label, and silently mismatched
    (a Series taken from a shuffled or filtered frame).  Arrays pair by position."""
    indexed = {k: v.index for k, v in objects.items() if isinstance(v, (pd.Series, pd.DataFrame))}
    if len(indexed) < 2:
        return
    (first, ref), *rest = indexed.items()
    for name, index in rest:
        if not index.equals(ref):
            raise ValueError(
                f"`{first}` and `{name}` are pandas objects with different indexes; their rows "
                "would be paired by position, not by label: align them first (for example "
                f"`{name}.loc[{first}.index]`) or pass numpy arrays"
            )


def check_instance(value: object, cls: type | tuple[type, ...], argument: str, what: str) -> None:
    """Refuse anything but an instance of ``cls``, saying what ``argument`` must be
    (``what``, e.g. "an AuditData") instead of failing later on a missing attribute."""
    if not isinstance(value, cls):
        raise TypeError(f"`{argument}` must be {what}, got {type(value).__name__}")


def check_axes(ax: object, argument: str = "ax", count: int = 1) -> None:
    """Refuse an ``ax`` (or, with ``count`` > 1, a sequence of that many) that is not a
    matplotlib Axes, before anything is drawn."""
    from matplotlib.axes import Axes

    if ax is None:
        return
    if count == 1:
        check_instance(ax, Axes, argument, "a matplotlib Axes")
        return
    axes = list(np.ravel(np.asarray(ax, dtype=object)))
    if len(axes) != count or not all(isinstance(a, Axes) for a in axes):
        raise TypeError(f"`{argument}` must be {count} matplotlib Axes, got {ax!r}")


def check_flag(value: object, argument: str) -> bool:
    """Validate a True/False switch (numpy's bool too): 'no' or None is not one."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"`{argument}` must be True or False, got {value!r}")
    return bool(value)


#: the largest count float64 holds exactly: counts at or above it are refused
MAX_COUNT = 2**53


def is_whole_count(values: np.ndarray) -> np.ndarray:
    """Where ``values`` (floats) are counts: finite, non-negative whole numbers (a fraction
    or NaN is refused by the callers, never truncated; counts at or above
    :data:`MAX_COUNT` are theirs to refuse too, once added up where they add).

    Parameters
    ----------
    values : numpy.ndarray

    Returns
    -------
    numpy.ndarray of bool
    """
    v = np.asarray(values, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.isfinite(v) & (v >= 0) & (v == np.round(v))


#: the most resamples (permutations, bootstraps) a loop takes: 10 million keep a p-value's
#: Monte Carlo error below 1e-4 and their null distribution within 80 MB
MAX_RESAMPLES = 10_000_000


def check_count(value: object, argument: str, minimum: int = 1, maximum: int | None = None) -> int:
    """Validate an integer count of at least ``minimum`` (draws, chains, resamples) and at
    most ``maximum`` (see :data:`MAX_RESAMPLES`)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        what = "a positive integer" if minimum == 1 else f"an integer of at least {minimum}"
        raise ValueError(f"`{argument}` must be {what}, got {value!r}")
    if maximum is not None and value > maximum:
        raise ValueError(
            f"`{argument}` must be at most {maximum:,}, got {value:,}: more resamples than "
            "that cost memory and time without making the result noticeably more precise"
        )
    return int(value)


def check_n_jobs(n_jobs: object) -> None:
    """Validate joblib's ``n_jobs``: None or a non-zero integer (-1: every core)."""
    if n_jobs is not None and (
        isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0
    ):
        raise ValueError(
            f"`n_jobs` must be None or a non-zero integer (-1: every core), got {n_jobs!r}"
        )


def check_resamples(value: object, argument: str = "n_resamples", minimum: int = 1) -> int:
    """Validate a number of resamples: a whole number in [``minimum``, MAX_RESAMPLES]."""
    return check_count(value, argument, minimum, MAX_RESAMPLES)


def check_no_missing_groups(col: pd.Series, label: str, consequence: str = "") -> None:
    """Refuse missing values in a column whose values define groups: a row with a missing
    value belongs to no group, and leaving it out silently would change the audit.
    ``label`` names the column (e.g. "protected column 'race'"); ``consequence`` says
    what the missing values would break, after a comma."""
    n_missing = int(col.isna().sum())
    if n_missing:
        raise ValueError(
            f"{label} has {n_missing} missing value(s){consequence}; recode them as an "
            "explicit category (for example 'unknown') or remove those rows first"
        )


def warn_unused_categories(values: object, argument: str, consequence: str) -> None:
    """Name the categories of a pandas Categorical ``values`` that have no rows: the arrays
    the method builds see only the observed values, so those groups would go unmentioned."""
    if not isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
        return
    counts = pd.Series(values).value_counts(sort=False)
    unused = [c for c, k in counts.items() if k == 0]
    if unused:
        warnings.warn(
            f"categories {unused} of `{argument}` have no rows, so {consequence}",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


#: a column defining groups with more distinct values than this is refused (see check_group_values)
MAX_GROUP_VALUES = 1000


def check_group_values(
    col: pd.Series, label: str, hint: str = "", n_values: int | None = None
) -> None:
    """Refuse a column whose values define groups but has more than ``MAX_GROUP_VALUES``
    distinct values (or ``n_values`` levels): a measurement or an identifier, not a
    category (it would make thousands of groups of a few rows, and the estimators' cost
    grows with the groups)."""
    k = int(col.nunique()) if n_values is None else n_values
    if k > MAX_GROUP_VALUES:
        raise ValueError(
            f"{label} has {k} distinct values, more than {MAX_GROUP_VALUES}: groups need "
            "categories, not a measurement or an identifier; bin it first, e.g. "
            f"pd.qcut(data[{col.name!r}], 10){hint}"
        )


def check_open_probability(value: object, argument: str) -> float:
    """Validate a number strictly between 0 and 1 (NUTS' target acceptance rate)."""
    if isinstance(value, bool) or not isinstance(value, Real) or not 0 < value < 1:
        raise ValueError(f"`{argument}` must be a number in (0, 1), got {value!r}")
    return float(value)


def check_by(by: str | Sequence[str] | None, protected: Sequence[str]) -> list[str]:
    """The protected columns ``by`` names (all of ``protected`` for None), each once."""
    if by is None:
        return list(protected)
    cols = as_column_list(by, "by")  # refuses a column named twice
    if not cols:
        raise ValueError("`by` must name at least one protected column")
    unknown = [c for c in cols if c not in protected]
    if unknown:
        raise ValueError(f"`by` names {unknown}, which are not protected columns {list(protected)}")
    return cols


def intersection_labels(rows: Iterable[tuple], columns: Sequence[str]) -> list[str]:
    """The label of every intersection: its values joined with ", ".

    Labels name intersections in every table, model coordinate and report, so two
    intersections must not share one; they would when values contain ", " (("x", "y, z")
    and ("x, y", "z") both give "x, y, z") or print alike (1 and "1" in an object column),
    which is refused with the values to rename.
    """
    rows = [tuple(r) for r in rows]
    labels = [", ".join(map(str, r)) for r in rows]
    first: dict[str, tuple] = {}
    for label, values in zip(labels, rows, strict=True):
        if first.setdefault(label, values) != values:
            raise ValueError(
                f"the intersections {first[label]!r} and {values!r} of {list(columns)} would "
                f"both be labelled {label!r} (a label is str() of the values joined with "
                "', '): rename values so that no two intersections print alike"
            )
    return labels


def check_seed(random_state: object, argument: str = "random_state") -> np.random.SeedSequence:
    """A fresh SeedSequence from ``None``, a non-negative int, a SeedSequence, a Generator
    or a RandomState (as scipy.stats takes them).

    An int gives the streams of ``numpy.random.default_rng(int)``; a SeedSequence is
    copied without its spawned children, so the same one gives the same result; a
    Generator or RandomState gives one seed drawn from it (so repeated calls differ, as
    with scikit-learn).
    """
    if isinstance(random_state, np.random.SeedSequence):
        return np.random.SeedSequence(
            random_state.entropy,
            spawn_key=random_state.spawn_key,
            pool_size=random_state.pool_size,
        )
    if isinstance(random_state, (np.random.Generator, np.random.RandomState)):
        return np.random.SeedSequence(int(np.random.default_rng(random_state).integers(2**63)))
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"`{argument}` must be a non-negative int, got {random_state}")
        return np.random.SeedSequence(int(random_state))
    raise TypeError(
        f"`{argument}` must be None, a non-negative int, or a numpy SeedSequence, Generator "
        f"or RandomState, got {type(random_state).__name__} {random_state!r}"
    )


def check_random_state(random_state: object, argument: str = "random_state") -> np.random.Generator:
    """A Generator from what :func:`check_seed` takes; a Generator is used as it is."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(check_seed(random_state, argument))
