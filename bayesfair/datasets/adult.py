"""UCI Adult (census income) in the coding of the Bayesian intersectional fairness paper."""

from __future__ import annotations

import io
import os

import pandas as pd

from ._base import Dataset
from ._fetch import fetch_file

__all__ = ["load_adult"]

COLUMNS = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education_num",
    "marital_status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital_gain",
    "capital_loss",
    "hours_per_week",
    "native_country",
    "income",
]
SPLITS = ("train", "test", "both")
_FILES = {"train": "adult.data", "test": "adult.test"}


def _parse(path: os.PathLike) -> pd.DataFrame:
    """Read an Adult file in the UCI layout, with or without a header line.

    Skips the ``|1x3 Cross validator`` line of ``adult.test``, a header line
    starting with ``age``, and blank lines.
    """
    with open(path, encoding="utf-8") as fh:
        lines = [
            ln
            for ln in fh
            if ln.strip() and not ln.startswith("|") and not ln.lower().startswith("age")
        ]
    frame = pd.read_csv(
        io.StringIO("".join(lines)), header=None, names=COLUMNS, skipinitialspace=True
    )
    if frame.shape[1] != len(COLUMNS) or frame["income"].isna().any():
        raise ValueError(f"{path} does not look like a UCI Adult file ({len(COLUMNS)} columns)")
    return frame


def _code(frame: pd.DataFrame) -> pd.DataFrame:
    income = frame.pop("income").str.rstrip(".")
    race = frame["race"].where(
        frame["race"].isin(["White", "Black", "Asian-Pac-Islander"]), "Other"
    )
    nationality = frame["native_country"].where(frame["native_country"] == "United-States", "Other")
    out = frame.drop(columns=["race", "sex"]).copy()
    out.insert(0, "race", pd.Categorical(race, ["White", "Black", "Asian-Pac-Islander", "Other"]))
    out.insert(1, "sex", pd.Categorical(frame["sex"], ["Male", "Female"]))
    out.insert(2, "nationality", pd.Categorical(nationality, ["United-States", "Other"]))
    out["income_gt_50k"] = (income == ">50K").astype(int)
    return out


def load_adult(
    split: str = "train",
    *,
    data_home: str | os.PathLike | None = None,
    download_if_missing: bool = True,
    mirror: str | None = None,
) -> Dataset:
    """Load UCI Adult with the Foulds et al. coding (16 intersections).

    Protected attributes: ``race`` (White, Black, Asian-Pac-Islander, Other,
    with Amer-Indian-Eskimo merged into Other), ``sex``, ``nationality``
    (United-States vs Other; an unknown country ``?`` counts as Other, so no row
    is dropped).  Outcome ``income_gt_50k``.  The remaining columns are
    covariates.

    Parameters
    ----------
    split : {"train", "test", "both"}
        The official split: 32,561 training rows, 16,281 test rows; ``"both"``
        concatenates them with a ``split`` column.
    data_home, download_if_missing, mirror
        As in :func:`bayesfair.datasets.load_compas`.

    Returns
    -------
    Dataset
        ``.frame`` and the roles (``.audit_data()`` builds the AuditData).

    Examples
    --------
    >>> from bayesfair.datasets import load_adult
    >>> ds = load_adult("test")  # doctest: +SKIP
    >>> len(ds)  # doctest: +SKIP
    16281
    """
    if split not in SPLITS:
        raise ValueError(f"`split` must be one of {SPLITS}, got {split!r}")
    parts = []
    for name in ("train", "test") if split == "both" else (split,):
        path = fetch_file(
            _FILES[name], data_home, download_if_missing=download_if_missing, mirror=mirror
        )
        part = _code(_parse(path))
        if split == "both":
            part["split"] = name
        parts.append(part)
    frame = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    covariates = tuple(
        c for c in frame.columns if c not in ("race", "sex", "nationality", "income_gt_50k")
    )
    return Dataset(
        frame=frame,
        protected=("race", "sex", "nationality"),
        outcome="income_gt_50k",
        covariates=covariates,
        name=f"adult-{split}",
        description=(
            "UCI Adult census income, Foulds et al. coding: race (4) x sex (2) x nationality "
            "(United-States vs Other) = 16 intersections; outcome income > 50K."
        ),
    )
