"""Bayesian models of P(y|s): conjugate exactness, posterior fairness, averaging, evaluation."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

from bayesfair import AuditData, SamplerWarning, _arviz
from bayesfair.datasets import make_gaussian_threshold
from bayesfair.metrics import epsilon_df, gamma_sf, outcome_probabilities
from bayesfair.models import (
    Design,
    DirichletMultinomial,
    HierarchicalLogisticRegression,
    LogisticRegression,
    ModelAverage,
    NaiveBayes,
    NeuralNetwork,
    design_from,
    model_average,
    negative_cross_entropy,
    posterior_fairness,
)

# make test runs these on the PyMC 6 / ArviZ 1 stack too (make test-next)
pytestmark = pytest.mark.bayesian


@pytest.fixture(scope="module")
def synth():
    return make_gaussian_threshold(n_rows=4000, random_state=11)


def test_dirichlet_multinomial_is_exact(synth):
    data = synth.audit_data()
    fit = DirichletMultinomial(pseudo_count=2.0, draws=2000, random_state=0).fit(data)
    c = data.counts()
    expected = (c[:, 1] + 2.0) / (c.sum(axis=1) + 4.0)
    np.testing.assert_allclose(fit.predict_proba(), expected)
    np.testing.assert_allclose(fit.p_draws_.mean(axis=(0, 1)), expected, atol=0.01)
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(fit.p_point_, c[:, 1] / c.sum(axis=1))
    assert fit.p_draws_.shape == (4, 2000, 16)
    post = fit.idata_.posterior["p"]
    assert post.dims == ("chain", "draw", "intersection")
    assert list(post["intersection"].values) == data.group_labels
    assert fit.idata_.log_likelihood["y"].shape == (4, 2000, 16)
    # the posterior variance is the Beta's
    a, b = c[:, 1] + 2.0, c[:, 0] + 2.0
    var = a * b / ((a + b) ** 2 * (a + b + 1))
    np.testing.assert_allclose(fit.p_draws_.var(axis=(0, 1)), var, rtol=0.15)


def test_binomial_loglik_is_scipys_logpmf():
    """The log-likelihood behind LOO and model averaging: scipy's formula with the
    binomial coefficient taken once per intersection, equal to the last bit, with
    probabilities of exactly 0 and 1 (clipped) and empty intersections."""
    from types import SimpleNamespace

    from scipy.stats import binom

    from bayesfair.models.base import binomial_loglik

    rng = np.random.default_rng(3)
    n = np.r_[0, 1, 7, rng.integers(0, 400, 40)]
    design = SimpleNamespace(n=n, k=rng.binomial(n, 0.3))
    p = rng.random((2, 5, n.size))
    p[0, 0], p[0, 1] = 0.0, 1.0
    with np.errstate(divide="ignore"):
        expected = binom.logpmf(design.k, design.n, np.clip(p, 1e-300, 1 - 1e-16))
    got = binomial_loglik(p, design)
    assert got.shape == p.shape
    assert np.all(np.isfinite(got))
    np.testing.assert_array_equal(got, expected)
    assert np.all(got[..., 0] == 0.0)  # an empty intersection has likelihood 1


def test_inference_data_has_the_groups_arviz_checks_need(synth):
    """Every fit carries observed_data and constant_data, and sample_posterior_predictive()
    adds the counts' posterior predictive, Binomial(n, p) per draw, so ArviZ's posterior
    predictive checks run on it."""
    import arviz as az

    data = synth.audit_data()
    c = data.counts()
    n = c.sum(axis=1)
    fits = [
        DirichletMultinomial(pseudo_count=1.0, draws=2000, random_state=0).fit(data),
        LogisticRegression(method="map", random_state=0).fit(data),
    ]
    fits.append(model_average([fits[0], NaiveBayes(random_state=0).fit(data)], draws=500))
    for fit in fits:
        idata = fit.idata_
        assert {"observed_data", "constant_data"} <= _arviz.groups(idata)
        assert "posterior_predictive" not in _arviz.groups(idata)
        first = fit.sample_posterior_predictive().posterior_predictive["y"].values
        assert fit.sample_posterior_predictive() is idata  # extended in place, drawn once
        np.testing.assert_array_equal(idata.posterior_predictive["y"], first)
        np.testing.assert_array_equal(idata.observed_data["y"], c[:, 1])
        np.testing.assert_array_equal(idata.constant_data["n"], n)
        y = idata.posterior_predictive["y"]
        assert y.dims == ("chain", "draw", "intersection")
        assert y.shape == fit.p_draws_.shape
        assert ((y >= 0) & (y <= n)).all()
    # the predictive's mean and variance are the beta-binomial's of the exact posterior
    y = fits[0].idata_.posterior_predictive["y"].values.reshape(-1, len(n))
    a, b = c[:, 1] + 1.0, c[:, 0] + 1.0
    mean = n * a / (a + b)
    var = n * a * b * (a + b + n) / ((a + b) ** 2 * (a + b + 1))
    se = np.sqrt(var / y.shape[0])
    assert (np.abs(y.mean(axis=0) - mean) <= 4 * se + 1e-12).all()
    np.testing.assert_allclose(y.var(axis=0), var, rtol=0.15, atol=1e-9)
    # ArviZ's LOO-PIT runs on the fit as it is, whichever ArviZ is installed
    if _arviz.ARVIZ_1:
        pit = np.asarray(az.loo_pit(fits[0].idata_, var_names=["y"])["y"])
    else:
        pit = np.asarray(az.loo_pit(fits[0].idata_, y="y"))
    assert pit.shape == (len(n),) and np.isfinite(pit).all()


def test_predictive_check_tails_and_misfit():
    """predictive_check's p-values are the posterior predictive's tails: beta-binomial for
    the Dirichlet model, binomial at a MAP; an additive model of data with an interaction
    is flagged where it misses, the saturated model nowhere."""
    from scipy.stats import betabinom, binom

    # XOR-like rates: no additive logit fits them; one empty intersection
    cells = {("a", "u"): (400, 0.2), ("a", "v"): (400, 0.6), ("b", "u"): (400, 0.6)}
    cells[("b", "v")] = (400, 0.2)
    cells[("c", "u")] = (0, 0.5)
    rows = []
    for (g, h), (n, rate) in cells.items():
        k = round(n * rate)
        rows += [(g, h, 1)] * k + [(g, h, 0)] * (n - k)
    df = pd.DataFrame(rows, columns=["g", "h", "y"])
    df["g"] = pd.Categorical(df["g"], categories=["a", "b", "c"])
    data = AuditData(df, ["g", "h"], "y")
    edf = DirichletMultinomial(pseudo_count=1.0, draws=4000, random_state=0).fit(data)
    check = edf.predictive_check()
    d = edf.design_
    present = d.n > 0
    assert check["pvalue"].isna().tolist() == (~present).tolist()
    below = betabinom.cdf(d.k, d.n, d.k + 1.0, d.n - d.k + 1.0)[present]
    above = betabinom.sf(d.k - 1, d.n, d.k + 1.0, d.n - d.k + 1.0)[present]
    exact = np.minimum(1, 2 * np.minimum(below, above))
    np.testing.assert_allclose(check["pvalue"][present], exact, atol=0.02)
    assert (check["pvalue"][present] > 0.5).all()  # the saturated model fits every count
    lr = LogisticRegression(method="map", random_state=0).fit(data)
    check = lr.predictive_check(level=0.5)
    p = lr.p_point_
    by_hand = np.minimum(1, 2 * np.minimum(binom.cdf(d.k, d.n, p), binom.sf(d.k - 1, d.n, p)))
    np.testing.assert_allclose(check["pvalue"][present], by_hand[present])
    assert (check["pvalue"][present] < 1e-6).all()  # the additive model misses every cell
    assert (check["lower"] <= check["upper"]).all()
    with pytest.raises(ValueError, match="level"):
        lr.predictive_check(level=1.5)


def test_posterior_intervals_say_they_are_not_checked_and_where_to_check_them(synth):
    """posterior_fairness reports the posterior's intervals: its notes (and its notebook
    display) say they are not checked for coverage and name interval_calibration."""
    fit = DirichletMultinomial(draws=200, random_state=0).fit(synth.audit_data())
    res = posterior_fairness(fit, random_state=0)
    (note,) = res.notes
    assert "90% intervals, not checked for coverage" in note
    assert "interval_calibration" in note and "interval_calibration" in res._repr_html_()
    # a MAP fit has one draw: no interval, and its note says so instead
    point = posterior_fairness(LogisticRegression(method="map").fit(synth.audit_data()))
    assert "lower" not in point.summary()
    (note,) = point.notes
    assert note.startswith("a point estimate (method='map'): one draw, no posterior, so no")


def test_posterior_fairness_by_a_subset_of_attributes(synth):
    """by= compares the groups of some attributes from the intersectional model: P(y|s_by)
    is each draw's P(y|s) averaged with weights P(s); O of the Dirichlet model is EDF of
    the pooled counts; every draw's epsilon over a subset is at most its epsilon over the
    intersections (Foulds et al.'s intersectionality property); by every attribute is
    the default."""
    from bayesfair import empirical_fairness

    data = synth.audit_data()
    attrs = list(data.protected)
    fit = DirichletMultinomial(pseudo_count=1.0, draws=500, random_state=0).fit(data)
    mech = NaiveBayes(draws=500, random_state=0).fit(data, role="decision")
    full = posterior_fairness(fit, mech, random_state=3)
    same = posterior_fairness(fit, mech, by=attrs, random_state=3)
    for name, d in full.draws.items():
        np.testing.assert_array_equal(same.draws[name], d)
    assert same.x == full.x and same.o == full.o
    # every attribute in another order: the same groups, relabelled
    turned = posterior_fairness(fit, mech, by=attrs[::-1], random_state=3)
    for name, d in full.draws.items():
        np.testing.assert_allclose(turned.draws[name], d, rtol=1e-10, atol=1e-12)
    pd.testing.assert_frame_equal(same.pairs, full.pairs)
    for by in (attrs[:1], attrs[1:], [attrs[2], attrs[0]]):
        for p_s in ("posterior", "empirical"):
            sub = posterior_fairness(fit, mech, by=by, p_s=p_s, random_state=3)
            ref = posterior_fairness(fit, mech, p_s=p_s, random_state=3)
            for name in ("epsilon", "epsilon_mechanism"):
                assert (sub.draws[name] <= ref.draws[name] + 1e-9).all(), (by, p_s, name)
        emp = empirical_fairness(data, by=by, pseudo_count=0)
        assert sub.o["epsilon"] == pytest.approx(emp.epsilon)
        assert sub.o["gamma"] == pytest.approx(emp.gamma)
        # X: the posterior predictive averaged over each group's intersections by size
        n = data.group_sizes()
        member = pd.get_dummies(data.grouping()[by].astype(str).agg(", ".join, axis=1))
        member = member[emp.groups["intersection"]].to_numpy(float)
        p_by = (fit.predict_proba() * n) @ member / (n @ member)
        p_by = np.where(n @ member > 0, p_by, np.nan)
        present = ~np.isnan(p_by)
        q = np.stack([1 - p_by[present], p_by[present]], axis=1)
        eps = np.max(np.log(q[:, None, :] / q[None, :, :]))
        assert sub.x["epsilon"] == pytest.approx(eps)
        assert set(sub.pairs["high"]) <= set(emp.groups["intersection"])
        assert emp.by == tuple(by)
    with pytest.raises(ValueError, match=r"`by` names \['income'\], which are not protected"):
        posterior_fairness(fit, by=["income"], random_state=0)
    with pytest.raises(ValueError, match=r"`by` names a column more than once"):
        posterior_fairness(fit, by=[attrs[0], attrs[0]], random_state=0)
    with pytest.raises(ValueError, match="include_empty"):
        posterior_fairness(fit, by=attrs[:1], include_empty=True, random_state=0)


def test_naive_bayes_point_estimate_by_hand():
    df = pd.DataFrame(
        {
            "a": ["x", "x", "y", "y", "y", "x"],
            "b": ["u", "v", "u", "u", "v", "u"],
            "y": [1, 0, 1, 0, 0, 1],
        }
    )
    data = AuditData(df, ["a", "b"], "y")
    fit = NaiveBayes(random_state=0).fit(data)
    # MLE: P(y=1)=1/2; P(a=x|1)=2/3, P(a=x|0)=1/3; P(b=u|1)=1, P(b=u|0)=1/3
    pa = {("x", 1): 2 / 3, ("x", 0): 1 / 3, ("y", 1): 1 / 3, ("y", 0): 2 / 3}
    pb = {("u", 1): 1.0, ("u", 0): 1 / 3, ("v", 1): 0.0, ("v", 0): 2 / 3}
    for idx, lab in enumerate(data.group_labels):
        a, b = lab.split(", ")
        num = 0.5 * pa[(a, 1)] * pb[(b, 1)]
        den = num + 0.5 * pa[(a, 0)] * pb[(b, 0)]
        assert fit.p_point_[idx] == pytest.approx(num / den)
    assert np.all((fit.p_draws_ > 0) & (fit.p_draws_ < 1))


def test_naive_bayes_mode_on_the_boundary():
    """The posterior mode where a count is 0: brute force over the simplex, and an
    outcome no row has (all y = 0) gives P(y=1|s) = 0 without 0/0."""
    from scipy.optimize import minimize

    from bayesfair.models.conjugate import _dirichlet_mode

    for conc in ([3.0, 1.0, 2.5], [0.5, 4.0, 2.0], [1.5, 0.5, 0.5], [2.0, 2.0, 1.0]):
        conc = np.array(conc)

        def neg_log_density(z, conc=conc):
            p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
            return -np.sum((conc - 1) * np.log(np.maximum(p, 1e-300)))

        best = min(
            (
                minimize(neg_log_density, z0, method="Nelder-Mead", options={"xatol": 1e-10})
                for z0 in np.random.default_rng(0).normal(0, 3, (20, 3))
            ),
            key=lambda r: r.fun,
        )
        p = np.exp(best.x - best.x.max())
        np.testing.assert_allclose(_dirichlet_mode(conc), p / p.sum(), atol=1e-3)
    np.testing.assert_allclose(_dirichlet_mode(np.array([1.0, 1.0, 1.0])), 1 / 3)

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.choice(["x", "y", "z"], 200), "b": rng.choice(["u", "v"], 200)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = NaiveBayes(random_state=0).fit(AuditData(df.assign(y=0), ["a", "b"], "y"))
        np.testing.assert_array_equal(fit.p_point_, 0.0)
        # pseudo-counts below 1 with a value that never has y = 1: no negative "mode"
        df["y"] = (df["a"] == "x").astype(int)
        fit = NaiveBayes(a_y=0.5, a_s=0.5, random_state=0).fit(AuditData(df, ["a", "b"], "y"))
    np.testing.assert_allclose(fit.p_point_, np.where(fit.design_.codes[0] == 0, 1.0, 0.0))


def test_posterior_fairness_recovers_truth_with_much_data():
    ds = make_gaussian_threshold(group_sizes=np.full(16, 20_000), random_state=3)
    fit = DirichletMultinomial(pseudo_count=1.0, random_state=1).fit(ds.audit_data())
    pf = posterior_fairness(fit, random_state=0)
    s = pf.summary().set_index("metric")
    assert s.loc["epsilon", "lower"] <= ds.truth["epsilon"] <= s.loc["epsilon", "upper"]
    assert abs(s.loc["gamma", "X (posterior predictive)"] - ds.truth["gamma"]) < 0.005
    assert pf.pairs["probability"].sum() == pytest.approx(1.0)
    assert pf.draws["epsilon"].shape == (4000,)
    # X is the metric of the predictive mean; O of the point estimate
    p = fit.predict_proba()
    assert s.loc["epsilon", "X (posterior predictive)"] == pytest.approx(
        float(epsilon_df(outcome_probabilities(p)))
    )
    assert s.loc["gamma", "O (point estimate)"] == pytest.approx(
        float(gamma_sf(fit.p_point_, fit.design_.n))
    )
    axes = pf.plot()
    assert len(axes) == 2 and len(axes[0].figure.axes) == 2


def test_bias_amplification_draws_are_differences(synth):
    data = synth.audit_data()
    y = DirichletMultinomial(random_state=0).fit(data, role="outcome")
    d = DirichletMultinomial(random_state=1).fit(data, role="decision")
    pf = posterior_fairness(y, d, random_state=0)
    np.testing.assert_allclose(
        pf.draws["df_amplification"], pf.draws["epsilon_mechanism"] - pf.draws["epsilon"]
    )
    assert pf.x["sf_amplification"] == pytest.approx(pf.x["gamma_mechanism"] - pf.x["gamma"])
    assert set(pf.summary()["metric"]) >= {"df_amplification", "sf_amplification"}
    other = make_gaussian_threshold(n_rows=100, random_state=1).audit_data()
    with pytest.raises(ValueError, match="same intersections"):
        posterior_fairness(y, DirichletMultinomial().fit(other), random_state=0)


def test_summary_reads_infinite_draws_as_infinite(synth):
    """A model whose P(y=1|s) is exactly 1 in floating point (a saturated network) has
    infinite epsilon draws.  They must move the median and the interval towards infinity,
    not give NaN (linear interpolation between two infinite draws) or an HDI of the finite
    draws alone, which holds less than 90% of the posterior."""
    data = synth.audit_data()
    labels = DirichletMultinomial(random_state=0).fit(data, role="outcome")
    decisions = DirichletMultinomial(random_state=1).fit(data, role="decision")
    shape = labels.p_draws_.shape
    n = shape[0] * shape[1]
    for model, share in ((labels, 0.05), (labels, 0.6), (decisions, 0.6)):
        p = model.p_draws_.reshape(n, -1).copy()
        p[: int(share * n), 0] = 1.0  # P(y=0|s_0) = 0 while positive elsewhere: epsilon = inf
        model.p_draws_ = p.reshape(shape)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no numpy "invalid value" warnings either
            pf = posterior_fairness(
                labels, decisions if model is decisions else None, random_state=0
            )
        s = pf.summary().set_index("metric")
        eps = pf.draws["epsilon"].reshape(-1)
        assert s.loc["epsilon", "share_infinite"] == pytest.approx(share)
        lo, hi = s.loc["epsilon", ["lower", "upper"]]
        assert np.mean((eps >= lo) & (eps <= hi)) >= 0.9
        assert not s.loc["epsilon", ["mean", "q25", "median", "q75"]].isna().any()
        if share < 0.1:  # the interval can leave the infinite draws out
            assert np.isfinite(hi) and np.isfinite(s.loc["epsilon", "median"])
        else:
            assert hi == np.inf and s.loc["epsilon", "median"] == np.inf
            assert s.loc["epsilon", "mean"] == np.inf
    # both models infinite in a draw: the amplification inf - inf is undefined, and counted
    amp = pf.draws["df_amplification"].reshape(-1)
    undefined = np.isnan(amp)
    assert 0 < undefined.mean() < 1
    row = s.loc["df_amplification"]
    assert row["share_undefined"] == pytest.approx(undefined.mean())
    assert row["median"] == pytest.approx(np.quantile(amp[~undefined], 0.5))


def test_empty_intersections_are_left_out_of_epsilon():
    sizes = np.full(16, 300)
    sizes[5] = 0
    data = make_gaussian_threshold(group_sizes=sizes, random_state=2).audit_data()
    fit = DirichletMultinomial(random_state=0).fit(data)
    pf = posterior_fairness(fit, random_state=0)
    assert pf.excluded == [data.group_labels[5]]
    assert data.group_labels[5] not in set(pf.pairs["high"]) | set(pf.pairs["low"])


def test_model_average_weights(synth):
    data = synth.audit_data()
    fits = [DirichletMultinomial(random_state=0).fit(data), NaiveBayes(random_state=0).fit(data)]
    avg = model_average(fits, "bma", random_state=0)
    assert avg.weights_.sum() == pytest.approx(1.0)
    assert avg.p_draws_.shape == (1, 4000, 16)
    # the paper's weights follow the predictive likelihood of the data
    ll = [
        np.sum(data.counts() * np.log(np.stack([1 - f.predict_proba(), f.predict_proba()], 1)))
        for f in fits
    ]
    assert avg.weights_.idxmax().startswith("EDF" if ll[0] > ll[1] else "NB")
    stack = model_average(fits, "stacking", random_state=0)
    assert stack.weights_.sum() == pytest.approx(1.0) and stack.comparison_ is not None
    assert posterior_fairness(stack, random_state=0).summary().shape[0] == 2
    with pytest.raises(ValueError, match="at least two"):
        model_average(fits[:1], random_state=0)
    with pytest.raises(ValueError, match="method"):
        model_average(fits, "vote", random_state=0)
    # a dict names the weights; the same models give the same average
    named = model_average({"smoothed EDF": fits[0], "naive Bayes": fits[1]}, "bma", random_state=0)
    assert list(named.weights_.index) == ["smoothed EDF", "naive Bayes"]
    np.testing.assert_array_equal(named.weights_.to_numpy(), avg.weights_.to_numpy())
    np.testing.assert_array_equal(named.p_draws_, avg.p_draws_)
    # anything but fitted models is a TypeError that says what was expected
    for bad in (data.table, np.zeros(2), [1, 2], "EDF", [fits[0], None]):
        with pytest.raises(TypeError, match="`models` must"):
            model_average(bad, random_state=0)
    with pytest.raises(TypeError, match="`model` must be a fitted bayesfair model"):
        posterior_fairness(None, random_state=0)
    decisions = DirichletMultinomial(random_state=0).fit(data, role="decision")
    with pytest.raises(ValueError, match=r"same role, got \['decision', 'outcome'\]"):
        model_average([fits[0], decisions], random_state=0)
    other = make_gaussian_threshold(n_rows=4000, random_state=12).audit_data()
    with pytest.raises(ValueError, match="same table"):
        model_average([fits[0], DirichletMultinomial(random_state=0).fit(other)])
    # fit(data) checks the table instead of ignoring it: averaging never refits its models
    same = ModelAverage(fits, random_state=0).fit(data)
    np.testing.assert_array_equal(same.p_draws_, avg.p_draws_)
    for bad, target in [(other, "outcome"), (data, "decision")]:
        with pytest.raises(ValueError, match="not the table the models were fitted on"):
            ModelAverage(fits).fit(bad, role=target)


def test_negative_cross_entropy_by_hand():
    train = AuditData(pd.DataFrame({"g": ["a", "a", "b", "b"], "y": [1, 0, 1, 1]}), "g", "y")
    test = AuditData(pd.DataFrame({"g": ["a", "a", "a", "b"], "y": [1, 1, 0, 0]}), "g", "y")
    p = np.array([0.5, 0.8])
    expected = ((2 / 3) * np.log(0.5) + (1 / 3) * np.log(0.5) + np.log(0.2)) / 2
    assert negative_cross_entropy(p, test) == pytest.approx(expected)
    fit = DirichletMultinomial(pseudo_count=1.0).fit(train)
    assert negative_cross_entropy(fit, test) == pytest.approx(
        negative_cross_entropy(fit.predict_proba(), test)
    )
    # the same intersections in another order are paired by label, not by position
    flipped = AuditData(test.frame, "g", "y", categories={"g": ["b", "a"]})
    assert flipped.group_labels == ["b", "a"]
    assert negative_cross_entropy(fit, flipped) == pytest.approx(negative_cross_entropy(fit, test))
    with pytest.raises(TypeError, match="`test` must be an AuditData"):
        negative_cross_entropy(fit, test.frame)


def test_models_clone_set_params_and_pickle(synth):
    # scikit-learn's clone and set_params work on every model; fitted models pickle (an
    # auditor saves them), including a PyMC model whose MAP is computed after unpickling.
    import pickle

    from sklearn.base import clone

    data = synth.audit_data()
    hlr = HierarchicalLogisticRegression(sigma1=2.0, lam=5.0, method="map", random_state=3)
    copy = clone(hlr)
    assert copy is not hlr and copy.get_params() == hlr.get_params()
    assert copy.set_params(sigma1=0.5).sigma1 == 0.5 and hlr.sigma1 == 2.0
    with pytest.raises(ValueError, match=r"no argument 'sigma'.*'sigma1'"):
        copy.set_params(sigma=1.0)
    fitted = LogisticRegression(method="map", random_state=0).fit(data)
    restored = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(restored.p_point_, fitted.p_point_)
    unsolved = LogisticRegression(method="map", random_state=0).fit(data)
    for cached in ("_map", "_p_point"):  # as if pickled before the MAP was asked for
        del unsolved.__dict__[cached]
    thawed = pickle.loads(pickle.dumps(unsolved))
    assert "_model" not in thawed.__dict__
    np.testing.assert_allclose(thawed.p_point_, fitted.p_point_, atol=1e-6)
    edf = DirichletMultinomial(random_state=0).fit(data)
    nb = NaiveBayes(random_state=0).fit(data)
    avg = ModelAverage((edf, nb), "bma", draws=500)
    assert clone(avg).set_params(method="stacking").averaging == "stacking"
    assert avg.averaging == "bma"
    np.testing.assert_array_equal(clone(avg).fit().weights_, avg.fit().weights_)
    # a conjugate model's parameters are its constructor's (no method or tune to pass)
    assert clone(edf).get_params() == {
        "pseudo_count": 0.5,
        "draws": 1000,
        "chains": 4,
        "random_state": 0,
    }
    # random_seed, PyMC's name for the seed, was an alias; one name now, and the old one
    # is refused with the new name (never silently ignored)
    for model in (DirichletMultinomial, NaiveBayes, LogisticRegression, NeuralNetwork):
        with pytest.raises(TypeError, match="`random_seed=`, which is now called `random_state=`"):
            model(random_seed=7)
        assert "random_seed" not in model().get_params()
    fitted_avg = pickle.loads(pickle.dumps(avg.fit()))
    np.testing.assert_array_equal(fitted_avg.p_draws_, avg.p_draws_)


def test_model_validation(synth):
    data = synth.audit_data()
    with pytest.raises(ValueError, match="method"):
        LogisticRegression(method="gibbs").fit(data)
    with pytest.raises(ValueError, match="effects"):
        LogisticRegression(effects="dummy").fit(data)
    with pytest.raises(ValueError, match="draws"):
        HierarchicalLogisticRegression(draws=0).fit(data)
    # NUTS cannot run untuned: nutpie panicked ('early_end < num_tune', a PanicException
    # that is no Exception); MAP and ADVI ignore tune, so 0 is theirs to take
    for model in (LogisticRegression(tune=0), HierarchicalLogisticRegression(tune=0)):
        with pytest.raises(ValueError, match="`tune` must be a positive integer for NUTS"):
            model.fit(data)
    with pytest.raises(ValueError, match="`tune` must be an integer of at least 0, got True"):
        LogisticRegression(tune=True, method="map").fit(data)
    assert LogisticRegression(tune=0, method="map").fit(data).p_point_.shape == (
        data.n_intersections,
    )
    with pytest.raises(ValueError, match="parameterization"):
        HierarchicalLogisticRegression(parameterization="wide").fit(data)
    with pytest.raises(ValueError, match="hidden"):
        NeuralNetwork(hidden=()).fit(data)
    with pytest.raises(ValueError, match="pseudo_count"):
        DirichletMultinomial(pseudo_count=0).fit(data)
    # a prior's location must be finite, its scale, rate or concentration finite and positive
    # (NaN and inf once reached the sampler, which failed with "All initialization points")
    for model, arg in (
        (LogisticRegression(mu=np.nan), "`mu` must be a finite number, got nan"),
        (LogisticRegression(sigma=np.inf), "`sigma` must be a finite positive number, got inf"),
        (HierarchicalLogisticRegression(lam=np.inf), "`lam` must be a finite positive"),
        (HierarchicalLogisticRegression(sigma1=-1.0), "`sigma1` must be a finite positive"),
        (NeuralNetwork(sigma=0.0), "`sigma` must be a finite positive"),
        (NeuralNetwork(hidden=(10, 2.5)), "`hidden` must be a tuple of positive integer"),
        (DirichletMultinomial(pseudo_count=np.inf), "`pseudo_count` must be a finite positive"),
        (NaiveBayes(a_s=np.nan), "`a_s` must be a finite positive"),
    ):
        with pytest.raises(ValueError, match=re.escape(arg)):
            model.fit(data)
    with pytest.raises(TypeError, match="`mu` must be a finite number, got '0'"):
        HierarchicalLogisticRegression(mu="0").fit(data)
    with pytest.raises(ValueError, match="not fitted"):
        DirichletMultinomial().predict_proba()
    with pytest.raises(TypeError, match="`model` must be a fitted bayesfair model"):
        posterior_fairness("HLR", random_state=0)
    fit = DirichletMultinomial(draws=50, random_state=0).fit(data)
    with pytest.raises(TypeError, match=r"`mechanism` must be a fitted .*got AuditData"):
        posterior_fairness(fit, data, random_state=0)
    # flags are flags ('x' failed in numpy with "ufunc 'bitwise_or' not supported")
    for kw in (dict(include_empty="x"), dict(include_empty=None), dict(point="no")):
        with pytest.raises(TypeError, match=r"`(include_empty|point)` must be True or False"):
            posterior_fairness(fit, **kw, random_state=0)
    # a held-out table missing a level: the error says which intersections and the fix
    frame = synth.frame
    first = data.protected[0]
    lost = data.categories[first][-1]
    held = frame[frame[first] != lost]
    held = held.assign(**{first: held[first].astype(object)})  # no categories to keep the level
    kw = dict(protected=data.protected, outcome=synth.outcome)
    with pytest.raises(ValueError, match=r"only in the model: \[.*categories=train.categories"):
        negative_cross_entropy(fit, AuditData(held, **kw))
    same = AuditData(held, **kw, categories=data.categories)
    assert np.isfinite(negative_cross_entropy(fit, same))
    assert "lam=10.0" in repr(HierarchicalLogisticRegression())
    paper = HierarchicalLogisticRegression.paper()
    assert (paper.effects, paper.method, paper.advi_iterations) == ("one_hot", "advi", 200_000)


def test_design_one_hot(synth):
    d = design_from(synth.audit_data())
    x = d.one_hot()
    assert x.shape == (16, 8) and np.all(x.sum(axis=1) == 3)


# ---------------------------------------------------------------- PyMC fits (compile: slow)
@pytest.fixture(scope="module")
def small():
    return make_gaussian_threshold(
        {"a": 3, "b": 2}, group_sizes=[400, 300, 50, 20, 200, 5], random_state=4
    )


@pytest.mark.slow
def test_hlr_nuts_samples_cleanly_and_covers(small):
    data = small.audit_data()
    fit = HierarchicalLogisticRegression(draws=500, tune=500, chains=2, random_state=0).fit(data)
    assert fit.p_draws_.shape == (2, 500, 6)
    assert fit.diagnostics_["divergences"] == 0
    assert fit.diagnostics_["r_hat_max"] <= 1.02
    s = fit.summary()
    truth = small.truth["table"]["p_true"].to_numpy()
    inside = (s["lower"] <= truth) & (truth <= s["upper"])
    assert inside.sum() >= 5
    names = set(fit.idata_.posterior.data_vars)
    assert {"c", "beta_a", "beta_b", "sigma2", "z", "gamma", "p"} <= names
    assert fit.idata_.posterior["beta_a"].dims[-1] == "a_value"


@pytest.mark.slow
@pytest.mark.parametrize("method", ["advi", "map"])
def test_lr_advi_and_map(small, method):
    data = small.audit_data()
    fit = LogisticRegression(method=method, advi_iterations=10_000, draws=200, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit.fit(data)
    p = fit.predict_proba()
    emp = data.probabilities(pseudo_count=0)[:, 1]
    big = data.group_sizes() >= 200
    assert np.all(np.abs(p - emp)[big] < 0.03)
    assert np.all(np.abs(p - fit.p_point_)[big] < 0.02)  # ADVI mean near the MAP
    assert fit.p_draws_.shape == ((1, 1, 6) if method == "map" else (1, 200, 6))


@pytest.mark.slow
def test_neural_network_advi(small):
    fit = NeuralNetwork(
        hidden=(4, 4), method="advi", advi_iterations=2000, draws=100, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit.fit(small.audit_data())
    assert fit.p_draws_.shape == (1, 100, 6)
    assert np.all((fit.predict_proba() > 0) & (fit.predict_proba() < 1))


@pytest.mark.slow
def test_neural_network_map_leaves_the_all_zero_start(synth):
    """The MAP of a ReLU network started at all-zero weights stays there (no unit is
    active, so no gradient reaches a weight) and predicts one rate for every group;
    the random restarts find a point estimate that follows the data."""
    from bayesfair.models._map import _MAP_CACHE

    data = synth.audit_data()
    emp = data.probabilities(pseudo_count=0)[:, 1]
    fit = NeuralNetwork(method="map", random_state=0).fit(data)
    assert np.corrcoef(fit.p_point_, emp)[0, 1] > 0.99
    assert np.max(np.abs(fit.p_point_ - emp)[data.group_sizes() >= 200]) < 0.03
    objective = _MAP_CACHE[fit.cache_key(fit.design_)]
    from_zero = objective.p(objective.solve(fit.design_.n, fit.design_.k))  # no restarts
    assert np.ptp(from_zero) < 1e-6


@pytest.mark.slow
def test_neural_network_advi_keeps_the_start_with_the_higher_elbo(synth):
    """From PyMC's initial point mean-field ADVI stops at a network that predicts
    almost one rate for every group; started at the MAP it reaches a far lower loss
    (negative ELBO) and follows the data.  advi_start="best" runs both and keeps the
    lower loss; "initial" is the first run alone, with the same seed."""
    data = synth.audit_data()
    emp = data.probabilities(pseudo_count=0)[:, 1]
    kw = dict(method="advi", advi_iterations=3000, draws=200, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        best = NeuralNetwork(**kw).fit(data)  # advi_start="auto": "best" for the network
        initial = NeuralNetwork(advi_start="initial", **kw).fit(data)
    d = best.diagnostics_
    assert best.advi_start_ == "map" and initial.advi_start_ == "initial"
    assert d["advi_final_loss"] == d["advi_final_loss_map"]
    assert d["advi_final_loss_map"] < d["advi_final_loss_initial"] - 100
    assert initial.diagnostics_["advi_final_loss"] == d["advi_final_loss_initial"]
    assert "advi_final_loss_initial" not in initial.diagnostics_
    # the MAP start follows the data and the initial one does not: with seeds 0, 1, 2 the
    # correlations with the empirical rates were 0.944, 0.967, 0.943 against 0.522, 0.571,
    # 0.513 (PyMC 5.28.5, PyTensor 2.38.3); mean-field ADVI's posterior mean shrinks the
    # MAP's 0.9998, so the line is drawn between the two, not at one seed's value
    r_best = np.corrcoef(best.predict_proba(), emp)[0, 1]
    r_initial = np.corrcoef(initial.predict_proba(), emp)[0, 1]
    assert r_best > 0.9 and r_initial < 0.7 and r_best - r_initial > 0.3
    # the MAP the run started from is the fit's point estimate, found once
    np.testing.assert_array_equal(
        best.p_point_, NeuralNetwork(method="map", random_state=0).fit(data).p_point_
    )
    # a model whose MAP needs no restarts keeps PyMC's start under "auto"
    lr = LogisticRegression(**kw).fit(data)
    assert lr.advi_start_ == "initial" and "advi_final_loss_initial" not in lr.diagnostics_
    # ... and can start at its MAP: ADVI takes the zero-sum effects as their own values
    hlr = HierarchicalLogisticRegression(advi_start="map", **kw).fit(data)
    point = hlr._map_point()
    values = hlr._map_objective().constrained(point)
    assert hlr.advi_start_ == "map" and np.isfinite(hlr.diagnostics_["advi_final_loss"])
    for name, v in values.items():
        if name.startswith("beta_"):
            assert v.shape == (len(data.categories[name[5:]]),) and abs(v.sum()) < 1e-12
            assert point[f"{name}_zerosum__"].shape == (len(v) - 1,)
    with pytest.raises(ValueError, match="advi_start"):
        NeuralNetwork(advi_start="zero").fit(data)


def test_advi_best_survives_a_failed_start(monkeypatch):
    """PyMC stops an ADVI run whose loss turns NaN (FloatingPointError); with two starts
    the other one's run is kept and the failure warned, with one start it raises."""
    import pymc as pm

    real = pm.fit

    def fit(*args, **kwargs):
        if "start" in kwargs:
            raise FloatingPointError("NaN occurred in optimization.")
        return real(*args, **kwargs)

    monkeypatch.setattr(pm, "fit", fit)
    data = make_gaussian_threshold(n_rows=500, random_state=0).audit_data()
    kw = dict(hidden=(2,), method="advi", advi_iterations=200, draws=20, random_state=0)
    with pytest.warns(SamplerWarning, match="ADVI from the map start failed"):
        fitted = NeuralNetwork(**kw).fit(data)
    assert fitted.advi_start_ == "initial" and "advi_final_loss_map" not in fitted.diagnostics_
    assert fitted.p_draws_.shape == (1, 20, 16)
    with pytest.raises(FloatingPointError), warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        NeuralNetwork(advi_start="map", **kw).fit(data)


@pytest.mark.parametrize(
    "make",
    [
        lambda: LogisticRegression(method="map"),
        lambda: HierarchicalLogisticRegression(method="map"),
        lambda: HierarchicalLogisticRegression(method="map", point_estimate="joint_map"),
    ],
    ids=["LR", "HLR", "HLR-joint"],
)
def test_refit_replaces_the_point_estimate(make):
    """A second fit of the same estimator on other data gives that data's point estimate
    (and HLR's sigma2 at it), not the first fit's: both are computed on first use and
    cached."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.integers(0, 3, 800), "b": rng.integers(0, 2, 800)})
    df["y"] = (rng.random(800) < 0.3 + 0.3 * df["a"] * df["b"]).astype(int)
    other = df.assign(y=(rng.random(800) < 0.5).astype(int))
    model = make()
    first = model.fit(AuditData(df, ["a", "b"], "y"))
    first_p = first.p_point_.copy()
    first_s2 = getattr(first, "sigma2_point_", None)
    again = model.fit(AuditData(other, ["a", "b"], "y"))
    fresh = make().fit(AuditData(other, ["a", "b"], "y"))
    np.testing.assert_array_equal(again.p_point_, fresh.p_point_)
    np.testing.assert_array_equal(again.p_draws_, fresh.p_draws_)
    assert np.abs(first_p - fresh.p_point_).max() > 0.1
    if first_s2 is not None:
        assert again.sigma2_point_ == fresh.sigma2_point_
        assert abs(first_s2 - fresh.sigma2_point_) > 0.1, (first_s2, fresh.sigma2_point_)


@pytest.mark.slow
def test_advi_warns_while_its_loss_is_still_falling(synth):
    data = synth.audit_data()
    kw = dict(method="advi", advi_iterations=3000, draws=50, random_state=0)
    with pytest.warns(SamplerWarning, match="ADVI loss still falling"):
        slow = LogisticRegression(advi_optimizer="adagrad_window", **kw).fit(data)
    assert slow.diagnostics_["advi_loss_drop"] > 10
    assert any("ADVI loss still falling" in w for w in slow.warnings_)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SamplerWarning)
        fast = LogisticRegression(**kw).fit(data)  # Adam, the default, has converged
    assert abs(fast.diagnostics_["advi_loss_drop"]) < 1
    assert fast.diagnostics_["advi_final_loss"] < slow.diagnostics_["advi_final_loss"]
    with pytest.raises(ValueError, match="advi_optimizer"):
        LogisticRegression(advi_optimizer="sgd").fit(data)


def test_hlr_auto_parameterization_follows_the_information():
    base = design_from(make_gaussian_threshold(n_rows=2000, random_state=0).audit_data())
    n = np.full(16, 600_000)
    rich = Design(
        n=n,
        k=n // 5,
        codes=base.codes,
        categories=base.categories,
        labels=base.labels,
        role="outcome",
    )
    hlr = HierarchicalLogisticRegression()  # lam = 10: centre when n p (1-p) > 10,000 everywhere
    assert hlr.resolved_parameterization(base) == "noncentered"
    assert hlr.resolved_parameterization(rich) == "centered"
    fixed = HierarchicalLogisticRegression(parameterization="noncentered")
    assert fixed.resolved_parameterization(rich) == "noncentered"


@pytest.mark.slow
def test_compiled_model_cache_keeps_each_data_sets_coords():
    one = make_gaussian_threshold({"a": ["x", "y"], "b": ["u", "v"]}, n_rows=400, random_state=1)
    two = make_gaussian_threshold({"c": ["p", "q"], "d": ["r", "s"]}, n_rows=400, random_state=2)
    kw = dict(draws=100, tune=100, chains=1, random_state=0)
    f1 = LogisticRegression(**kw).fit(one.audit_data())
    f2 = LogisticRegression(**kw).fit(two.audit_data())
    assert list(f1.idata_.posterior["intersection"].values) == one.audit_data().group_labels
    assert list(f2.idata_.posterior["intersection"].values) == two.audit_data().group_labels


@pytest.mark.slow
def _pymc_laplace(fit, sigma2: float) -> tuple[float, np.ndarray]:
    """Independent of bayesfair.models._laplace: the Laplace log marginal log p(y, sigma2)
    (up to a constant) of the PyMC model ``fit`` builds, in its own coordinates: the
    conditional mode by L-BFGS on PyMC's log density with ``log sigma2`` held fixed, the
    Hessian by central differences of PyMC's gradient. Returns it and p at the mode."""
    import pymc as pm
    from pymc.blocking import DictToArrayBijection, RaveledVars
    from scipy.optimize import minimize

    obj = fit._map_objective()
    with obj.model:
        pm.set_data({"n": fit.design_.n, "k": fit.design_.k})
    names = [name for name, *_ in obj.info]
    sizes = [int(np.prod(shape)) for _, shape, *_ in obj.info]
    at = int(np.cumsum([0, *sizes])[names.index("sigma2_log__")])
    free = np.ones(sum(sizes), bool)
    free[at] = False

    def full(x):
        out = np.empty(free.size)
        out[free], out[at] = x, np.log(sigma2)
        return RaveledVars(out, obj.info)

    def cost(x):
        lp, grad = obj.logp_dlogp(full(x))
        return -float(lp), -np.asarray(grad, float)[free]

    res = minimize(
        cost,
        obj.x0[free],
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 10_000, "gtol": 1e-10, "ftol": 1e-15},
    )
    h, dim = 1e-5, int(free.sum())
    hess = np.array(
        [(cost(res.x + h * e)[1] - cost(res.x - h * e)[1]) / (2 * h) for e in np.eye(dim)]
    )
    logdet = np.linalg.slogdet(0.5 * (hess + hess.T))[1]
    point = DictToArrayBijection.rmap(full(res.x), obj.start)
    return -res.fun - 0.5 * logdet, obj.p(point)


def test_hlr_point_estimate_is_the_marginal_mode_in_every_parameterization():
    """HLR's "O" (empirical Bayes) is the mode of sigma2's Laplace marginal and the
    conditional mode given it, of the very PyMC model each parameterization builds
    (checked with PyMC's own density, not the package's Newton solver); so it is the
    same in all three (the joint modes are not: the slow test below)."""
    from bayesfair.cli import demo_dataset

    data = demo_dataset(20_000, 2024).audit_data()
    points = {}
    for par in ("noncentered", "centered", "marginal"):
        fit = HierarchicalLogisticRegression(parameterization=par, method="map").fit(data)
        s2 = fit.sigma2_point_
        assert s2 > 0.1  # the demo's intersections are not additive in the log-odds
        lap = {f: _pymc_laplace(fit, s2 * f) for f in (0.8, 1.0, 1.25)}
        values = {f: v[0] for f, v in lap.items()}
        assert values[1.0] >= max(values[0.8], values[1.25]), (par, values)
        np.testing.assert_allclose(fit.p_point_, lap[1.0][1], rtol=0, atol=2e-5)
        points[par] = fit.p_point_
    np.testing.assert_allclose(points["centered"], points["noncentered"], rtol=0, atol=1e-6)
    np.testing.assert_allclose(points["marginal"], points["noncentered"], rtol=0, atol=1e-6)


@pytest.mark.slow
def test_joint_modes_depend_on_the_coordinates_and_the_report_says_which_point_it_shows():
    """With NUTS: the joint modes (find_MAP) of the non-centred and centred HLR differ on
    the log-odds scale by several times more than their posterior means do, and the
    empirical-Bayes point sits nearer the posterior mean than the joint modes differ; the
    report says which point estimate it shows."""
    from pymc.blocking import DictToArrayBijection

    from bayesfair.cli import demo_dataset
    from bayesfair.report import Report
    from bayesfair.report.bayesian import add_bayesian_section

    data = demo_dataset(20_000, 2024).audit_data()
    ok = data.group_sizes() > 0

    def logit(p):
        return np.log(p / (1 - p))

    eb = HierarchicalLogisticRegression(parameterization="noncentered", method="map").fit(data)
    points, points_s2 = {"noncentered": eb.p_point_}, {"noncentered": eb.sigma2_point_}
    kw = dict(draws=300, tune=300, chains=2, random_state=1, point_estimate="joint_map")
    joint = {
        par: HierarchicalLogisticRegression(parameterization=par, **kw).fit(data)
        for par in ("noncentered", "centered")
    }
    nc, c = joint["noncentered"], joint["centered"]
    point_gap = np.mean(np.abs(logit(nc.p_point_) - logit(c.p_point_))[ok])
    post = {k: np.asarray(f.p_draws_).reshape(-1, ok.size).mean(0) for k, f in joint.items()}
    post_gap = np.mean(np.abs(logit(post["noncentered"]) - logit(post["centered"]))[ok])
    eb_gap = np.mean(np.abs(logit(points["noncentered"]) - logit(post["noncentered"]))[ok])
    print(
        f"HLR log-odds gaps: joint modes {point_gap:.2f}, posterior means {post_gap:.3f}, "
        f"empirical Bayes to the posterior mean {eb_gap:.3f}"
    )
    assert point_gap > 0.03 and post_gap < point_gap / 3, (point_gap, post_gap)
    assert eb_gap < point_gap / 2, (eb_gap, point_gap)
    for fit in joint.values():  # the joint modes are stationary points of the log density
        obj = fit._map_objective()
        _, grad = obj.logp_dlogp(DictToArrayBijection.map(fit._map_point()))
        assert np.max(np.abs(grad)) < 1e-2, np.max(np.abs(grad))
    joint_html = add_bayesian_section(Report("t"), {"HLR": nc}).to_html()
    assert "depends on the coordinates" in joint_html and "empirical-Bayes" not in joint_html
    nc.set_params(point_estimate="empirical_bayes")
    eb_html = add_bayesian_section(Report("t"), {"HLR": nc.fit(data)}).to_html()
    assert "empirical-Bayes" in eb_html and "depends on the coordinates" not in eb_html
    assert f"(0: additive): HLR {points_s2['noncentered']:.3g}." in eb_html
    edf = DirichletMultinomial(draws=100, random_state=0).fit(data)
    html = add_bayesian_section(Report("t"), {"EDF": edf}).to_html()
    assert "depends on the coordinates" not in html and "empirical-Bayes" not in html


@pytest.mark.parametrize(
    "prior",
    [dict(mu=0.5, sigma1=2.0, lam=3.0), dict(mu=-0.3, sigma1=0.7, lam=1.0, effects="one_hot")],
)
def test_hlr_point_estimate_follows_the_priors(prior):
    """Other priors and the one-hot coding: the empirical-Bayes estimate is still the
    Laplace marginal mode and conditional mode of the PyMC model's own density."""
    levels = {"a": list("xyz"), "b": list("uv"), "c": list("pq")}
    data = make_gaussian_threshold(levels, n_rows=3000, random_state=3).audit_data()
    fit = HierarchicalLogisticRegression(method="map", parameterization="noncentered", **prior).fit(
        data
    )
    s2 = fit.sigma2_point_
    assert s2 > 0.1
    lap = {f: _pymc_laplace(fit, s2 * f) for f in (0.8, 1.0, 1.25)}
    values = {f: v[0] for f, v in lap.items()}
    assert values[1.0] >= max(values[0.8], values[1.25]), values
    np.testing.assert_allclose(fit.p_point_, lap[1.0][1], rtol=0, atol=2e-5)


def _grid_design(levels: dict, n: np.ndarray, k: np.ndarray) -> Design:
    """A Design over every combination of ``levels`` (first attribute slowest)."""
    import itertools

    combos = list(itertools.product(*[range(len(v)) for v in levels.values()]))
    codes = np.array(combos, dtype=np.int64).T
    labels = [
        ", ".join(str(v[c]) for v, c in zip(levels.values(), cs, strict=True)) for cs in combos
    ]
    return Design(np.asarray(n), np.asarray(k), codes, levels, labels, "outcome")


def test_hlr_point_estimate_without_heterogeneity_is_the_logistic_regression_map():
    """With sigma2's prior pinned at 0 (lam huge), HLR is logistic regression: its
    empirical-Bayes estimate has sigma2 = 0 and equals LogisticRegression's find_MAP."""
    levels = {"a": ["x", "y", "z"], "b": ["u", "v"]}
    n, k = np.array([40, 25, 60, 10, 33, 50]), np.array([12, 11, 30, 2, 20, 31])
    design = _grid_design(levels, n, k)
    hlr = HierarchicalLogisticRegression(lam=1e6, method="map").fit(design)
    assert hlr.sigma2_point_ == 0.0
    lr = LogisticRegression(method="map").fit(design)
    np.testing.assert_allclose(hlr.p_point_, lr.p_point_, rtol=0, atol=1e-6)


def test_hlr_point_estimate_on_any_table_is_finite_and_order_free():
    """On random tables (empty intersections, all-positive and all-negative ones, one to
    three attributes, both codings): sigma2 >= 0, every P(y=1|s) finite in [0, 1], and
    listing the intersections in another order permutes the estimate and nothing else."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from bayesfair.models._laplace import hlr_empirical_bayes

    @settings(max_examples=40, deadline=None, derandomize=True)
    @given(
        sizes=st.lists(st.integers(2, 4), min_size=1, max_size=3),
        seed=st.integers(0, 2**32 - 1),
        effects=st.sampled_from(["sum_to_zero", "one_hot"]),
        lam=st.sampled_from([0.5, 10.0]),
    )
    def check(sizes, seed, effects, lam):
        rng = np.random.default_rng(seed)
        levels = {f"a{j}": [f"v{i}" for i in range(m)] for j, m in enumerate(sizes)}
        g = int(np.prod(sizes))
        n = rng.integers(0, 60, g) * (rng.random(g) > 0.2)
        k = rng.binomial(n, rng.choice([0.0, 1.0, 0.3, 0.7], g))
        if n.sum() == 0:
            n[0], k[0] = 5, 2
        design = _grid_design(levels, n, k)
        kw = dict(mu=0.0, sigma1=1.0, lam=lam, effects=effects)
        est = hlr_empirical_bayes(design, **kw)
        assert est.sigma2 >= 0 and np.all(np.isfinite(est.p))
        assert np.all((est.p >= 0) & (est.p <= 1))
        order = rng.permutation(g)
        shuffled = Design(
            n[order],
            k[order],
            design.codes[:, order],
            levels,
            [design.labels[i] for i in order],
            "outcome",
        )
        again = hlr_empirical_bayes(shuffled, **kw)
        assert abs(again.sigma2 - est.sigma2) <= 1e-4 * max(1.0, est.sigma2)
        # sigma2 is refined to 1e-5 in log sigma2 (from warm starts that follow the order)
        np.testing.assert_allclose(again.p, est.p[order], rtol=0, atol=1e-5)

    check()


def test_hlr_laplace_marginal_tracks_the_exact_marginal_on_small_counts():
    """The Laplace approximation behind HLR's point estimate against the exact marginal
    log p(y, sigma2) by importance sampling (multivariate t around the conditional mode,
    50,000 draws) on 6 intersections of 5-40 rows: over sigma2 in [0, 4] the two profiles
    differ by less than 0.2 nats up to a constant, so their modes nearly agree."""
    from scipy import stats
    from scipy.special import expit, logsumexp

    from bayesfair.models._laplace import _Conditional

    rng = np.random.default_rng(5)
    levels = {"a": list("xy"), "b": list("uvw")}
    n = rng.integers(5, 40, 6)
    k = rng.binomial(n, expit(rng.normal(-0.5, 1.5, 6)))
    cond = _Conditional(_grid_design(levels, n, k), 0.0, 1.0, "sum_to_zero")
    xf, p = cond.xf, cond.xf.shape[1]
    sig = np.r_[0.0, np.geomspace(0.05, 4, 12)]
    laplace, exact = [], []
    for s2 in sig:
        theta, obj, logdet = cond.mode(s2)
        laplace.append(-obj - 0.5 * logdet)
        w = cond.n * expit(cond.eta(theta, s2)) * (1 - expit(cond.eta(theta, s2)))
        hess = np.block(
            [
                [xf.T @ (w[:, None] * xf) + cond.prec * np.eye(p), s2 * xf.T * w],
                [s2 * (xf.T * w).T, np.diag(s2 * s2 * w + 1)],
            ]
        )
        proposal = stats.multivariate_t(theta, np.linalg.inv(hess), df=5)
        x = proposal.rvs(50_000, random_state=1)
        a, z = x[:, :p], x[:, p:]
        eta = cond.base + a @ xf.T + s2 * z
        logp = (cond.k * eta - cond.n * np.logaddexp(0, eta)).sum(1)
        logp -= 0.5 * cond.prec * (a * a).sum(1) + 0.5 * (z * z).sum(1)
        exact.append(
            logsumexp(logp - proposal.logpdf(x))
            - np.log(len(x))
            - 0.5 * x.shape[1] * np.log(2 * np.pi)
        )
    gap = (np.array(laplace) - laplace[0]) - (np.array(exact) - exact[0])
    print(f"Laplace minus exact log marginal over sigma2 in [0, 4]: {np.round(gap, 3)}")
    assert np.max(np.abs(gap)) < 0.2, gap


@pytest.mark.slow
def test_hlr_point_estimate_recovers_the_heterogeneity_and_the_epsilon():
    """Over 20 simulated data sets of 48 intersections with known deviations (sigma2 = 0.5)
    and 20 of an additive model (sigma2 = 0), the empirical-Bayes sigma2 lands near the
    truth, and its epsilon is closer to the true epsilon than the joint mode's."""
    rng = np.random.default_rng(2026)
    levels = {"a": list("pqrs"), "b": list("uvw"), "c": list("xy"), "d": list("mn")}
    codes = _grid_design(levels, np.ones(48, int), np.zeros(48, int)).codes.T
    est, err = {0.5: [], 0.0: []}, {"empirical_bayes": [], "joint_map": []}
    for true_s2 in (0.5, 0.0):
        for _ in range(20):
            effects = [rng.normal(0, 0.5, len(v)) for v in levels.values()]
            gamma = -0.5 + sum(e[codes[:, j]] for j, e in enumerate(effects))
            gamma = gamma + true_s2 * rng.normal(size=48)
            n = rng.integers(40, 400, 48)
            k = rng.binomial(n, 1 / (1 + np.exp(-gamma)))
            d = _grid_design(levels, n, k)
            truth = epsilon_df(outcome_probabilities(1 / (1 + np.exp(-gamma))))
            for kind in err:
                fit = HierarchicalLogisticRegression(method="map", point_estimate=kind).fit(d)
                err[kind].append(abs(epsilon_df(outcome_probabilities(fit.p_point_)) - truth))
                if kind == "empirical_bayes":
                    est[true_s2].append(fit.sigma2_point_)
    print(
        {s: np.round(np.quantile(v, [0.1, 0.5, 0.9]), 3) for s, v in est.items()},
        {k: round(float(np.mean(v)), 3) for k, v in err.items()},
    )
    assert 0.35 < np.median(est[0.5]) < 0.65, est[0.5]
    assert np.median(est[0.0]) < 0.1, est[0.0]
    assert np.mean(err["empirical_bayes"]) < np.mean(err["joint_map"]), err


def test_cached_map_equals_find_map_for_each_data_set():
    """The MAP objective is compiled once per model structure and reused with new counts:
    the second data set's point estimate, from the objective compiled for the first, must
    equal a fresh ``pymc.find_MAP`` on its own model (a wrong compiled objective would
    fail there too; a stale one, there only)."""
    import pymc as pm

    levels = {"a": ["x", "y", "z"], "b": ["u", "v"]}
    for M in (LogisticRegression, HierarchicalLogisticRegression):
        # HLR's default point estimate is empirical Bayes; find_MAP is its joint mode
        kind = {"point_estimate": "joint_map"} if M is HierarchicalLogisticRegression else {}
        first = make_gaussian_threshold(levels, n_rows=300, random_state=1).audit_data()
        first_fit = M(method="map", random_state=0, **kind).fit(first)
        data = make_gaussian_threshold(levels, n_rows=300, random_state=2).audit_data()
        fit = M(method="map", random_state=0, **kind).fit(data)
        assert fit._map_objective() is first_fit._map_objective()  # compiled once
        assert not np.allclose(fit.p_point_, first_fit.p_point_)  # the new counts were used
        with fit._model, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = pm.find_MAP(progressbar=False)
        np.testing.assert_allclose(fit.p_point_, np.asarray(ref["p"]), atol=1e-5)
        if M is HierarchicalLogisticRegression:
            np.testing.assert_allclose(fit.sigma2_point_, float(ref["sigma2"]), atol=1e-5)
    # the objective's one compiled call gives PyMC's own log density and gradient (raveled in
    # the start point's order) at a random point, also for the network's many variables
    from pymc.blocking import DictToArrayBijection, RaveledVars

    for model in (fit, NeuralNetwork(method="map", random_state=0).fit(data)):
        obj = model._map_objective()
        x = RaveledVars(obj.x0 + np.random.default_rng(0).normal(0, 0.3, obj.x0.shape), obj.info)
        lp, grad = obj.logp_dlogp(x)
        logp = DictToArrayBijection.mapf(obj.model.compile_logp(jacobian=False), obj.start)
        dlogp = DictToArrayBijection.mapf(obj.model.compile_dlogp(jacobian=False), obj.start)
        np.testing.assert_allclose(lp, logp(x), rtol=1e-12)
        np.testing.assert_allclose(grad, dlogp(x), rtol=1e-10, atol=1e-12)


def _unravel(vector: np.ndarray, names: list[str], shapes: list[tuple]) -> dict:
    """Split a flat vector into named arrays of the given shapes, in order."""
    sizes = [int(np.prod(s)) for s in shapes]
    assert sum(sizes) == len(vector)
    parts = np.split(vector, np.cumsum(sizes)[:-1])
    return {n: p.reshape(s) for n, p, s in zip(names, parts, shapes, strict=True)}


@pytest.mark.parametrize(
    ("cls", "params"),
    [
        (LogisticRegression, {}),
        (LogisticRegression, {"effects": "one_hot", "mu": 0.3, "sigma": 2.0}),
        (HierarchicalLogisticRegression, {"parameterization": "noncentered"}),
        (HierarchicalLogisticRegression, {"parameterization": "noncentered", "lam": 2.0}),
        (
            HierarchicalLogisticRegression,
            {"parameterization": "centered", "effects": "one_hot", "mu": 0.2, "sigma1": 1.5},
        ),
    ],
)
def test_closed_form_density_equals_pymc(cls, params, pymc_reference):
    """The sampler's hand-written log density and gradient (models/_fastlogp.py) against
    PyMC's compiled ones for the same model, at random points, with an empty and a
    tiny intersection; and every expanded variable against PyMC's deterministics."""
    from bayesfair._nutpie import lr_expand as expand
    from bayesfair.models._fastlogp import LogisticLayout

    levels = {"a": ["x", "y", "z"], "b": ["u", "v"], "c": ["p", "q"]}
    data = make_gaussian_threshold(
        levels, group_sizes=[300, 0, 40, 2, 900, 60, 7, 120, 30, 500, 1, 80], random_state=3
    ).audit_data()
    design = design_from(data)
    model_obj = cls(**params)
    model_obj._validate()
    model = model_obj.build_model(design)
    hlr = isinstance(model_obj, HierarchicalLogisticRegression)
    lay = LogisticLayout.from_design(
        design,
        mu=model_obj.mu,
        sigma=model_obj.sigma,
        effects=model_obj.effects,
        lam=model_obj.lam if hlr else None,
        centered=hlr and model_obj.parameterization == "centered",
    )
    names = [v.name for v in model.value_vars]
    order = (
        ["c"]
        + [n for n in names if n.startswith("beta_")]
        + [n for n in names if n.startswith("sigma2")]
        + [n for n in names if n in ("z", "gamma")]
    )
    assert sorted(order) == sorted(names)
    start = model.initial_point()
    wanted = ["c", *[f"beta_{a}" for a in levels], "p"] + (["gamma"] if hlr else [])
    graphs = [v for v in model.unobserved_value_vars if v.name in wanted]
    evaluate = pymc_reference(model, graphs)
    rng = np.random.default_rng(0)
    offsets = []
    for _ in range(4):
        x = rng.normal(0.0, 0.7, lay.ndim)
        point = _unravel(x, order, [start[n].shape for n in order])
        ours, grad = lay.logp(x)
        theirs, their_grad, values = evaluate(point)
        offsets.append(ours - theirs)
        ref = _unravel(their_grad, names, [start[n].shape for n in names])
        np.testing.assert_allclose(
            grad, np.concatenate([ref[n].ravel() for n in order]), rtol=1e-6, atol=1e-8
        )
        out = np.empty(lay.n_expanded)
        expand(x, lay.buffer, out)
        got = _unravel(out, *lay.variables()[:2])
        for g, v in zip(graphs, values, strict=True):
            np.testing.assert_allclose(np.ravel(got[g.name]), np.ravel(v), rtol=1e-10, atol=1e-12)
    # equal up to the normalising constant, which PyMC keeps and we drop
    np.testing.assert_allclose(offsets, offsets[0], rtol=0, atol=1e-6 * abs(offsets[0]) + 1e-8)


@pytest.mark.parametrize(
    ("levels", "params"),
    [
        ({"a": ["x", "y", "z", "w"]}, {}),  # one attribute: no interaction direction
        ({"a": ["x", "y", "z"]}, {"effects": "one_hot", "mu": 0.3, "sigma1": 1.5}),
        ({"a": ["x", "y", "z"], "b": ["u", "v"]}, {"lam": 2.0}),
    ],
)
def test_marginal_density_equals_pymc(levels, params, pymc_reference):
    """HLR with its effects integrated out: the compiled density and gradient against
    PyMC's model of the same parameterisation, every expanded variable against its
    deterministics; and both against the Gaussian marginal of gamma computed directly
    (the effects' prior pushed through the design, plus sigma2^2 I)."""
    from scipy.stats import expon, multivariate_normal

    from bayesfair._nutpie import mg_expand
    from bayesfair.models._fastlogp import fixed_effects

    # an empty and a tiny intersection among them
    sizes = [300, 0, 40, 2, 900, 60][: int(np.prod([len(v) for v in levels.values()]))]
    data = make_gaussian_threshold(levels, group_sizes=sizes, random_state=3).audit_data()
    design = design_from(data)
    hlr = HierarchicalLogisticRegression(parameterization="marginal", **params)
    hlr._validate()
    model = hlr.build_model(design)
    lay = hlr._marginal_layout(design)
    names = [v.name for v in model.value_vars]
    order = ["m", "sigma2_log__"] + (["w"] if lay.n_interaction else [])
    assert sorted(order) == sorted(names)
    assert lay.n_interaction == design.n_groups - 1 - sum(len(v) - 1 for v in levels.values())
    start = model.initial_point()
    shapes = [start[n].shape for n in order]
    graphs = [v for v in model.unobserved_value_vars if v.name in ("gamma", "p")]
    evaluate = pymc_reference(model, graphs)
    xf, prior_mu, _ = fixed_effects(design, hlr.mu, hlr.effects)
    rng = np.random.default_rng(0)
    offsets, direct = [], []
    for _ in range(4):
        x = rng.normal(0.0, 0.7, lay.ndim)
        point = _unravel(x, order, shapes)
        ours, grad = lay.logp(x)
        theirs, their_grad, values = evaluate(point)
        offsets.append(ours - theirs)
        ref = _unravel(their_grad, names, [start[n].shape for n in names])
        np.testing.assert_allclose(
            grad, np.concatenate([ref[n].ravel() for n in order]), rtol=1e-6, atol=1e-8
        )
        out = np.empty(lay.buffer.astype(int)[5])
        mg_expand(x, lay.buffer, out)
        got = _unravel(out, *lay.variables()[:2])
        for g, v in zip(graphs, values, strict=True):
            np.testing.assert_allclose(got[g.name], v, rtol=1e-10, atol=1e-12)
        # the density of (gamma, log sigma2): Gaussian marginal times the prior of sigma2
        # (and its log Jacobian); the map from (m, w) to gamma is orthogonal up to the
        # factor sigma2 on each interaction direction
        sig = np.exp(x[lay.n_main])
        cov = hlr.sigma1**2 * xf @ xf.T + sig**2 * np.eye(design.n_groups)
        p = 1 / (1 + np.exp(-got["gamma"]))
        lik = np.sum(design.k * np.log(p) + (design.n - design.k) * np.log1p(-p))
        direct.append(
            multivariate_normal(xf @ prior_mu, cov).logpdf(got["gamma"])
            + lay.n_interaction * np.log(sig)
            + expon(scale=1 / hlr.lam).logpdf(sig)
            + np.log(sig)
            + lik
            - ours
        )
    for off in (offsets, direct):
        np.testing.assert_allclose(off, off[0], rtol=0, atol=1e-6 * abs(off[0]) + 1e-8)


@pytest.mark.parametrize("effects", ["sum_to_zero", "one_hot"])
def test_marginal_recovers_the_effects_from_their_conditional(effects):
    """Draw the whole model from its prior (effects, sigma2, z), keep only gamma and
    sigma2, and redraw the effects and z given them: when the conditional is right, the
    redrawn effects have the prior's distribution again, and they rebuild gamma exactly."""
    from bayesfair.models._fastlogp import MarginalLayout, fixed_effects

    design = design_from(
        make_gaussian_threshold(
            {"a": ["x", "y", "z"], "b": ["u", "v"]}, n_rows=600, random_state=1
        ).audit_data()
    )
    mu, sigma = (0.0, 1.0) if effects == "sum_to_zero" else (0.3, 1.5)
    lay = MarginalLayout(design, mu=mu, sigma=sigma, effects=effects, lam=3.0)
    xf, prior_mu, outputs = fixed_effects(design, mu, effects)
    rng = np.random.default_rng(7)
    n = 40_000
    f = prior_mu + sigma * rng.standard_normal((n, xf.shape[1]))
    sig = rng.exponential(1 / 3.0, n)
    gamma = f @ xf.T + sig[:, None] * rng.standard_normal((n, design.n_groups))
    got = lay.recover(gamma, sig, np.random.default_rng(8))
    got = {name: values for name, (_, values) in got.items()}
    for name, dims, m in outputs:
        prior = f @ m.T if dims else f @ m[0]
        # same mean and spread as the prior draws (standard error of a mean: sd / 200)
        np.testing.assert_allclose(got[name].mean(0), prior.mean(0), atol=0.03 * sigma)
        np.testing.assert_allclose(got[name].std(0), prior.std(0), rtol=0.03)
    np.testing.assert_allclose(got["z"].mean(0), 0, atol=0.03)
    np.testing.assert_allclose(got["z"].std(0), 1, rtol=0.03)
    eta = got["c"][:, None] + sum(
        got[f"beta_{a}"][:, design.codes[d]] for d, a in enumerate(design.attributes)
    )
    np.testing.assert_allclose(eta + sig[:, None] * got["z"], gamma, atol=1e-9)


@pytest.mark.slow  # four NUTS fits compared statistically
def test_hlr_on_one_attribute_samples_marginal_and_cleanly():
    """With one protected attribute every deviation of HLR is redundant with its value's
    effect; "auto" integrates the effects out, which samples without divergences and
    gives the posterior of the non-centred fit."""
    rng = np.random.default_rng(2)
    df = pd.DataFrame({"g": rng.choice(["a", "b", "c"], 3000, p=[0.6, 0.3, 0.1])})
    df["y"] = (rng.uniform(size=3000) < np.where(df["g"] == "a", 0.45, 0.25)).astype(int)
    data = AuditData(df, "g", "y")
    fits = [HierarchicalLogisticRegression(random_state=s).fit(data) for s in range(3)]
    assert {f.resolved_parameterization(f.design_) for f in fits} == {"marginal"}
    for f in fits:
        assert f.diagnostics_["divergences"] == 0 and f.diagnostics_["r_hat_max"] <= 1.01
        post = f.idata_.posterior
        assert post["beta_g"].dims == ("chain", "draw", "g_value") and "z" in post
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplerWarning)
        nc = HierarchicalLogisticRegression(parameterization="noncentered", random_state=0)
        nc.fit(data)
    both = np.stack([f.p_draws_.reshape(-1, 3) for f in fits]).reshape(-1, 3)
    ref = nc.p_draws_.reshape(-1, 3)
    # means within 3 Monte Carlo standard errors (an ESS of 400 for the reference)
    assert np.all(np.abs(both.mean(0) - ref.mean(0)) < 3 * ref.std(0) / np.sqrt(400))
    np.testing.assert_allclose(both.std(0), ref.std(0), rtol=0.1)
    for name in ("c", "beta_g", "sigma2"):
        a = np.concatenate([f.idata_.posterior[name].to_numpy().reshape(4000, -1) for f in fits])
        b = nc.idata_.posterior[name].to_numpy().reshape(4000, -1)
        assert np.all(np.abs(a.mean(0) - b.mean(0)) < 3 * b.std(0) / np.sqrt(400))
        np.testing.assert_allclose(a.std(0), b.std(0), rtol=0.15)
    two = AuditData(df.assign(h=rng.choice(["u", "v"], 3000)), ["g", "h"], "y")
    assert HierarchicalLogisticRegression().resolved_parameterization(design_from(two)) != (
        "marginal"
    )


def test_divergence_warning_suggests_target_accept(monkeypatch):
    from types import SimpleNamespace

    from bayesfair import _arviz

    diag = {"divergences": 3.0, "r_hat_max": 1.0, "ess_bulk_min": 900.0, "ess_tail_min": 900.0}
    monkeypatch.setattr(_arviz, "diagnostics", lambda idata, names: diag)
    idata = SimpleNamespace(posterior=SimpleNamespace(data_vars=["c", "p"]))
    fit = HierarchicalLogisticRegression()
    fit.warnings_ = []
    with pytest.warns(SamplerWarning, match=r"3 divergent transitions; a larger `target_accept`"):
        fit._check_diagnostics(idata)
    assert "(now 0.98)" in fit.warnings_[0]
    fit = HierarchicalLogisticRegression(target_accept=0.999)  # nothing left to raise
    fit.warnings_ = []
    with pytest.warns(SamplerWarning):
        fit._check_diagnostics(idata)
    assert fit.warnings_ == ["HierarchicalLogisticRegression: 3 divergent transitions"]


def test_pytensor_blas_note_is_silenced_only_where_the_package_compiles():
    """PyTensor's "could not link to a BLAS" note (raised once a C-compiled MAP or ADVI
    graph holds a matrix product, as HLR's on five attributes does) is silenced around
    the package's own compilation; other warnings pass, and outside it nothing changes."""
    from bayesfair._sampling import quiet_pytensor

    note = "PyTensor could not link to a BLAS installation. Operations ... degraded."
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with quiet_pytensor():
            warnings.warn(note, UserWarning, stacklevel=1)
            warnings.warn("something else", UserWarning, stacklevel=1)
        warnings.warn(note, UserWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["something else", note]


def test_pytensor_blas_log_record_is_silenced_only_where_the_package_compiles(caplog):
    """The neural network's MAP compiles a general matrix product, and PyTensor logs
    "Using NumPy C-API based implementation for BLAS functions." at WARNING level; that
    record is hidden around the package's compilation (the logger's level restored after,
    even on error), other loggers' warnings pass."""
    import logging

    from bayesfair._sampling import quiet_pytensor

    blas = logging.getLogger("pytensor.tensor.blas")
    before = blas.level
    with caplog.at_level(logging.WARNING):
        with quiet_pytensor():
            blas.warning("Using NumPy C-API based implementation for BLAS functions.")
            logging.getLogger("pytensor.other").warning("kept")
        blas.warning("outside")
        with pytest.raises(RuntimeError), quiet_pytensor():
            raise RuntimeError("compilation failed")
    assert [r.getMessage() for r in caplog.records] == ["kept", "outside"]
    assert blas.level == before


def test_diagnostics_are_not_rounded_before_the_checks():
    """R-hat 1.0109 is above 1.01 and must warn (az.summary rounds it to 1.01, which did
    not); the extremes are ArviZ's own rhat and ess over every variable, a variable
    without a defined R-hat (constant) is skipped."""
    import arviz as az

    from bayesfair import _arviz

    x = np.random.default_rng(0).normal(size=(4, 500, 3))
    x[0] += 0.25  # one chain off: R-hat just above 1.01
    idata = _arviz.from_draws({"b": x, "c": np.ones((4, 500)), "d": x[..., 0] * 2})
    r_hat = float(az.rhat(idata, var_names=["b"])["b"].max())
    assert 1.010 < r_hat < 1.015  # the case rounding hid
    diag = _arviz.diagnostics(idata, ["b", "c", "d"])
    assert diag["r_hat_max"] == r_hat
    assert diag["ess_bulk_min"] == float(az.ess(idata, var_names=["b", "d"])["b"].min())
    assert diag["ess_tail_min"] == float(
        min(az.ess(idata, method="tail", var_names=[v])[v].min() for v in ("b", "d"))
    )
    assert _arviz.sampler_problems(diag) == [f"R-hat up to {r_hat:.3f} (> 1.01)"]
    steady = _arviz.diagnostics(idata, ["c"])  # nothing defined
    assert np.isnan(steady["r_hat_max"]) and _arviz.sampler_problems(steady) == []


def test_closed_form_density_mixes_centred_and_noncentred_intersections():
    """Centring some intersections is a change of variables gamma_j = eta_j + sigma2 z_j:
    the density on gamma is the density on z minus log sigma2 for each centred one."""
    from bayesfair._nutpie import lr_expand as expand
    from bayesfair.models._fastlogp import LogisticLayout

    design = design_from(make_gaussian_threshold(n_rows=3000, random_state=5).audit_data())
    args = dict(mu=0.0, sigma=1.0, effects="sum_to_zero", lam=10.0)
    mask = np.arange(design.n_groups) % 3 == 0
    nc = LogisticLayout.from_design(design, **args, centered=False)
    mixed = LogisticLayout.from_design(design, **args, centered=mask)
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.normal(0.0, 0.5, nc.ndim)
        out = np.empty(nc.n_expanded)
        expand(x, nc.buffer, out)
        p, g = nc.n_fixed, design.n_groups
        gamma = out[-2 * g : -g]
        y = x.copy()
        y[p + 1 :][mask] = gamma[mask]
        lp_nc, _ = nc.logp(x)
        lp_mixed, grad = mixed.logp(y)
        assert lp_mixed == pytest.approx(lp_nc - mask.sum() * x[p], rel=1e-10)
        # gradient by central differences
        h = 1e-6
        num = [
            (mixed.logp(y + h * e)[0] - mixed.logp(y - h * e)[0]) / (2 * h) for e in np.eye(len(y))
        ]
        np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-4)


def test_installed_nutpie_takes_the_closed_form_callbacks():
    """The closed-form densities reach nutpie through its public ``from_pyfunc``.  If a
    nutpie release drops or changes it, the estimators fall back to compiling the PyMC
    model (correct, but seconds more per process): this test fails then, so that the
    slowdown is noticed rather than silent."""
    pytest.importorskip("nutpie")
    from bayesfair._nutpie import available

    assert available()


def test_sampler_threads_keep_their_python_thread_state():
    """nutpie calls a Python density from its own threads. Wrapped in keep_thread_state,
    a thread keeps one Python thread state over all its calls (a threading.local, which
    lives in the thread state, counts every call of the chain); unwrapped, every call gets
    a new one (the count never passes 1). The draws are the same either way."""
    nutpie = pytest.importorskip("nutpie")
    import threading

    from nutpie.compiled_pyfunc import from_pyfunc

    from bayesfair._thread_state import keep_thread_state

    def run(wrap):
        local, counts = threading.local(), []

        def logp(x):
            local.calls = getattr(local, "calls", 0) + 1
            counts.append(local.calls)
            return -0.5 * float(x @ x), -x

        model = from_pyfunc(
            ndim=2,
            make_logp_fn=lambda: wrap(logp),
            make_expand_fn=lambda *seeds: lambda x: {"x": x.copy()},
            expanded_dtypes=[np.dtype("float64")],
            expanded_shapes=[(2,)],
            expanded_names=["x"],
            make_initial_point_fn=lambda seed: np.full(2, 0.5),  # a zero gradient is refused
        )
        idata = nutpie.sample(
            model, draws=30, tune=30, chains=1, cores=1, seed=3, progress_bar=False
        )
        return counts, np.asarray(idata.posterior["x"])

    kept, kept_draws = run(keep_thread_state)
    plain, plain_draws = run(lambda f: f)
    assert len(kept) > 60 and max(kept) == len(kept)  # one state for the whole chain
    assert max(plain) == 1  # a new state on every call: what keep_thread_state spares
    np.testing.assert_array_equal(kept_draws, plain_draws)


def test_falling_back_from_the_closed_form_says_so(monkeypatch):
    """When nutpie does not take the compiled densities the fit still runs (here on a
    stand-in for nutpie's compilation, to keep the test fast) and warns."""
    pytest.importorskip("nutpie")
    import bayesfair._nutpie as compiled_densities
    from bayesfair._sampling import sample_nuts
    from bayesfair.models._fastlogp import logistic_nutpie_model

    design = design_from(make_gaussian_threshold(n_rows=500, random_state=0).audit_data())
    args = dict(mu=0.0, sigma=1.0, effects="sum_to_zero")
    monkeypatch.setattr(compiled_densities, "available", lambda: False)
    monkeypatch.setattr(compiled_densities, "unavailable_reason", lambda: "a stand-in reason")
    used = []

    def stand_in():
        used.append("compiled PyMC model")
        return logistic_nutpie_model(design, **args)

    with pytest.warns(SamplerWarning, match="densities are off: a stand-in reason"):
        idata = sample_nuts(
            lambda: None,
            lambda: pytest.fail("the closed form must not be used"),
            draws=20,
            tune=20,
            chains=1,
            seed=0,
            compile_nutpie=stand_in,
        )
    assert used == ["compiled PyMC model"]
    assert idata.posterior["p"].shape == (1, 20, design.n_groups)


def _frame_with_unused_value(seed: int, n: int = 3000) -> AuditData:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "a": pd.Categorical(rng.choice(list("xyz"), n), categories=list("xyzw")),
            "b": rng.choice([0, 1], n),
            "c": rng.choice(["p", "q"], n, p=[0.97, 0.03]),
        }
    )
    df["y"] = (rng.random(n) < 0.3 + 0.1 * (df.a == "x")).astype(int)
    return AuditData(df, protected=["a", "b", "c"], outcome="y")


@pytest.mark.parametrize(
    "params",
    [
        {"effects": "sum_to_zero"},
        {"effects": "sum_to_zero", "lam": 10.0},
        {"effects": "one_hot", "mu": 0.3, "sigma": 2.0, "lam": 5.0},
    ],
)
def test_separating_unidentified_directions_is_a_rotation(params):
    """With an attribute value no row carries (and with one-hot effects) some directions
    of the fixed effects are seen by no likelihood term.  The sampler's layout rotates
    them into coordinates of their own: at every point the rotated layout has the same
    log density, its gradient is the rotated gradient, and every expanded variable
    (c, beta, gamma, p) is the same."""
    from bayesfair._nutpie import lr_expand as expand
    from bayesfair.models._fastlogp import LogisticLayout, unidentified_rotation, zero_sum_basis

    design = design_from(_frame_with_unused_value(0))
    assert (design.n == 0).sum() == 4
    args = dict(mu=params.get("mu", 0.0), sigma=params.get("sigma", 1.0), effects=params["effects"])
    args["lam"] = params.get("lam")
    plain = LogisticLayout.from_design(design, **args)
    rotated = LogisticLayout.from_design(design, separate_unidentified=True, **args)
    p = plain.n_fixed
    xf = np.hstack(
        [np.ones((design.n_groups, 1))]
        + [
            (np.eye(len(v)) if params["effects"] == "one_hot" else zero_sum_basis(len(v)))[
                design.codes[d]
            ]
            for d, v in enumerate(design.categories.values())
        ]
    )
    rot = unidentified_rotation(xf[design.n > 0])
    assert rot is not None and np.allclose(rot.T @ rot, np.eye(p))
    unseen = rot[:, -1]
    np.testing.assert_allclose(xf[design.n > 0] @ unseen, 0.0, atol=1e-10)
    assert np.abs(xf[design.n == 0] @ unseen).max() > 0.1  # only the empty rows see it
    rng = np.random.default_rng(0)
    for _ in range(4):
        x = rng.normal(0.0, 0.7, plain.ndim)
        y = x.copy()
        y[:p] = rot.T @ x[:p]
        lp, grad = plain.logp(x)
        lp_rot, grad_rot = rotated.logp(y)
        assert lp_rot == pytest.approx(lp, rel=1e-12)
        np.testing.assert_allclose(grad_rot[:p], rot.T @ grad[:p], rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(grad_rot[p:], grad[p:], rtol=1e-9, atol=1e-10)
        out, out_rot = np.empty(plain.n_expanded), np.empty(rotated.n_expanded)
        expand(x, plain.buffer, out)
        expand(y, rotated.buffer, out_rot)
        np.testing.assert_allclose(out_rot, out, rtol=1e-9, atol=1e-12)
    # where the non-empty intersections see every direction, nothing is rotated
    full = design_from(make_gaussian_threshold(n_rows=2000, random_state=0).audit_data())
    if params["effects"] == "sum_to_zero":
        same = LogisticLayout.from_design(full, separate_unidentified=True, **args)
        np.testing.assert_array_equal(same.buffer, LogisticLayout.from_design(full, **args).buffer)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_hlr_samples_cleanly_with_an_unused_category(seed):
    """An unused category used to leave HLR's NUTS a prior-only ridge: bulk ESS 194-369 of
    4,000 draws (and a SamplerWarning) on 8 seeded data sets, against 618-1,401 with the
    ridge's direction sampled on its own."""
    pytest.importorskip("nutpie")
    import arviz as az

    data = _frame_with_unused_value(seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SamplerWarning)
        fit = HierarchicalLogisticRegression(random_state=seed).fit(data, role="outcome")
    # no R-hat or ESS warning; a divergent transition is rare (0-2 of 4,000 in 3 of 24 fits
    # on the PyMC 5 stack, none of 24 on PyMC 6), not the ridge's hundreds
    said = [str(w.message) for w in caught if issubclass(w.category, SamplerWarning)]
    assert all("R-hat" not in m and "ESS" not in m for m in said), said
    assert fit.diagnostics_["divergences"] <= 2, fit.diagnostics_
    free = [v for v in fit.idata_.posterior.data_vars if v not in ("p", "gamma")]
    ess_by_variable = az.ess(fit.idata_, var_names=free)
    ess = min(float(ess_by_variable[v].min()) for v in free)
    print("bulk ESS (min over parameters):", round(ess))
    assert ess >= 400
    # the unseen value's intersections are drawn from the prior around the fitted ones
    p = fit.summary().set_index("intersection")
    assert np.isfinite(p.loc[p.index.str.startswith("w"), "mean"]).all()


def test_posterior_p_s_keeps_the_plug_ins_and_epsilon(synth):
    """``p_s="posterior"`` changes only gamma's draws: epsilon's draws, X and O are those
    of ``p_s="empirical"``; the draws of P(s) average to the empirical frequencies, so
    gamma's posterior mean moves by Monte Carlo error only; empty intersections keep
    P(s) = 0; and with a mechanism both models share each draw of P(s)."""
    sizes = np.full(16, 300)
    sizes[3] = 0
    data = make_gaussian_threshold(group_sizes=sizes, random_state=2).audit_data()
    fit = DirichletMultinomial(pseudo_count=1.0, draws=4000, random_state=0).fit(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the empty intersection
        post = posterior_fairness(fit, p_s="posterior", random_state=0)
        emp = posterior_fairness(fit, p_s="empirical", random_state=0)
    assert np.array_equal(post.draws["epsilon"], emp.draws["epsilon"])
    assert post.x == emp.x and post.o == emp.o
    assert not np.array_equal(post.draws["gamma"], emp.draws["gamma"])
    assert post.draws["gamma"].mean() == pytest.approx(emp.draws["gamma"].mean(), rel=0.05)
    assert post.draws["gamma"].std() > emp.draws["gamma"].std()
    assert fit.design_.labels[3] not in set(post.gamma_groups["intersection"])
    dec = DirichletMultinomial(pseudo_count=1.0, draws=4000, random_state=1).fit(data, "decision")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        both = posterior_fairness(fit, dec, random_state=0)
    np.testing.assert_allclose(
        both.draws["sf_amplification"], both.draws["gamma_mechanism"] - both.draws["gamma"]
    )
    # which pair attains epsilon and which group gamma: the labels' (as alone) and the
    # decisions' (as the decision model's alone), each under its own metric name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        alone = posterior_fairness(dec, random_state=0)
    for attr, metric in (("pairs", "epsilon"), ("gamma_groups", "gamma")):
        table = getattr(both, attr)
        assert list(table["metric"].unique()) == [metric, f"{metric}_mechanism"]
        assert table.groupby("metric")["probability"].sum().to_numpy() == pytest.approx(1.0)
        own = table[table.metric == metric].reset_index(drop=True)
        pd.testing.assert_frame_equal(own, getattr(post, attr))
        mech = table[table.metric == f"{metric}_mechanism"].reset_index(drop=True)
        ref = getattr(alone, attr).drop(columns="metric")
        pd.testing.assert_frame_equal(mech.drop(columns="metric"), ref)
    with pytest.raises(ValueError, match="`p_s` must be 'empirical' or 'posterior'"):
        posterior_fairness(fit, p_s="sample", random_state=0)
    for prob in (0.0, 1.0, np.nan, 90):
        with pytest.raises(ValueError, match=r"`level` must be a number in \(0, 1\)"):
            posterior_fairness(fit, level=prob, random_state=0)
