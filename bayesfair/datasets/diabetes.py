"""UCI "Diabetes 130-US hospitals for years 1999-2008", as Herlihy et al. (Section 5.1) use it."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from ._base import Dataset
from ._fetch import fetch_file

__all__ = ["load_diabetes"]

CODINGS = ("herlihy", "raw")
RACES = ["AfricanAmerican", "Hispanic", "Caucasian", "Other"]
AGE_BANDS = ["20-39", "40-59", "60-79", "80-99"]
GENDERS = ["Female", "Male"]
_AGE = {
    "[20-30)": "20-39",
    "[30-40)": "20-39",
    "[40-50)": "40-59",
    "[50-60)": "40-59",
    "[60-70)": "60-79",
    "[70-80)": "60-79",
    "[80-90)": "80-99",
    "[90-100)": "80-99",
}


def _read(path: os.PathLike) -> pd.DataFrame:
    # "?" marks a missing value in every column of the file; keep it as a category
    frame = pd.read_csv(path, dtype={"payer_code": str, "medical_specialty": str}, na_filter=False)
    needed = {"race", "gender", "age", "readmitted", "encounter_id", "patient_nbr"}
    if not needed <= set(frame.columns):
        raise ValueError(
            f"{path} does not look like diabetic_data.csv: it lacks {sorted(needed - set(frame))}"
        )
    frame["readmitted_30"] = (frame["readmitted"] == "<30").astype(int)
    return frame


def _herlihy(raw: pd.DataFrame) -> pd.DataFrame:
    """The paper's filter and coding: rows with a known race and gender, aged 20 or more;
    race {AfricanAmerican, Hispanic, Caucasian, Other (Asian + Other)}, age in four
    bands of 20 years, gender."""
    keep = (raw["race"] != "?") & raw["gender"].isin(GENDERS) & raw["age"].isin(list(_AGE))
    f = raw.loc[keep].reset_index(drop=True)
    race = f["race"].where(f["race"].isin(RACES[:3]), "Other")
    out = f.drop(columns=["race", "gender"]).copy()
    out.insert(0, "race", pd.Categorical(race, RACES))
    out.insert(1, "age_band", pd.Categorical(f["age"].map(_AGE), AGE_BANDS))
    out.insert(2, "gender", pd.Categorical(f["gender"], GENDERS))
    return out


def load_diabetes(
    coding: str = "herlihy",
    *,
    data_home: str | os.PathLike | None = None,
    download_if_missing: bool = True,
    mirror: str | None = None,
) -> Dataset:
    """Load the UCI diabetes readmission data (101,766 encounters, 50 columns).

    ``coding="herlihy"`` applies Herlihy et al.'s filter (Section 5.1): drop the rows of
    unknown race (``?``) or gender (``Unknown/Invalid``) and those aged under 20, which
    leaves 98,650 encounters; protected attributes ``race`` (AfricanAmerican, Hispanic,
    Caucasian, Other = Asian + Other), ``age_band`` (20-39, 40-59, 60-79, 80-99) and
    ``gender``: 32 groups.  ``coding="raw"`` keeps every row and the file's own
    ``race``, ``age`` and ``gender``.  The outcome is ``readmitted_30``, readmission within
    30 days (``readmitted == "<30"``); every other column is a covariate, with ``?`` kept
    as the file's marker of a missing value.

    Parameters
    ----------
    coding : {"herlihy", "raw"}, default "herlihy"
        The paper's filter and coding, or the file as it is.
    data_home, download_if_missing, mirror
        As in :func:`bayesfair.datasets.load_compas`; the download is UCI's archive
        ``dataset_diabetes.zip`` (``mirror`` serves it by that name), from which
        ``diabetic_data.csv`` is extracted and checked against its sha256.

    Returns
    -------
    Dataset
        ``.frame`` and the roles (``.audit_data()`` builds the AuditData).

    Examples
    --------
    >>> from bayesfair.datasets import load_diabetes
    >>> ds = load_diabetes()  # doctest: +SKIP
    >>> len(ds), ds.audit_data().n_intersections  # doctest: +SKIP
    (98650, 32)
    """
    if coding not in CODINGS:
        raise ValueError(f"`coding` must be one of {CODINGS}, got {coding!r}")
    path = fetch_file(
        "diabetic_data.csv", data_home, download_if_missing=download_if_missing, mirror=mirror
    )
    raw = _read(path)
    frame = _herlihy(raw) if coding == "herlihy" else raw
    protected = ("race", "age_band", "gender") if coding == "herlihy" else ("race", "age", "gender")
    ignore = {*protected, "readmitted_30", "readmitted"}
    return Dataset(
        frame=frame,
        protected=protected,
        outcome="readmitted_30",
        covariates=tuple(c for c in frame.columns if c not in ignore),
        name=f"diabetes-{coding}",
        description=(
            "UCI Diabetes 130-US hospitals 1999-2008; outcome readmission within 30 days. "
            + (
                "Herlihy et al.'s filter and coding: race (4) x age band (4) x gender (2) "
                "= 32 groups."
                if coding == "herlihy"
                else "Every encounter, the file's own race, age and gender."
            )
        ),
    )


def clinical_features(frame: pd.DataFrame) -> pd.DataFrame:
    """The clinical features of the Fairlearn SciPy 2021 tutorial's preprocessing, from
    the columns of ``diabetic_data.csv``: numeric counts of the stay, the payer
    (Medicare, Medicaid), any emergency, inpatient or outpatient visit in the preceding
    year, grouped discharge, admission source, specialty and primary diagnosis, and the
    glucose, A1C, insulin and medication-change columns as categories.

    Parameters
    ----------
    frame : pandas.DataFrame
        Rows of ``diabetic_data.csv`` (as :func:`load_diabetes` returns them).

    Returns
    -------
    pandas.DataFrame
        One row per input row: numeric columns and string categories, ready for a
        scikit-learn ``ColumnTransformer`` (:data:`CLINICAL_NUMERIC`,
        :data:`CLINICAL_CATEGORICAL`).
    """
    f = frame
    out = pd.DataFrame(index=f.index)
    for c in CLINICAL_COUNTS:
        out[c] = pd.to_numeric(f[c]).astype(float)
    out["medicare"] = (f["payer_code"] == "MC").astype(float)
    out["medicaid"] = (f["payer_code"] == "MD").astype(float)
    out["had_emergency"] = (pd.to_numeric(f["number_emergency"]) > 0).astype(float)
    out["had_inpatient_days"] = (pd.to_numeric(f["number_inpatient"]) > 0).astype(float)
    out["had_outpatient_days"] = (pd.to_numeric(f["number_outpatient"]) > 0).astype(float)
    discharge = pd.to_numeric(f["discharge_disposition_id"])
    out["discharge"] = np.where(discharge == 1, "home", "other")
    source = pd.to_numeric(f["admission_source_id"])
    out["admission_source"] = np.select(
        [source == 7, source.isin([1, 2, 3])], ["emergency", "referral"], "other"
    )
    spec = f["medical_specialty"]
    top = ["InternalMedicine", "Emergency/Trauma", "Family/GeneralPractice", "Cardiology"]
    out["medical_specialty"] = np.where(
        spec == "?", "missing", np.where(spec.isin(top), spec, "other")
    )
    out["primary_diagnosis"] = _diagnosis_group(f["diag_1"])
    for c in ("max_glu_serum", "A1Cresult", "insulin", "change", "diabetesMed"):
        out[c] = f[c].astype(str)
    return out


def _diagnosis_group(codes: pd.Series) -> np.ndarray:
    """ICD-9 codes grouped as the tutorial does: diabetes (250.xx), genitourinary
    (580-629, 788), musculoskeletal (710-739), respiratory (460-519, 786), other."""
    codes = codes.astype(str)
    num = pd.to_numeric(codes, errors="coerce")  # V and E codes, "?": other
    return np.select(
        [
            codes.str.startswith("250"),
            num.between(580, 629.99) | (np.floor(num) == 788),
            num.between(710, 739.99),
            num.between(460, 519.99) | (np.floor(num) == 786),
        ],
        ["diabetes", "genitourinary", "musculoskeletal", "respiratory"],
        "other",
    )


def heart_failure(frame: pd.DataFrame) -> np.ndarray:
    """1.0 where any of the three diagnoses is congestive heart failure (ICD-9 428.xx)."""
    any_chf = np.zeros(len(frame), dtype=bool)
    for c in ("diag_1", "diag_2", "diag_3"):
        any_chf |= frame[c].astype(str).str.startswith("428").to_numpy()
    return any_chf.astype(float)


#: the stay's counts the clinical features keep as numbers
CLINICAL_COUNTS = [
    "time_in_hospital",
    "num_lab_procedures",
    "num_procedures",
    "num_medications",
    "number_diagnoses",
]
#: numeric columns of :func:`clinical_features`
CLINICAL_NUMERIC = [
    *CLINICAL_COUNTS,
    "medicare",
    "medicaid",
    "had_emergency",
    "had_inpatient_days",
    "had_outpatient_days",
]
#: categorical columns of :func:`clinical_features`
CLINICAL_CATEGORICAL = [
    "discharge",
    "admission_source",
    "medical_specialty",
    "primary_diagnosis",
    "max_glu_serum",
    "A1Cresult",
    "insulin",
    "change",
    "diabetesMed",
]
