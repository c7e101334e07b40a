"""The package's one encoder of the values that define groups (see :func:`encode_values`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["Encoded", "encode_values"]


@dataclass(frozen=True)
class Encoded:
    """A column's distinct values in group order (``categories``) and each row's code."""

    categories: list
    codes: np.ndarray


def encode_values(col: pd.Series, what: str, categories: Sequence | None = None) -> Encoded:
    """Integer-code the values of one column that defines groups: in the order of
    ``categories`` when given, else a categorical's own order, else sorted (numbers as
    numbers: 1, 2, 10), else (values of types that cannot be compared) in order of
    appearance.  ``what`` names the column in messages (``"protected column 'race'"``).
    The package's one encoder of groups: the audit, the scans' intersections and the
    per-group estimates all order groups alike."""
    if categories is not None:
        categories = list(categories)
        if len(set(categories)) != len(categories):
            raise ValueError(f"the categories given for {what} contain duplicates: {categories}")
        try:
            known = col.isin(categories).to_numpy()
            if not known.all():
                unknown = list(pd.unique(col[~known]))[:10]
                raise ValueError(
                    f"{what} has values {unknown} that are not in the "
                    f"categories given for it ({categories})"
                )
            codes = np.asarray(pd.Categorical(col, categories=categories).codes)
        except TypeError as err:
            raise ValueError(
                f"{what} holds unhashable values ({err}); "
                "expected hashable categories such as strings or integers"
            ) from None
        return Encoded(categories, codes.astype(np.int64))
    if isinstance(col.dtype, pd.CategoricalDtype):
        return Encoded(list(col.cat.categories), np.asarray(col.cat.codes, dtype=np.int64))
    try:
        try:
            codes, uniques = pd.factorize(col, sort=True)
        except TypeError as err:
            if "unhashable" in str(err):
                raise
            # Values of mixed types cannot be sorted: keep order of appearance.
            codes, uniques = pd.factorize(col, sort=False)
    except TypeError as err:
        raise ValueError(
            f"{what} holds unhashable values ({err}); "
            "expected hashable categories such as strings or integers"
        ) from None
    return Encoded(list(uniques), codes.astype(np.int64))
