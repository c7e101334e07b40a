"""Boxer, McFowland and Neill: the COMPAS case study (Table 4) and the semi-synthetic study.

Choices (the paper states some and leaves others open):

* data: :func:`bayesfair.datasets.load_compas` with ``coding="cbs"`` (6,172
  defendants; race 6 values, sex, age Under 25 / 25+, charge, priors None /
  1 to 5 / Over 5; P = the observed reoffence rate of the defendant's decile
  score; P_bin = decile >= 5);
* every attribute value is a protected class in turn; its attribute leaves
  the scan and I-hat attributes;
* separation scans: value-conditional on Y = 0, positive direction (higher
  predicted risk / FPR); sufficiency for predictions: all rows, negative
  direction (lower reoffence rate given P); sufficiency for recommendations:
  P_bin = 1, negative direction (Section 5);
* propensity and I-hat models: scikit-learn ``LogisticRegression`` (L2, C=1)
  on one-hot attributes, logit(P) as the feature for sufficiency for
  predictions; penalty 1; 150 restarts; Gaussian sigma = 1.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from .._vocabulary import renamed_arguments
from ..datasets import load_compas, make_cbs_semisynthetic
from ..scan import SubsetSearch, conditional_bias_scan, subgroup_mask

__all__ = [
    "CASE_STUDY",
    "PAPER_TABLE4",
    "PROTECTED_CLASSES",
    "detection_study",
    "null_level_study",
    "table4",
]

ATTRIBUTES = ["race", "sex", "age", "charge", "priors"]

#: scan type -> (condition value, direction) of the paper's case study (Section 5)
CASE_STUDY = {
    "separation_predictions": (0, "positive"),
    "separation_recommendations": (0, "positive"),
    "sufficiency_predictions": (None, "negative"),
    "sufficiency_recommendations": (1, "negative"),
}

#: the paper's names of the protected classes -> (attribute, value) in the CBS coding
PROTECTED_CLASSES = {
    "Black": ("race", "African-American"),
    "White": ("race", "Caucasian"),
    "Hispanic": ("race", "Hispanic"),
    "Asian": ("race", "Asian"),
    "Native American": ("race", "Native American"),
    "Other race": ("race", "Other"),
    "Male": ("sex", "Male"),
    "Female": ("sex", "Female"),
    "Under age 25": ("age", "Under 25"),
    "Age 25+": ("age", "25+"),
    "Felony": ("charge", "Felony"),
    "Misdemeanor": ("charge", "Misdemeanor"),
    "No priors": ("priors", "None"),
    "1 to 5 priors": ("priors", "1 to 5"),
    "6+ priors": ("priors", "Over 5"),
}

_SP, _SR, _FP, _FR = (
    "separation_predictions",
    "separation_recommendations",
    "sufficiency_predictions",
    "sufficiency_recommendations",
)
# (scan type, protected class, detected subgroup, n, comparison subgroup, n, score,
#  observed rate detected, observed rate comparison) -- Boxer et al., Appendix C.2, Table 4
_ROWS = [
    (
        _SP,
        "Under age 25",
        "Defendants under age 25 arrested on felony charges",
        403,
        "Defendants age 25+ arrested on felony charges",
        1583,
        114.1,
        0.52,
        0.39,
    ),
    (
        _SP,
        "6+ priors",
        "All defendants with 6+ priors",
        349,
        "All defendants with 0-5 priors",
        3014,
        83.1,
        0.54,
        0.38,
    ),
    (
        _SP,
        "Black",
        "Black male defendants",
        1168,
        "Non-Black male defendants",
        1433,
        41.9,
        0.45,
        0.35,
    ),
    (
        _SP,
        "Female",
        "Female defendants with 6+ priors",
        40,
        "Male defendants with 6+ priors",
        309,
        25.3,
        0.59,
        0.54,
    ),
    (
        _SP,
        "1 to 5 priors",
        "Defendants under age 25 with 1 to 5 priors",
        227,
        "Defendants under age 25 with 0 or 6+ priors",
        366,
        3.23,
        0.54,
        0.49,
    ),
    (
        _SP,
        "Felony",
        "White female defendants arrested on felony charges",
        139,
        "White female defendants arrested on misdemeanor charges",
        173,
        2.40,
        0.42,
        0.34,
    ),
    (_SP, "Male", "Asian male defendants", 22, "Asian female defendants", 1, 0.62, 0.30, 0.22),
    (
        _SP,
        "Native American",
        "All Native American defendants",
        6,
        "All non-Native American defendants",
        3357,
        0.15,
        0.49,
        0.39,
    ),
    (
        _SR,
        "Under age 25",
        "Defendants under age 25 arrested on felony charges",
        403,
        "Defendants age 25+ arrested on felony charges",
        1583,
        149.2,
        0.55,
        0.29,
    ),
    (
        _SR,
        "6+ priors",
        "All defendants with 6+ priors",
        349,
        "All defendants with 0-5 priors",
        3014,
        125.5,
        0.66,
        0.26,
    ),
    (
        _SR,
        "Black",
        "Black male defendants",
        1168,
        "Non-Black male defendants",
        1433,
        100.9,
        0.44,
        0.19,
    ),
    (
        _SR,
        "Female",
        "Female defendants with 6+ priors",
        40,
        "Male defendants with 6+ priors",
        309,
        46.9,
        0.80,
        0.65,
    ),
    (
        _SR,
        "Male",
        "Asian and Hispanic male defendants",
        286,
        "Asian and Hispanic female defendants",
        57,
        22.3,
        0.21,
        0.05,
    ),
    (
        _SR,
        "1 to 5 priors",
        "Defendants under age 25 with 1 to 5 priors",
        227,
        "Defendants under age 25 with 0 or 6+ priors",
        366,
        12.5,
        0.64,
        0.47,
    ),
    (
        _SR,
        "Felony",
        "White female defendants arrested on felony charges",
        139,
        "White female defendants arrested on misdemeanor charges",
        173,
        9.40,
        0.38,
        0.21,
    ),
    (
        _SR,
        "White",
        "White female defendants under age 25 with no priors",
        31,
        "Non-white female defendants under age 25 with no priors",
        70,
        1.98,
        0.71,
        0.56,
    ),
    (
        _SR,
        "Misdemeanor",
        "Native American defendants with 1 to 5 priors arrested on misdemeanor charges",
        2,
        "Native American defendants with 1 to 5 priors arrested on felony charges",
        1,
        1.67,
        1.00,
        0.00,
    ),
    (
        _SR,
        "Age 25+",
        "Asian defendants age 25+ arrested on felony charges",
        10,
        "Asian defendants under age 25 arrested on felony charges",
        1,
        0.75,
        0.20,
        0.00,
    ),
    (
        _SR,
        "Native American",
        "All Native American defendants",
        6,
        "All non-Native American defendants",
        3357,
        0.20,
        0.50,
        0.30,
    ),
    (
        _FP,
        "No priors",
        "All defendants with no priors",
        2085,
        "All defendants with 1+ priors",
        4087,
        111.5,
        0.29,
        0.54,
    ),
    (
        _FP,
        "Age 25+",
        "Male defendants age 25+ with 0-5 priors",
        2867,
        "Male defendants under age 25 with 0-5 priors",
        1041,
        92.6,
        0.35,
        0.59,
    ),
    (
        _FP,
        "Male",
        "Male Native American defendants of age 25+",
        7,
        "Female Native American defendants of age 25+",
        2,
        31.2,
        0.14,
        1.00,
    ),
    (
        _FP,
        "Female",
        "Female defendants under age 25",
        246,
        "Male defendants under age 25",
        1101,
        18.7,
        0.38,
        0.60,
    ),
    (
        _FP,
        "Misdemeanor",
        "Female defendants arrested on misdemeanor charges",
        491,
        "Female defendants arrested on felony charges",
        684,
        3.51,
        0.26,
        0.41,
    ),
    (
        _FP,
        "Asian",
        "Asian defendants arrested on misdemeanor charges",
        12,
        "Non-Asian defendants arrested on misdemeanor charges",
        2190,
        3.20,
        0.00,
        0.38,
    ),
    (
        _FP,
        "White",
        "White defendants under age 25",
        347,
        "Non-white defendants under age 25",
        1000,
        2.36,
        0.49,
        0.58,
    ),
    (
        _FP,
        "Black",
        "Black female defendants",
        549,
        "Non-Black female defendants",
        626,
        2.22,
        0.37,
        0.34,
    ),
    (
        _FP,
        "1 to 5 priors",
        "Black defendants of age 25+ with 1 to 5 priors",
        1038,
        "Black defendants of age 25+ with 0 or 6+ priors",
        1328,
        2.18,
        0.42,
        0.55,
    ),
    (
        _FP,
        "Hispanic",
        "All Hispanic defendants",
        509,
        "All non-Hispanic defendants",
        5663,
        0.27,
        0.37,
        0.46,
    ),
    (
        _FP,
        "Native American",
        "All Native American defendants",
        11,
        "All non-Native American defendants",
        6161,
        0.17,
        0.45,
        0.46,
    ),
    (
        _FR,
        "Age 25+",
        "Male defendants of age 25+ with 0-5 priors",
        772,
        "Male defendants under age 25 with 0-5 priors",
        641,
        52.9,
        0.52,
        0.67,
    ),
    (
        _FR,
        "No priors",
        "All defendants with no priors",
        553,
        "All defendants with 1+ priors",
        2198,
        51.0,
        0.46,
        0.67,
    ),
    (
        _FR,
        "Female",
        "Female defendants with no priors",
        150,
        "Male defendants with no priors",
        403,
        35.3,
        0.33,
        0.50,
    ),
    (
        _FR,
        "Misdemeanor",
        "Male defendants with 0-5 priors arrested on misdemeanor charges",
        398,
        "Male defendants with 0-5 priors arrested on felony charges",
        1015,
        28.2,
        0.52,
        0.61,
    ),
    (
        _FR,
        "1 to 5 priors",
        "Male defendants of age 25+ with 1 to 5 priors",
        595,
        "Male defendants of age 25+ with 0 or 6+ priors",
        981,
        26.8,
        0.54,
        0.70,
    ),
    (
        _FR,
        "Male",
        "Male Native American defendants of age 25+",
        4,
        "Female Native American defendants of age 25+",
        2,
        14.1,
        0.25,
        1.00,
    ),
    (
        _FR,
        "Hispanic",
        "All Hispanic defendants",
        141,
        "All non-Hispanic defendants",
        2610,
        2.40,
        0.56,
        0.63,
    ),
    (
        _FR,
        "6+ priors",
        "Asian defendants with 6+ priors",
        1,
        "Asian defendants with 0-5 priors",
        6,
        0.41,
        0.00,
        0.83,
    ),
    (
        _FR,
        "White",
        "White female defendants under age 25",
        57,
        "Non-white female defendants under age 25",
        110,
        0.40,
        0.39,
        0.47,
    ),
    (
        _FR,
        "Black",
        "Black defendants of age 25+ with 0-5 priors",
        581,
        "Non-Black defendants of age 25+ with 0-5 priors",
        404,
        0.34,
        0.50,
        0.52,
    ),
]

#: Boxer et al., Table 4 (every run with a positive score).
PAPER_TABLE4 = pd.DataFrame(
    _ROWS,
    columns=[
        "scan_type",
        "protected",
        "paper_subgroup",
        "paper_n_protected",
        "paper_comparison",
        "paper_n_comparison",
        "paper_score",
        "paper_rate_protected",
        "paper_rate_comparison",
    ],
)


@renamed_arguments(n_permutations="n_resamples")
def table4(
    frame: pd.DataFrame | None = None,
    *,
    data_home: str | os.PathLike | None = None,
    scan_types=tuple(CASE_STUDY),
    protected_classes=None,
    n_restarts: int = 150,
    penalty: float = 1.0,
    n_resamples: int = 0,
    n_jobs: int | None = 1,
    random_state: int = 0,
) -> pd.DataFrame:
    """Run every CBS variant for every protected class on COMPAS; the paper's row beside ours.

    Parameters
    ----------
    frame : pandas.DataFrame, optional
        COMPAS in the CBS coding (default: :func:`~bayesfair.datasets.load_compas`).
    data_home : path, optional
        Where ``compas-scores-two-years.csv`` is.
    scan_types : sequence of str
        CBS variants (default all four, with the paper's condition and direction).
    protected_classes : sequence, optional
        ``(attribute, value)`` pairs (default :data:`PROTECTED_CLASSES`).
    n_restarts : int, default 150
    penalty : float, default 1
    n_resamples : int, default 0
        Permutations for p-values (0: none).
    n_jobs : int, optional
    random_state : int, default 0

    Returns
    -------
    pandas.DataFrame
        One row per (scan type, protected class) with our subgroup, sizes,
        observed rates, score (and permutation p-value when ``n_resamples``)
        next to the paper's values (NaN where the paper reports no positive score).
    """
    if frame is None:
        frame = load_compas("cbs", data_home=data_home).frame
    classes = (
        PROTECTED_CLASSES
        if protected_classes is None
        else {k: PROTECTED_CLASSES[k] for k in protected_classes}
    )
    rows = []
    for st in scan_types:
        cond, direction = CASE_STUDY[st]
        for name, prot in classes.items():
            res = conditional_bias_scan(
                frame,
                protected_class=prot,
                scan_type=st,
                outcome="two_year_recid",
                score="P",
                decision="high_risk",
                condition_value=cond,
                direction=direction,
                attributes=[a for a in ATTRIBUTES if a != prot[0]],
                search=SubsetSearch(penalty=penalty, n_restarts=n_restarts),
                n_resamples=n_resamples,
                n_jobs=n_jobs,
                random_state=random_state,
            )
            rows.append(
                {
                    "scan_type": st,
                    "protected": name,
                    "subgroup": res.scan.describe(),
                    "n_protected": res.n_protected,
                    "n_comparison": res.n_comparison,
                    "rate_protected": res.rate_protected,
                    "rate_comparison": res.rate_comparison,
                    "score": res.score,
                    "pvalue": res.pvalue,
                }
            )
    ours = pd.DataFrame(rows)
    out = ours.merge(PAPER_TABLE4, on=["scan_type", "protected"], how="left")
    out["same_sizes"] = (out["n_protected"] == out["paper_n_protected"]) & (
        out["n_comparison"] == out["paper_n_comparison"]
    )
    return out


def _jaccard(a: np.ndarray, b: np.ndarray) -> float:
    union = (a | b).sum()
    return float((a & b).sum() / union) if union else 1.0


def detection_study(
    scan_type: str,
    strengths,
    *,
    n_datasets: int = 20,
    bias: str = "sep",
    n_rows: int = 6172,
    n_restarts: int = 10,
    penalty: float = 1.0,
    random_state: int = 0,
) -> pd.DataFrame:
    """Detection accuracy (Jaccard of injected and detected subgroups) against injected bias.

    Section 4: for each strength and each of ``n_datasets`` semi-synthetic data
    sets (random protected class and subgroup), inject ``mu_sep`` (``bias="sep"``)
    or ``mu_suf`` (``bias="suf"``) and scan with all values of C (no value
    conditioning); separation scans look for higher predictions given Y,
    sufficiency scans for lower outcomes given the prediction (both injections
    produce both).  Jaccard is computed over
    the protected class's rows.

    Parameters
    ----------
    scan_type : str
        A CBS variant.
    strengths : sequence of float
        Injected ``mu_sep`` or ``mu_suf`` values.
    n_datasets : int, default 20
        Data sets per strength.
    bias : {"sep", "suf"}
    n_rows : int, default 6172
    n_restarts : int, default 10
    penalty : float, default 1
    random_state : int, default 0

    Returns
    -------
    pandas.DataFrame
        One row per strength and data set with the Jaccard similarity.

    Examples
    --------
    >>> from bayesfair.replication.boxer import detection_study
    >>> res = detection_study("separation_recommendations", [0.0, 2.0], n_datasets=2,
    ...                       n_rows=2000, random_state=0)
    >>> len(res)
    4
    """
    if bias not in ("sep", "suf"):
        raise ValueError(f"`bias` must be 'sep' or 'suf', got {bias!r}")
    # either injection raises P relative to Y in S_bias: separation scans look for higher
    # predictions given Y, sufficiency scans for lower outcomes given the prediction
    direction = "positive" if scan_type.startswith("separation") else "negative"
    seeds = np.random.SeedSequence(random_state).spawn(len(strengths) * n_datasets)
    rows = []
    for i, mu in enumerate(strengths):
        for k in range(n_datasets):
            rng = np.random.default_rng(seeds[i * n_datasets + k])
            kw = {"mu_sep": mu} if bias == "sep" else {"mu_suf": mu}
            ds = make_cbs_semisynthetic(n_rows=n_rows, random_state=rng, **kw)
            f = ds.frame
            res = conditional_bias_scan(
                f,
                protected_class="protected",
                scan_type=scan_type,
                outcome="y",
                score="p",
                decision="p_bin",
                direction=direction,
                attributes=list(ds.covariates),
                search=SubsetSearch(penalty=penalty, n_restarts=n_restarts),
                n_resamples=0,  # detection needs the subgroup, not its p-value
                random_state=int(rng.integers(2**31)),
            )
            prot = f["protected"].to_numpy()
            found = (
                subgroup_mask(f, res.subgroup) & prot if res.score > 0 else np.zeros(len(f), bool)
            )
            rows.append(
                {
                    "scan_type": scan_type,
                    "bias": bias,
                    "strength": mu,
                    "dataset": k,
                    "jaccard": _jaccard(found, ds.truth["in_subgroup"]),
                    "score": res.score,
                }
            )
    return pd.DataFrame(rows)


@renamed_arguments(n_permutations="n_resamples")
def null_level_study(
    n_datasets: int = 100,
    *,
    n_resamples: int = 99,
    scan_type: str = "separation_recommendations",
    n_rows: int = 2000,
    n_restarts: int = 5,
    alpha: float = 0.05,
    n_jobs: int | None = 1,
    random_state: int = 0,
) -> dict:
    """Rejection rate of the CBS permutation test on semi-synthetic data with no injected bias.

    Parameters
    ----------
    n_datasets : int, default 100
        Null data sets (protected class: race = African-American).
    n_resamples : int, default 99
    scan_type : str
        A CBS variant, scanned with the paper's condition and direction.
    n_rows : int, default 2000
    n_restarts : int, default 5
    alpha : float, default 0.05
        Level of the test.
    n_jobs : int, optional
    random_state : int, default 0
        Seeds the data sets.

    Returns
    -------
    dict
        ``rate`` (share of p-values at most ``alpha``), ``n_datasets``, ``pvalues``.

    Examples
    --------
    >>> from bayesfair.replication.boxer import null_level_study
    >>> out = null_level_study(3, n_resamples=19, n_rows=1000)
    >>> 0 <= out["rate"] <= 1, len(out["pvalues"])
    (True, 3)
    """
    cond, direction = CASE_STUDY[scan_type]
    pvals = []
    for k in range(n_datasets):
        ds = make_cbs_semisynthetic(
            protected_class=("race", "African-American"),
            n_rows=n_rows,
            random_state=random_state * 100_003 + k,
        )
        res = conditional_bias_scan(
            ds.frame,
            protected_class="protected",
            outcome="y",
            score="p",
            decision="p_bin",
            scan_type=scan_type,
            condition_value=cond,
            direction=direction,
            attributes=list(ds.covariates),
            search=SubsetSearch(n_restarts=n_restarts),
            n_resamples=n_resamples,
            n_jobs=n_jobs,
            random_state=k,
        )
        pvals.append(res.pvalue)
    pvals = np.asarray(pvals)
    return {"rate": float(np.mean(pvals <= alpha)), "n_datasets": n_datasets, "pvalues": pvals}
