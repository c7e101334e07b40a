"""The diabetes readmission data (Herlihy et al.'s population): the facts of
../shared/data/README.md, the paper's coding, the clinical features, and the download of
the file out of UCI's zip archive over loopback."""

from __future__ import annotations

import hashlib
import zipfile

import numpy as np
import pytest

from bayesfair.datasets import REMOTE_FILES, fetch_file, load_diabetes
from bayesfair.datasets.diabetes import (
    CLINICAL_CATEGORICAL,
    CLINICAL_NUMERIC,
    clinical_features,
    heart_failure,
)

NAME = "diabetic_data.csv"


@pytest.fixture(scope="module")
def diabetes_home(data_home):
    if not (data_home / NAME).is_file():
        pytest.skip(f"{NAME} is not in {data_home} (see ../shared/data/README.md)")
    return data_home


@pytest.fixture(scope="module")
def diabetes(diabetes_home):
    return load_diabetes(data_home=diabetes_home)


def test_the_papers_filter_and_coding(diabetes):
    f = diabetes.frame
    assert len(f) == 98_650 and f["patient_nbr"].nunique() == 68_999
    assert f["readmitted_30"].sum() == 11_126
    data = diabetes.audit_data()
    assert data.n_intersections == 32 and len(data.empty_intersections) == 0
    assert data.categories["race"] == ["AfricanAmerican", "Hispanic", "Caucasian", "Other"]
    assert data.categories["age_band"] == ["20-39", "40-59", "60-79", "80-99"]
    assert data.categories["gender"] == ["Female", "Male"]
    # Other = Asian + Other of the file: 641 + 1,506 less the filtered rows
    assert (f["race"] == "Other").sum() == (f["race"] != "Caucasian").sum() - (
        (f["race"] == "AfricanAmerican").sum() + (f["race"] == "Hispanic").sum()
    )
    assert "readmitted_30" not in diabetes.covariates and "race" not in diabetes.covariates


def test_raw_coding_keeps_every_row(diabetes_home):
    raw = load_diabetes("raw", data_home=diabetes_home)
    f = raw.frame
    assert len(f) == 101_766
    assert f["race"].value_counts()["?"] == 2_273
    assert (f["readmitted"] == "<30").sum() == f["readmitted_30"].sum() == 11_357
    with pytest.raises(ValueError, match="coding"):
        load_diabetes("fairlearn", data_home=diabetes_home)


def test_clinical_features(diabetes):
    f = diabetes.frame
    X = clinical_features(f)
    assert list(X.columns) == CLINICAL_NUMERIC + CLINICAL_CATEGORICAL
    assert len(X) == len(f) and not X.isna().any().any()
    np.testing.assert_array_equal(X["had_inpatient_days"], f["number_inpatient"] > 0)
    assert set(X["primary_diagnosis"]) == {
        "diabetes",
        "genitourinary",
        "musculoskeletal",
        "respiratory",
        "other",
    }
    chf = heart_failure(f)
    assert chf.dtype == float and 0.1 < chf.mean() < 0.3
    assert chf[f["diag_2"].astype(str).str.startswith("428").to_numpy()].min() == 1.0


# ------------------------------------------------------------------ download over loopback
def test_download_extracts_the_file_from_the_uci_archive(http_root, diabetes_home, tmp_path):
    root, url = http_root
    remote = REMOTE_FILES[NAME]
    archive = root / remote.url.rsplit("/", 1)[-1]
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.write(diabetes_home / NAME, remote.member)
        zf.writestr("dataset_diabetes/IDs_mapping.csv", "admission_type_id,description\n")
    home = tmp_path / "home"
    path = fetch_file(NAME, home, mirror=url)
    assert path == home / NAME
    assert hashlib.sha256(path.read_bytes()).hexdigest() == remote.sha256[0]
    assert sorted(p.name for p in home.iterdir()) == [NAME]  # the archive is not kept
    assert len(load_diabetes(data_home=home)) == 98_650


def test_a_wrong_archive_keeps_nothing(http_root, tmp_path):
    root, url = http_root
    archive = root / REMOTE_FILES[NAME].url.rsplit("/", 1)[-1]
    with zipfile.ZipFile(archive, "w") as zf:  # the member holds other content
        zf.writestr(REMOTE_FILES[NAME].member, "encounter_id,race\n1,x\n")
    home = tmp_path / "home"
    with pytest.raises(ValueError, match="sha256"):
        fetch_file(NAME, home, mirror=url)
    assert list(home.iterdir()) == []
    archive.write_bytes(b"not a zip archive")
    with pytest.raises(ValueError, match="not a zip archive"):
        fetch_file(NAME, home, mirror=url)
    assert list(home.iterdir()) == []
