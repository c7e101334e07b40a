"""Audit specs: the TOML files in the repository's ``models/specs/`` that the CLI runs."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .data import AuditData
from .datasets import load_adult, load_compas

__all__ = ["AuditSpec", "load_spec"]

_SECTIONS = {"audit", "data", "columns", "metrics", "published"}
_COLUMN_KEYS = {"protected", "outcome", "score", "decision", "threshold", "covariates", "pos_label"}
_DATASETS = ("compas", "adult", "csv")


@dataclass
class AuditSpec:
    """A parsed audit spec.

    Attributes
    ----------
    name : str
    data : dict
        ``dataset`` (compas, adult or csv) and its options (``coding``,
        ``split``, ``path`` relative to the spec file).
    columns : dict
        Column roles, overriding those of a packaged data set.
    metrics : dict
        ``alpha`` (Dirichlet smoothing).
    published : list of dict
        Numbers from the source paper that this spec reproduces.
    """

    name: str
    data: dict[str, Any]
    columns: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    published: list[dict[str, Any]] = field(default_factory=list)
    path: Path | None = None

    def audit_data(self, data_home: str | os.PathLike | None = None) -> AuditData:
        """Load the data the spec names and apply its column roles."""
        kind = self.data.get("dataset")
        if kind == "compas":
            ds = load_compas(self.data.get("coding", "cbs"), data_home=data_home)
        elif kind == "adult":
            ds = load_adult(self.data.get("split", "train"), data_home=data_home)
        else:
            base = self.path.parent if self.path else Path.cwd()
            frame = pd.read_csv(base / self.data["path"])
            return AuditData(frame, **self.columns)
        return ds.audit_data(**self.columns)


def load_spec(path: str | os.PathLike) -> AuditSpec:
    """Read and validate an audit spec (TOML)."""
    path = Path(path)
    with open(path, "rb") as fh:
        try:
            raw = tomllib.load(fh)
        except tomllib.TOMLDecodeError as err:
            raise ValueError(f"{path}: not valid TOML ({err})") from None
    unknown = set(raw) - _SECTIONS
    if unknown:
        raise ValueError(
            f"{path}: unknown section(s) {sorted(unknown)}; allowed {sorted(_SECTIONS)}"
        )
    data = dict(raw.get("data", {}))
    if data.get("dataset") not in _DATASETS:
        raise ValueError(
            f"{path}: [data] dataset must be one of {_DATASETS}, got {data.get('dataset')!r}"
        )
    columns = dict(raw.get("columns", {}))
    bad = set(columns) - _COLUMN_KEYS
    if bad:
        raise ValueError(
            f"{path}: unknown [columns] key(s) {sorted(bad)}; allowed {sorted(_COLUMN_KEYS)}"
        )
    if data["dataset"] == "csv":
        if "path" not in data:
            raise ValueError(f"{path}: [data] dataset = 'csv' needs a path")
        missing = {"protected", "outcome"} - set(columns)
        if missing:
            raise ValueError(f"{path}: a csv spec needs [columns] {sorted(missing)}")
    published = raw.get("published", [])
    if not isinstance(published, list):
        raise ValueError(f"{path}: [[published]] must be an array of tables")
    audit = raw.get("audit", {})
    return AuditSpec(
        name=str(audit.get("name", path.stem)),
        data=data,
        columns=columns,
        metrics=dict(raw.get("metrics", {})),
        published=published,
        path=path,
    )
