"""Reproductions of Foulds et al.: Table 2, the COMPAS case study and interval calibration."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayesfair.datasets import load_compas
from bayesfair.models import (
    DirichletMultinomial,
    HierarchicalLogisticRegression,
    posterior_fairness,
)
from bayesfair.replication import foulds

pytestmark = pytest.mark.slow

EDF = {"EDF": lambda s: DirichletMultinomial(pseudo_count=0.5, random_state=s)}
HLR = {
    "HLR": lambda s: HierarchicalLogisticRegression(draws=500, tune=500, chains=2, random_state=s)
}


def _gap(table):
    p = table.pivot_table(index="setting", columns=["model", "estimate"], values="ours", sort=False)
    return p[("HLR", "FB")] - p[("EDF", "PE")]


def test_table2_adult_edf_equals_paper_to_4_decimals(data_home):
    t = foulds.table2("adult", models=EDF, data_home=data_home, ensemble=None)
    row = t[t["setting"] == "actual, full"].set_index("estimate")
    # alpha = 0.5 (Jeffreys) reproduces EDF-FB; EDF-PE is the raw frequency
    assert round(row.loc["PE", "ours"], 4) == -0.4366
    assert round(row.loc["FB", "ours"], 4) == -0.4359


def test_table2_adult_hlr_fb_beats_edf_pe_in_all_settings(data_home):
    t = foulds.table2("adult", models={**EDF, **HLR}, data_home=data_home, ensemble=None)
    gap = _gap(t)
    assert len(gap) == 4
    assert (gap > 0).all(), gap


def test_table2_compas_hlr_fb_beats_edf_pe_on_average_over_splits(data_home):
    """COMPAS has no official split; over 10 random 5,410/1,804 splits HLR-FB beats EDF-PE
    on average in every setting.  Split by split it does not always: the gaps are printed
    (``pytest -s``), one row per split seed, one column per setting."""
    gaps = []
    for seed in range(10):
        t = foulds.table2(
            "compas", models={**EDF, **HLR}, data_home=data_home, random_state=seed, ensemble=None
        )
        gaps.append(_gap(t))
    print("HLR-FB minus EDF-PE by split seed:\n" + pd.DataFrame(gaps).round(4).to_string())
    gaps = np.array([g.to_numpy() for g in gaps])
    finite_mean = np.array([col[np.isfinite(col)].mean() for col in gaps.T])
    assert (finite_mean > 0).all(), finite_mean


def test_compas_case_study_amplification(data_home):
    pf = foulds.compas_case_study(
        HierarchicalLogisticRegression(draws=1000, tune=1000, chains=2), data_home=data_home
    )
    amp = pf.summary().set_index("metric").loc["df_amplification"]
    # Figure 4(c): median about 0.5, quartiles about 0.35 and 0.65
    assert 0.4 <= amp["median"] <= 0.6
    assert 0.25 <= amp["q25"] <= 0.45 and 0.55 <= amp["q75"] <= 0.75


def test_compas_case_study_takes_any_model(data_home):
    # the settings of the given model are copied (a conjugate model has no `method` to pass)
    pf = foulds.compas_case_study(
        DirichletMultinomial(pseudo_count=2.0, draws=300), data_home=data_home, random_state=5
    )
    data = load_compas("foulds", data_home=data_home).audit_data()
    y = DirichletMultinomial(pseudo_count=2.0, draws=300, random_state=5).fit(data)
    d = DirichletMultinomial(pseudo_count=2.0, draws=300, random_state=6).fit(data, role="decision")
    expected = posterior_fairness(y, d, random_state=5)
    assert pf.draws["df_amplification"].size == 4 * 300
    for name, draws in expected.draws.items():
        np.testing.assert_array_equal(pf.draws[name], draws)


def test_credible_intervals_cover_the_truth():
    factories = {
        "EDF": lambda s: DirichletMultinomial(pseudo_count=0.5, draws=1000, random_state=s),
        "HLR": lambda s: HierarchicalLogisticRegression(
            draws=400, tune=400, chains=2, random_state=s
        ),
    }
    cal = foulds.calibration_study(factories, replicates=50, n_rows=7214, random_state=0)
    print(cal.round(3).to_string())
    assert (cal["replicates"] == 50).all()
    assert cal["coverage"].between(0.80, 0.97).all(), cal


# a study of the Dirichlet-multinomial (closed form): the PyMC 6 stack runs its unit tests
def test_posterior_p_s_covers_gamma_of_the_population():
    """gamma's truth uses the population's P(s), which the sample only estimates.  Over 300
    replicates of the Gaussian threshold model (race 4 x sex 2, Dirichlet-multinomial),
    90% intervals that draw P(s) from its posterior cover gamma near the nominal rate;
    with P(s) fixed at the sample's frequencies they under-cover where the groups that
    attain gamma are small (0.79 on the third setting below)."""
    f = {"EDF": lambda s: DirichletMultinomial(pseudo_count=0.5, draws=1000, random_state=s)}
    for n_rows, seed in ((500, 2), (2000, 2), (500, 1)):
        cal = foulds.calibration_study(
            f, replicates=300, n_rows=n_rows, categories={"a": 4, "b": 2}, random_state=seed
        )
        gamma = cal[cal["metric"] == "gamma"].set_index("p_s")["coverage"]
        print(f"{n_rows} rows, truth seed {seed}: gamma coverage", gamma.to_dict())
        assert 0.85 <= gamma["posterior"] <= 0.95
        assert gamma["posterior"] >= gamma["empirical"]


def test_table3_deviations_are_consistent(data_home):
    """Table 3 with the conjugate models (quick): the paper's curve deviation
    |mean(e) - t| never exceeds the mean absolute deviation mean|e - t|, the
    ground truth is the median of the full-data PE and FB estimates, and the
    subsample has 1% of the rows."""
    from bayesfair.models import NaiveBayes

    models = {**EDF, "NB": lambda s: NaiveBayes(random_state=s)}
    t = foulds.table3("compas", models=models, data_home=data_home, replicates=3)
    assert list(t["model"]) == ["EDF", "NB", "Ensemble"]
    assert t.attrs["rows_small"] == round(0.01 * 5410)
    est = t.attrs["estimates"]
    full = est[(est["size"] == "full") & (est["model"] != "Ensemble")]
    vals = full[["eps_PE", "eps_FB"]].to_numpy(float).ravel()
    assert t.attrs["truth"]["eps"] == pytest.approx(np.median(vals[np.isfinite(vals)]))
    for key in ("eps_FB", "eps_post", "gamma_PE", "gamma_FB", "gamma_post"):
        curve, mae = t[key].to_numpy(float), t[f"mae_{key}"].to_numpy(float)
        ok = np.isfinite(curve)
        assert ok.any()
        assert np.all(curve[ok] <= mae[ok] + 1e-12), key
    # by hand for one cell
    small = est[(est["size"] == "small") & (est["model"] == "NB")]["gamma_FB"]
    truth = t.attrs["truth"]["gamma"]
    nb = t.set_index("model").loc["NB"]
    assert nb["gamma_FB"] == pytest.approx(abs(small.mean() - truth))
    assert nb["mae_gamma_FB"] == pytest.approx((small - truth).abs().mean())


def test_weaker_additivity_prior_covers_where_the_papers_misses():
    """The model card's claim: on the Gaussian threshold model with 500 rows over 8
    intersections (truth seed 0, where several intersections are tiny and P(y|s) is not
    additive in the log-odds), the paper's lam = 10 shrinks the deviations and its 90%
    intervals miss epsilon often; lam = 1 covers."""
    factories = {
        f"lam={lam}": (
            lambda s, lam=lam: HierarchicalLogisticRegression(
                lam=lam, draws=400, tune=400, chains=2, random_state=s
            )
        )
        for lam in (10, 1)
    }
    cal = foulds.calibration_study(
        factories, replicates=50, n_rows=500, p_s="posterior", random_state=0
    ).set_index(["model", "metric"])["coverage"]
    print(cal.to_string())
    assert cal[("lam=1", "epsilon")] >= 0.80 and cal[("lam=1", "gamma")] >= 0.80
    assert cal[("lam=10", "epsilon")] < cal[("lam=1", "epsilon")] - 0.1


def test_calibration_near_a_fair_population_scores_the_frequentist_interval_too():
    """With equal P(y|s) in every intersection (weights 1.9 / sum of the codes), every
    posterior draw of epsilon is positive, so the HDI never holds the truth 0; the
    frequentist interval, scored on the same data, does in at least 90% of replicates."""
    total = np.add.outer(np.arange(1, 5), np.arange(1, 3)).ravel()
    cal = foulds.calibration_study(
        EDF, replicates=20, n_rows=2000, weights=1.9 / total, frequentist=True, random_state=0
    ).set_index(["model", "metric", "p_s"])["coverage"]
    assert cal[("EDF", "epsilon", "n/a")] == 0
    assert cal[("frequentist CI", "epsilon", "n/a")] >= 0.9
    assert cal[("frequentist CI", "gamma", "n/a")] >= 0.9
    with pytest.raises(TypeError, match="frequentist"):
        foulds.calibration_study(EDF, replicates=1, frequentist="yes")


def test_authors_point_estimates_give_the_papers_table2_pe(data_home):
    """The paper's PE column comes from scikit-learn fits on integer codes of the attributes
    (the authors' public code), not from MAPs: on Adult's official split, actual labels, they
    give its LR-PE to 4 decimals and its NB-PE to 1e-4, where the package's own PE (the
    one-hot model's MAP) is 0.011 off for LR.  Of the 24 orders of race codes only
    AUTHORS_CODES' gives both."""
    import itertools

    from bayesfair.models import LogisticRegression, negative_cross_entropy

    train, test, _ = foulds.table2_splits("adult", data_home=data_home)["actual, full"]
    paper = foulds.PAPER_TABLE2["adult"]

    def scores(codes):
        pe = foulds.authors_point_estimates(train, codes=codes, models=("NB", "LR"))
        return {m: negative_cross_entropy(pe[m].to_numpy(), test) for m in pe}

    ours = scores(foulds.AUTHORS_CODES["adult"])
    assert round(ours["LR"], 4) == paper["LR"][0] == -0.4416
    assert abs(ours["NB"] - paper["NB"][0]) <= 1.5e-4
    matches = []
    for race in itertools.permutations(foulds.AUTHORS_CODES["adult"]["race"]):
        s = scores({**foulds.AUTHORS_CODES["adult"], "race": race})
        if round(s["LR"], 4) == -0.4416 and abs(s["NB"] - paper["NB"][0]) <= 1.5e-4:
            matches.append(race)
    assert matches == [foulds.AUTHORS_CODES["adult"]["race"]]
    lr_map = LogisticRegression(random_state=0).fit(train)
    assert negative_cross_entropy(lr_map, test, estimate="point") - paper["LR"][0] > 0.005


def test_table3_fb_beats_the_authors_pe_for_lr_on_compas(data_home):
    """Table 3's shape with the paper's PE (the authors' scikit-learn fits on integer codes):
    on 1% subsamples of COMPAS (54 rows) the posterior predictive epsilon of the Bayesian LR
    and HLR lies closer to the full-data value than the authors' LR-PE, in both readings of
    the deviation (the paper has no HLR-PE): their LR is linear in the code of race.  gamma's
    deviations differ by less than their noise across subsamples, and against the package's
    own PE (the exact MAP of the one-hot model) the ordering of epsilon does not hold; both
    are printed with ``pytest -s`` (notebook 02, section 5)."""
    from bayesfair.models import LogisticRegression, NaiveBayes

    models = {
        **EDF,
        "NB": lambda s: NaiveBayes(random_state=s),
        "LR": lambda s: LogisticRegression(draws=300, tune=300, chains=2, random_state=s),
        "HLR": lambda s: HierarchicalLogisticRegression(
            draws=300, tune=300, chains=2, random_state=s
        ),
    }
    t = foulds.table3("compas", models=models, data_home=data_home, point_estimates="authors")
    ours = foulds.summarise_table3(t.attrs["estimates"], dataset="compas")
    for name, tab in (("authors' PE", t), ("package's PE", ours)):
        print(f"{name}, truth {tab.attrs['truth']}")
        cols = tab.set_index("model").filter(regex="^(mae_)?(eps|gamma)_(PE|FB)$")
        print(cols.round(3).to_string())
    assert t.attrs["point_estimates"] == "authors" and t.attrs["rows_small"] == 54
    row = t.set_index("model")
    for prefix in ("", "mae_"):
        pe = row.loc["LR", f"{prefix}eps_PE"]
        assert row.loc["LR", f"{prefix}eps_FB"] < pe, prefix
        assert row.loc["HLR", f"{prefix}eps_FB"] < pe, prefix
    assert np.isnan(row.loc["HLR", "eps_PE"])  # the paper's "X"
    # the truth of each reading is the median of its own full-data PE and FB estimates
    est = t.attrs["estimates"]
    full = est[(est["size"] == "full") & (est["model"] != "Ensemble")]
    vals = full[["eps_PE_authors", "eps_FB"]].to_numpy(float).ravel()
    assert t.attrs["truth"]["eps"] == pytest.approx(np.median(vals[np.isfinite(vals)]))
