"""Short ``repr`` for result objects, in the manner of scipy.stats' results.

A dataclass's generated ``repr`` prints every array and table it holds in full (a
permutation test's 9,999 null statistics, a per-group table); in a notebook that
buries the statistic and p-value.  :func:`compact_repr` prints scalars, short tuples
and strings as they are and names larger containers by their type and shape.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["compact_repr", "listed"]


def listed(items, most: int, sep: str = "; ") -> str:
    """The first ``most`` of ``items`` joined by ``sep``, and how many more there are: how
    a message names what was left out or set apart.

    Examples
    --------
    >>> listed(["a", "b", "c"], 2)
    'a; b; and 1 more'
    """
    items = [str(x) for x in items]
    more = f"{sep}and {len(items) - most} more" if len(items) > most else ""
    return sep.join(items[:most]) + more


def _short(value: Any, depth: int = 0) -> str:
    if isinstance(value, (bool, np.bool_)) or value is None:
        return repr(bool(value) if isinstance(value, np.bool_) else value)
    if isinstance(value, (float, np.floating)):
        s = f"{float(value):.6g}"
        return s + ".0" if s.lstrip("-").isdigit() else s
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, str):
        return repr(value) if len(value) <= 60 else repr(value[:57] + "...")
    if isinstance(value, np.ndarray):
        return f"<array shape={value.shape}>" if value.size > 4 else repr(value.tolist())
    if isinstance(value, pd.DataFrame):
        return f"<DataFrame {value.shape[0]} rows x {value.shape[1]} columns>"
    if isinstance(value, pd.Series):
        return f"<Series {len(value)} rows>"
    if isinstance(value, (tuple, list)):
        if len(value) <= 4 and depth == 0:
            inner = ", ".join(_short(v, depth + 1) for v in value)
            return (
                f"({inner}{',' if len(value) == 1 else ''})"
                if isinstance(value, tuple)
                else f"[{inner}]"
            )
        return f"<{type(value).__name__} of {len(value)}>"
    if isinstance(value, dict):
        if (
            len(value) <= 4
            and depth == 0
            and all(isinstance(v, (int, float, str, np.number)) for v in value.values())
        ):
            return "{" + ", ".join(f"{k!r}: {_short(v, 1)}" for k, v in value.items()) + "}"
        return f"<dict of {len(value)}: {', '.join(map(repr, list(value)[:4]))}" + (
            ", ...>" if len(value) > 4 else ">"
        )
    return f"<{type(value).__name__}>"


def compact_repr(self) -> str:
    """``Name(field=value, ...)`` over the dataclass fields shown in ``repr``.

    Examples
    --------
    >>> import numpy as np
    >>> from dataclasses import dataclass
    >>> @dataclass(repr=False)
    ... class R:
    ...     statistic: float
    ...     null_distribution: np.ndarray
    ...     __repr__ = compact_repr
    >>> R(0.125, np.zeros(999))
    R(statistic=0.125, null_distribution=<array shape=(999,)>)
    """
    parts = [
        f"{f.name}={_short(getattr(self, f.name))}"
        for f in dataclasses.fields(self)
        if f.repr and not f.name.startswith("_")
    ]
    return f"{type(self).__name__}({', '.join(parts)})"
