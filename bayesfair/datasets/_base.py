"""The container every loader and generator returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..data import AuditData

__all__ = ["Dataset"]


@dataclass
class Dataset:  # numpydoc ignore=PR01
    """A data frame with its suggested column roles (the fields, under Attributes, are also
    the constructor's arguments).

    Attributes
    ----------
    frame : pandas.DataFrame
    protected, covariates : tuple of str
    outcome : str
    score, decision : str or None
    name, description : str
    truth : dict
        For synthetic data, the ground truth the generator used (documented by
        each generator); empty for real data.
    """

    frame: pd.DataFrame
    protected: tuple[str, ...]
    outcome: str
    score: str | None = None
    decision: str | None = None
    covariates: tuple[str, ...] = ()
    name: str = ""
    description: str = ""
    truth: Mapping[str, Any] = field(default_factory=dict)

    def audit_data(self, **overrides: Any) -> AuditData:
        """An :class:`~bayesfair.AuditData` with these roles; keyword arguments override them.

        Parameters
        ----------
        **overrides
            Arguments of :class:`~bayesfair.AuditData` (``threshold=0.5`` alone
            replaces the decision column by the thresholded score).

        Returns
        -------
        AuditData

        Examples
        --------
        >>> from bayesfair.datasets import make_gaussian_threshold
        >>> ds = make_gaussian_threshold(n_rows=1000, random_state=0)
        >>> ds.audit_data(protected=["sex"]).n_intersections
        2
        """
        kwargs: dict[str, Any] = {
            "protected": list(self.protected),
            "outcome": self.outcome,
            "score": self.score,
            "decision": self.decision,
            "covariates": list(self.covariates),
        }
        kwargs.update(overrides)
        if "threshold" in overrides and "decision" not in overrides:
            kwargs["decision"] = None
        return AuditData(self.frame, **kwargs)

    def __len__(self) -> int:
        return len(self.frame)

    def __repr__(self) -> str:
        return (
            f"Dataset({self.name!r}, {len(self.frame):,} rows, protected={list(self.protected)}, "
            f"outcome={self.outcome!r}, score={self.score!r}, decision={self.decision!r})"
        )
