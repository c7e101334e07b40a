"""What every model of P(y|s) sees: the per-intersection counts and the attribute codes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._names import safe_names
from ..data import AuditData

__all__ = ["Design", "design_from"]


@dataclass(frozen=True)
class Design:  # numpydoc ignore=PR01
    """Counts and codes of a table, in the table's intersection order.

    Attributes
    ----------
    n, k : numpy.ndarray, shape (n_intersections,)
        Rows and positives per intersection.
    codes : numpy.ndarray, shape (n_attributes, n_intersections)
        0-based value code of every attribute for every intersection.
    categories : dict
        Attribute -> list of values.
    labels : list of str
        Intersection labels.
    role : str
    """

    n: np.ndarray
    k: np.ndarray
    codes: np.ndarray
    categories: dict[str, list]
    labels: list[str]
    role: str

    @property
    def n_groups(self) -> int:
        """Number of intersections (empty ones included)."""
        return len(self.n)

    @property
    def attributes(self) -> list[str]:
        """The protected attributes, in order."""
        return list(self.categories)

    def var(self, attribute: str) -> str:
        """The attribute's name in model variables (``beta_<var>``) and dimensions
        (``<var>_value``): the column's name, with ``/`` (which PyMC and netCDF refuse)
        replaced (see :func:`bayesfair._names.safe_names`).

        Parameters
        ----------
        attribute : str

        Returns
        -------
        str
        """
        return safe_names(self.categories)[attribute]

    def coords(self) -> dict[str, list]:
        """PyMC/ArviZ coords: ``intersection`` and one dim per attribute (``<attr>_value``).

        Returns
        -------
        dict
            Dimension name -> list of labels.
        """
        out: dict[str, list] = {"intersection": self.labels}
        for a, lv in self.categories.items():
            out[f"{self.var(a)}_value"] = [str(v) for v in lv]
        return out

    def one_hot(self) -> np.ndarray:
        """Indicator matrix (n_intersections, total number of attribute values).

        Returns
        -------
        numpy.ndarray
            One column per attribute value, attributes in order.
        """
        blocks = []
        for d, lv in enumerate(self.categories.values()):
            blocks.append(np.eye(len(lv))[self.codes[d]])
        return np.concatenate(blocks, axis=1)


def design_from(data: AuditData, role: str = "outcome") -> Design:
    """The :class:`Design` of an :class:`~bayesfair.AuditData` for ``role``.

    Parameters
    ----------
    data : AuditData
    role : {"outcome", "decision"}
        Count the true labels or the audited mechanism's decisions.

    Returns
    -------
    Design

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.models import design_from
    >>> d = design_from(make_gaussian_threshold(n_rows=500, random_state=0).audit_data())
    >>> d.n_groups, int(d.n.sum())
    (16, 500)
    """
    if not isinstance(data, AuditData):
        raise TypeError(f"`data` must be an AuditData, got {type(data).__name__}")
    c = data.counts(role)
    codes = np.indices(data.shape_).reshape(len(data.shape_), -1)
    return Design(
        n=c.sum(axis=1).astype(np.int64),
        k=c[:, 1].astype(np.int64),
        codes=codes,
        categories={a: list(v) for a, v in data.categories.items()},
        labels=data.group_labels,
        role=role,
    )
