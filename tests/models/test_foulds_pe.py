"""The point estimates of Foulds et al.'s public code (the paper's "PE"), without the real data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression as SkLR
from sklearn.naive_bayes import BernoulliNB

from bayesfair import AuditData
from bayesfair.metrics import epsilon_df
from bayesfair.replication import foulds

# make test runs these on the PyMC 6 / ArviZ 1 stack too (make test-next)
pytestmark = pytest.mark.bayesian

CODES = {"race": ("b", "w", "o"), "sex": ("F", "M")}


def _frame(seed: int = 0, n: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    race = rng.choice(["w", "b", "o"], size=n, p=[0.5, 0.35, 0.15])
    sex = rng.choice(["M", "F"], size=n)
    logit = -0.5 + 0.8 * (race == "b") - 0.6 * (race == "o") + 0.4 * (sex == "M")
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    return pd.DataFrame({"race": race, "sex": sex, "y": y})


def test_models_are_the_authors_sklearn_fits_on_integer_codes():
    """Against scikit-learn fitted on the rows themselves, coded as the authors code them."""
    frame = _frame()
    data = AuditData(frame, ["race", "sex"], "y")
    pe = foulds.authors_point_estimates(data, codes=CODES, models=("LR", "NB"))
    x = np.column_stack(
        [frame[a].map({v: i for i, v in enumerate(CODES[a])}).to_numpy() for a in CODES]
    )
    t = data.table
    grid = np.column_stack(
        [t[a].astype(str).map({v: i for i, v in enumerate(CODES[a])}).to_numpy() for a in CODES]
    )
    lr = SkLR(C=1.0, solver="liblinear").fit(x, frame["y"])
    nb = BernoulliNB(alpha=0.1, binarize=0.0).fit(x, frame["y"])
    np.testing.assert_allclose(pe["LR"], lr.predict_proba(grid)[:, 1], rtol=1e-6)
    np.testing.assert_allclose(pe["NB"], nb.predict_proba(grid)[:, 1], rtol=1e-12)
    assert list(pe.index) == data.group_labels
    # LR is linear in the code of race, so it cannot give the one-hot model's fit
    onehot = frame.groupby(["race", "sex"])["y"].mean()
    assert not np.allclose(pe["LR"], onehot.loc[list(zip(t["race"], t["sex"], strict=True))])


def test_edf_drops_degenerate_rates_and_unseen_values_are_not_predicted():
    frame = _frame(1, 300)
    frame.loc[(frame["race"] == "o") & (frame["sex"] == "F"), "y"] = 0  # a rate of 0
    frame = frame[~((frame["race"] == "b") & (frame["sex"] == "M"))]  # an empty intersection
    data = AuditData(
        frame, ["race", "sex"], "y", categories={"race": ["w", "b", "o", "x"], "sex": ["M", "F"]}
    )
    codes = {"race": ("b", "w", "o", "x"), "sex": ("F", "M")}
    pe = foulds.authors_point_estimates(data, codes=codes, models=("EDF", "LR", "DNN"))
    assert np.isnan(pe.loc["o, F", "EDF"]) and np.isnan(pe.loc["b, M", "EDF"])
    rate = frame.groupby(["race", "sex"])["y"].mean()
    assert pe.loc["w, M", "EDF"] == pytest.approx(rate.loc[("w", "M")])
    # b and M both occur, so their intersection is predicted; x never occurs
    assert np.isfinite(pe.loc["b, M", ["LR", "DNN"]]).all()
    assert pe.filter(like="x, ", axis=0)[["LR", "DNN"]].isna().all().all()


def test_integer_valued_attributes_take_their_own_codes():
    frame = _frame(2).assign(race=lambda d: d["race"].map({"b": 7, "w": 3, "o": 5}))
    data = AuditData(frame, ["race", "sex"], "y")
    by_value = foulds.authors_point_estimates(
        data, codes={"race": (7, 3, 5), "sex": CODES["sex"]}, models=("LR",)
    )
    named = foulds.authors_point_estimates(
        AuditData(_frame(2), ["race", "sex"], "y"), codes=CODES, models=("LR",)
    )
    np.testing.assert_allclose(np.sort(by_value["LR"]), np.sort(named["LR"]))


def test_authors_fairness_by_hand():
    p1 = np.array([0.2, 0.5, np.nan, 0.4])
    n = np.array([10.0, 30.0, 0.0, 60.0])
    eps, gamma = foulds._authors_fairness(p1, n, empirical=True)
    assert eps == pytest.approx(np.log(0.5 / 0.2))  # P(y=1): 0.5 against 0.2
    share = np.array([0.1, 0.3, 0.6])
    overall = 0.1 * 0.2 + 0.3 * 0.5 + 0.6 * 0.4
    assert gamma == pytest.approx(np.max(share * np.abs(overall - np.array([0.2, 0.5, 0.4]))))
    # the models' P(s) is smoothed by 1/2 and not renormalised over the intersections kept
    _, gamma_m = foulds._authors_fairness(p1, n, empirical=False)
    s = (np.array([10.0, 30.0, 60.0]) + 0.5) / 101
    p = np.array([0.2, 0.5, 0.4])
    assert gamma_m == pytest.approx(np.max(s * np.abs(np.sum(s * p) - p)))
    assert eps == pytest.approx(float(epsilon_df(np.stack([1 - p, p], axis=-1))))


def test_bad_codes_and_models_are_named():
    data = AuditData(_frame(), ["race", "sex"], "y")
    with pytest.raises(ValueError, match="'sex'"):
        foulds.authors_point_estimates(data, codes={"race": CODES["race"]})
    with pytest.raises(ValueError, match=r"no code for the values \['o'\]"):
        foulds.authors_point_estimates(data, codes={**CODES, "race": ("b", "w")})
    with pytest.raises(ValueError, match="`models`"):
        foulds.authors_point_estimates(data, codes=CODES, models=("HLR",))
    ones = _frame().assign(y=1)
    with pytest.raises(ValueError, match="both outcome values"):
        foulds.authors_point_estimates(
            AuditData(ones, ["race", "sex"], "y"), codes=CODES, models=("LR",)
        )


def test_summarise_table3_reads_either_point_estimate():
    rows = []
    for size, scale in (("full", 1.0), ("small", 1.5)):
        for r in range(3):
            for m, (pe, pe_a) in {"LR": (1.0, 2.0), "HLR": (1.1, np.nan)}.items():
                rows.append(
                    dict(
                        size=size,
                        replicate=r,
                        model=m,
                        eps_PE=pe * scale,
                        eps_FB=1.2 * scale,
                        eps_post=1.3 * scale,
                        gamma_PE=0.01,
                        gamma_FB=0.02,
                        gamma_post=0.03,
                        eps_PE_authors=pe_a * scale + r,
                        gamma_PE_authors=0.04,
                    )
                )
    est = pd.DataFrame(rows)
    ours = foulds.summarise_table3(est, dataset="compas")
    theirs = foulds.summarise_table3(est, dataset="compas", point_estimates="authors")
    assert ours.attrs["truth"]["eps"] == pytest.approx(np.median([1.0, 1.2, 1.1, 1.2] * 3))
    # authors: LR's PE is 2, 3, 4 over the replicates, HLR has none (the paper's "X")
    assert theirs.attrs["truth"]["eps"] == pytest.approx(np.median([2, 3, 4] + [1.2] * 6))
    lr = theirs.set_index("model").loc["LR"]
    assert lr["eps_PE"] == pytest.approx(abs(np.mean([3.0, 4.0, 5.0]) - 1.2))
    assert np.isnan(theirs.set_index("model").loc["HLR", "eps_PE"])
    assert lr["paper_eps_PE"] == foulds.PAPER_TABLE3["compas"]["LR"][0]
    with pytest.raises(ValueError, match="point_estimates"):
        foulds.summarise_table3(est, dataset="compas", point_estimates="mle")
