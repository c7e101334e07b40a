"""ProPublica's COMPAS two-year recidivism data, in the codings of the source papers."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from ._base import Dataset
from ._fetch import fetch_file

__all__ = ["load_compas"]

_FILE = "compas-scores-two-years.csv"
CODINGS = ("cbs", "foulds")


def _read(data_home, download_if_missing, mirror) -> pd.DataFrame:
    path = fetch_file(_FILE, data_home, download_if_missing=download_if_missing, mirror=mirror)
    return pd.read_csv(path)


def _cbs(raw: pd.DataFrame) -> Dataset:
    keep = (
        raw["days_b_screening_arrest"].between(-30, 30)
        & (raw["is_recid"] != -1)
        & (raw["c_charge_degree"] != "O")
        & (raw["score_text"] != "N/A")
    )
    df = raw.loc[keep].reset_index(drop=True)
    priors = df["priors_count"].to_numpy()
    frame = pd.DataFrame(
        {
            "race": pd.Categorical(
                df["race"],
                categories=[
                    "African-American",
                    "Caucasian",
                    "Hispanic",
                    "Asian",
                    "Native American",
                    "Other",
                ],
            ),
            "sex": pd.Categorical(df["sex"], categories=["Male", "Female"]),
            "age": pd.Categorical(
                np.where(df["age"] < 25, "Under 25", "25+"), categories=["Under 25", "25+"]
            ),
            "charge": pd.Categorical(
                df["c_charge_degree"].map({"F": "Felony", "M": "Misdemeanor"}),
                categories=["Felony", "Misdemeanor"],
            ),
            "priors": pd.Categorical(
                np.select([priors == 0, priors <= 5], ["None", "1 to 5"], "Over 5"),
                categories=["None", "1 to 5", "Over 5"],
            ),
            "decile_score": df["decile_score"].astype(int),
            "two_year_recid": df["two_year_recid"].astype(int),
        }
    )
    # P: the observed reoffence rate of each decile score (the paper's probabilistic prediction).
    frame["P"] = frame.groupby("decile_score")["two_year_recid"].transform("mean")
    frame["high_risk"] = (frame["decile_score"] >= 5).astype(int)
    return Dataset(
        frame=frame,
        protected=("race", "sex"),
        outcome="two_year_recid",
        score="P",
        decision="high_risk",
        covariates=("age", "charge", "priors"),
        name="compas-cbs",
        description=(
            "COMPAS, Conditional Bias Scan coding (Boxer et al.): ProPublica filter "
            "(|days_b_screening_arrest| <= 30, is_recid != -1, charge not 'O', score_text "
            "not 'N/A'), 6,172 defendants; age Under 25 / 25+; charge Felony / Misdemeanor; "
            "priors None / 1 to 5 / Over 5; P = observed two-year reoffence rate of the "
            "defendant's decile score; high_risk = decile_score >= 5."
        ),
    )


def _foulds(raw: pd.DataFrame) -> Dataset:
    race = raw["race"].where(
        raw["race"].isin(["African-American", "Caucasian", "Hispanic"]), "Other"
    )
    frame = pd.DataFrame(
        {
            "race": pd.Categorical(
                race, categories=["African-American", "Caucasian", "Hispanic", "Other"]
            ),
            "sex": pd.Categorical(raw["sex"], categories=["Male", "Female"]),
            "two_year_recid": raw["two_year_recid"].astype(int),
            "compas_decision": raw["score_text"].isin(["Medium", "High"]).astype(int),
            "decile_score": raw["decile_score"].astype(int),
            "age": raw["age"].astype(int),
            "priors_count": raw["priors_count"].astype(int),
            "charge": raw["c_charge_degree"].map({"F": "Felony", "M": "Misdemeanor"}),
        }
    )
    return Dataset(
        frame=frame,
        protected=("race", "sex"),
        outcome="two_year_recid",
        decision="compas_decision",
        covariates=("age", "priors_count", "charge", "decile_score"),
        name="compas-foulds",
        description=(
            "COMPAS, Bayesian intersectional fairness coding (Foulds et al.): all 7,214 rows; "
            "race with Asian and Native American merged into Other (4 values) x sex (2) = 8 "
            "intersections; outcome two_year_recid; COMPAS decision = score_text Medium or High."
        ),
    )


def load_compas(
    coding: str = "cbs",
    *,
    data_home: str | os.PathLike | None = None,
    download_if_missing: bool = True,
    mirror: str | None = None,
) -> Dataset:
    """Load ProPublica's COMPAS data (``compas-scores-two-years.csv``).

    Parameters
    ----------
    coding : {"cbs", "foulds"}
        ``"cbs"``: the Conditional Bias Scan paper's coding, 6,172 defendants
        (protected race x sex; score ``P``; decision ``high_risk``; covariates
        age, charge, priors).  ``"foulds"``: the Bayesian intersectional
        fairness paper's coding, 7,214 defendants, 8 intersections of race x
        sex, decision ``compas_decision``.
    data_home : path, optional
        Folder holding the CSV (default ``$BAYESFAIR_DATA``, then the cache).
    download_if_missing : bool, default True
        Download the file (checksum verified) when it is not found.
    mirror : str, optional
        Base URL serving the file by name, instead of its public source.

    Returns
    -------
    Dataset
        ``.frame`` and the roles (``.audit_data()`` builds the AuditData).

    Examples
    --------
    >>> from bayesfair.datasets import load_compas
    >>> ds = load_compas("cbs")  # doctest: +SKIP
    >>> len(ds)  # doctest: +SKIP
    6172
    """
    if coding not in CODINGS:
        raise ValueError(f"`coding` must be one of {CODINGS}, got {coding!r}")
    raw = _read(data_home, download_if_missing, mirror)
    return _cbs(raw) if coding == "cbs" else _foulds(raw)
