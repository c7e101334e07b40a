"""Chen et al.: two-predictor discrimination test, learning curves, bias/variance/noise."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.tree import DecisionTreeRegressor

from bayesfair.frequentist import (
    bias_variance_decomposition,
    compare_discrimination,
    group_learning_curves,
)


def test_compare_discrimination_hand_computed_and_validation():
    rng = np.random.default_rng(0)
    g = np.repeat([0, 1], [300, 200])
    la = rng.random(500) < np.where(g == 1, 0.35, 0.2)
    lb = la ^ (rng.random(500) < 0.05)
    res = compare_discrimination(la, lb, g)
    da = la[g == 0].mean() - la[g == 1].mean()
    db = lb[g == 0].mean() - lb[g == 1].mean()
    assert res.gamma == pytest.approx(abs(da)) and res.gamma_other == pytest.approx(abs(db))
    c = sum(np.cov(la[g == k], lb[g == k]) / (g == k).sum() for k in (0, 1))
    z_plus = (da - db) / np.sqrt(c[0, 0] + c[1, 1] - 2 * c[0, 1])
    assert res.z_plus == pytest.approx(z_plus)
    assert res.pvalue == max(res.p_minus, res.p_plus)
    with pytest.raises(ValueError, match="exactly two"):
        compare_discrimination(la, lb, np.arange(500) % 3)
    with pytest.raises(ValueError, match="`group` has 1 missing value"):
        compare_discrimination(la, lb, np.where(np.arange(500) == 7, np.nan, g))
    with pytest.raises(ValueError, match="`loss_b` has 1 missing or infinite"):
        compare_discrimination(la, np.where(np.arange(500) == 7, np.nan, lb), g)


@pytest.mark.slow
def test_compare_discrimination_level_under_h0():
    """Two predictors with the same discrimination: rejection at most 5% (the test needs both
    Z_-1 and Z_+1 to be unlikely, so it is conservative)."""
    rng = np.random.default_rng(1)
    rej = 0
    n_sets = 2000
    for _ in range(n_sets):
        g = np.repeat([0, 1], [400, 150])
        base = np.where(g == 1, 0.3, 0.2)
        la = rng.random(550) < base
        lb = rng.random(550) < base
        rej += compare_discrimination(la, lb, g).pvalue <= 0.05
    assert rej / n_sets <= 0.06


def test_learning_curves_recover_group_noise():
    """Linear truth with heteroskedastic noise: each group's asymptote is its noise variance."""
    rng = np.random.default_rng(2)
    n = 6000
    g = (rng.random(n) < 0.3).astype(int)
    X = rng.normal(size=(n, 3))
    sd = np.where(g == 1, 1.5, 0.5)
    y = X @ np.array([1.0, -2.0, 0.5]) + rng.normal(0, sd)
    res = group_learning_curves(
        LinearRegression(), X, y, g, sizes=[10, 20, 40, 80, 160, 640], n_repeats=20, random_state=0
    )
    fits = res.fits.set_index("group")
    assert fits.loc[0, "delta"] == pytest.approx(0.25, rel=0.25)
    assert fits.loc[1, "delta"] == pytest.approx(2.25, rel=0.25)
    assert (fits["lower"] <= fits["upper"]).all()
    mc = res.mean_curves()
    assert (mc.iloc[0] > mc.iloc[-1]).all()  # more data, less loss
    assert res.notes == []  # curves that fall like n^-beta: nothing to warn of
    res.plot()
    assert res.plot(extrapolate_to=5000).get_lines()[1].get_xdata().max() == pytest.approx(5000)
    # a size the curves cannot reach, or something to draw into that is no Axes, is
    # refused before drawing (-5 and NaN drew no fitted curve, 0 the default one, "x" failed
    # in numpy)
    for bad in (-5, 0, np.nan):
        with pytest.raises(ValueError, match="`extrapolate_to` must be a finite positive"):
            res.plot(extrapolate_to=bad)
    with pytest.raises(TypeError, match="`ax` must be a matplotlib Axes, got str"):
        res.plot(ax="x")
    assert res.summary() is res.fits  # a result object with a summary, as every test's
    with pytest.raises(ValueError, match="exceeds"):
        group_learning_curves(LinearRegression(), X[:100], y[:100], g[:100], sizes=[500])
    for bad in ([np.inf], [50.5], [1], [], "50"):
        with (
            warnings.catch_warnings(),
            pytest.raises(ValueError, match="`sizes` must be whole numbers of training rows"),
        ):
            warnings.simplefilter("error", RuntimeWarning)  # refused without numpy's warning
            group_learning_curves(LinearRegression(), X, y, g, sizes=bad)
    with pytest.raises(ValueError, match=r"one row per sample .*'group': 99"):
        group_learning_curves(LinearRegression(), X[:100], y[:100], g[:99], sizes=[50])
    # a missing outcome: a test row's made its group's curve NaN without a word, a
    # training row's failed in the samples that drew it ('raise `sizes`')
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match=r"`y` has 3 missing or infinite value\(s\)"):
            group_learning_curves(
                LinearRegression(), X, np.where(np.arange(n) < 3, bad, y), g, sizes=[50]
            )
    with pytest.raises(ValueError, match=r"`y_test` has 1 missing or infinite value"):
        group_learning_curves(
            LinearRegression(),
            X,
            y,
            g,
            sizes=[50],
            X_test=X[:10],
            y_test=np.r_[np.nan, y[1:10]],
            group_test=g[:10],
        )
    with pytest.raises(ValueError, match=r"`X_test`, `y_test`, `group_test`.*'y_test': 9"):
        group_learning_curves(
            LinearRegression(), X, y, g, sizes=[50], X_test=X[:10], y_test=y[:9], group_test=g[:10]
        )
    for arg, bad, match in [
        ("n_repeats", 1, "`n_repeats` must be an integer of at least 2, got 1"),
        ("n_repeats", 2.5, "`n_repeats` must be an integer of at least 2"),
        ("level", 1.5, r"`level` must be a number in \(0, 1\)"),
        ("level", 0, r"`level` must be a number in \(0, 1\)"),
    ]:
        with pytest.raises(ValueError, match=match):
            group_learning_curves(LinearRegression(), X, y, g, sizes=[20, 40, 80], **{arg: bad})
    # two sizes cannot pin the three parameters of the curve: said, not silently NaN
    with pytest.warns(UserWarning, match="`sizes` has 2 distinct value"):
        two = group_learning_curves(LinearRegression(), X, y, g, sizes=[20, 40], n_repeats=2)
    assert two.fits["delta"].isna().all()
    for bad in (0, 1.0, -0.1, 2, "0.2", True):
        with pytest.raises(ValueError, match=r"`test_size` must be a number in \(0, 1\)"):
            group_learning_curves(LinearRegression(), X, y, g, sizes=[50], test_size=bad)
    with pytest.raises(ValueError, match="give `y_test` and `group_test`"):
        group_learning_curves(LinearRegression(), X, y, g, sizes=[50], X_test=X[:10])
    # a row without a group is refused, not made into a group of its own
    g_missing = g.astype(object)
    g_missing[::50] = None
    with pytest.raises(ValueError, match=r"`group` has \d+ missing value"):
        group_learning_curves(LinearRegression(), X, y, g_missing, sizes=[50])
    with pytest.raises(ValueError, match=r"`group_test` has 1 missing value"):
        group_learning_curves(
            LinearRegression(),
            X,
            y,
            g,
            sizes=[50],
            X_test=X[:10],
            y_test=y[:10],
            group_test=g_missing[:10],
        )


@pytest.mark.slow
def test_asymptote_intervals_cover_the_noise_level():
    """Linear truth, noise variances 0.25 and 2.25 (the groups' asymptotes): over 40 data
    sets the 95% interval of each asymptote covers it in at least 80%.  Resampling the
    repeats alone, the interval left out the test set's error, shared by every repeat,
    and covered 2.25 in 0.20 (0.875 for 0.25)."""
    from sklearn.linear_model import LinearRegression

    reps, cover = 40, np.zeros(2)
    for r in range(reps):
        rng = np.random.default_rng(100 + r)
        g = (rng.random(6000) < 0.3).astype(int)
        X = rng.normal(size=(6000, 3))
        y = X @ np.array([1.0, -2.0, 0.5]) + rng.normal(0, np.where(g == 1, 1.5, 0.5))
        fits = group_learning_curves(
            LinearRegression(), X, y, g, sizes=[10, 20, 40, 80, 160, 640], random_state=r
        ).fits.set_index("group")
        cover += (fits["lower"] <= [0.25, 2.25]) & ([0.25, 2.25] <= fits["upper"])
    print("asymptote interval coverage:", cover / reps)  # shown with pytest -s
    assert (cover / reps >= 0.8).all(), cover / reps


def test_pow3_asymptote_of_a_nonnegative_loss_is_nonnegative():
    """delta + alpha n^-beta: a clean curve is recovered; a flat or slightly rising
    curve of a non-negative loss (the model has nothing left to learn) gets an asymptote
    in [0, max loss] and a finite bootstrap interval there, where beta near 0 had let
    delta run to -878,858; a loss that can be negative keeps an unbounded asymptote."""
    from bayesfair.frequentist.learning import _fit_pow3

    n = np.array([50.0, 100, 200, 400, 800, 1600])
    np.testing.assert_allclose(_fit_pow3(n, 0.1 + 2.0 * n**-0.5), [0.1, 2.0, 0.5], rtol=1e-5)
    rising = np.array([0.675, 0.676, 0.678, 0.679, 0.681, 0.682])
    delta, alpha, _ = _fit_pow3(n, rising)
    assert 0.0 <= delta <= rising.max() and alpha >= 0
    shifted = _fit_pow3(n, -0.5 + 2.0 * n**-0.5)  # negative values: no floor on delta
    np.testing.assert_allclose(shifted, [-0.5, 2.0, 0.5], rtol=1e-5)
    # end to end: a group whose model learns nothing (pure noise, 0-1 loss)
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(3000, 2)), rng.integers(0, 2, 3000)
    g = np.repeat(["a", "b"], 1500)
    res = group_learning_curves(
        LogisticRegression(),
        X,
        y,
        g,
        sizes=[20, 40, 80, 160],
        n_repeats=10,
        loss="zero_one",
        random_state=0,
    )
    for d in res.boot_deltas.values():
        assert ((d >= 0) & (d <= 1)).all()
    assert res.fits[["delta", "lower", "upper"]].apply(np.isfinite).all().all()
    assert (res.fits["lower"] >= 0).all()
    # nothing learned: the notes name the group whose fit sits on a bound (a; b's noise
    # happened to fall over the sizes) and send the reader to the losses themselves
    (note,) = res.notes
    assert "the fit of a sits on a bound" in note and "loss_at_largest_n" in note
    three = group_learning_curves(
        LogisticRegression(), X, y, g, sizes=[20, 40, 80], n_repeats=3, loss="zero_one"
    )
    assert any(n.startswith("three training sizes fit") for n in three.notes)


def test_bias_variance_noise_add_up_for_squared_loss():
    rng = np.random.default_rng(3)
    n = 4000
    g = (rng.random(n) < 0.4).astype(int)
    x = rng.normal(g * 1.0, 1 + g, n)
    f = 2 * x**2 - 2 * x + 0.1
    y = f + rng.normal(0, 1, n) * (1 + 0.5 * g)
    X = x[:, None]
    tr, te = slice(0, 3000), slice(3000, None)
    out = bias_variance_decomposition(
        DecisionTreeRegressor(max_depth=3),
        X[tr],
        y[tr],
        X[te],
        y[te],
        g[te],
        n_repeats=30,
        y_optimal=f[te],
        random_state=0,
    ).set_index("group")
    total = out["noise"] + out["bias"] + out["variance"]
    np.testing.assert_allclose(out["loss"], total, rtol=0.1)
    assert (out["variance"] > 0).all() and (out["bias"] > 0).all()
    # without the optimal prediction, noise is not identified
    blind = bias_variance_decomposition(
        DecisionTreeRegressor(max_depth=3),
        X[tr],
        y[tr],
        X[te],
        y[te],
        g[te],
        n_repeats=5,
        random_state=0,
    )
    assert blind["noise"].isna().all()
    # refused before any work, each naming its argument (train_size=10**9 drew 10**9
    # indices per repeat until memory ran out)
    bvd = bias_variance_decomposition
    tree = DecisionTreeRegressor(max_depth=3)
    for kw, match in [
        (dict(train_size=10**9), "`train_size` 1000000000 exceeds the 3000 training rows"),
        (dict(train_size=-5), "`train_size` must be a positive integer, got -5"),
        (dict(train_size=2.5), "`train_size` must be a positive integer"),
        (dict(n_repeats=1), "`n_repeats` must be an integer of at least 2"),
    ]:
        with pytest.raises(ValueError, match=match):
            bvd(tree, X[tr], y[tr], X[te], y[te], g[te], **kw)
    with pytest.raises(ValueError, match="`X_train` and `y_train` must have one row per"):
        bvd(tree, X[:10], y[tr], X[te], y[te], g[te])
    with pytest.raises(ValueError, match=r"`X_test`, `y_test`, `group_test` must have one row"):
        bvd(tree, X[tr], y[tr], X[te], y[te][:5], g[te])
    # a missing outcome is refused (it failed only in the samples that drew it)
    y_missing = np.where(np.arange(len(y)) % 97 == 0, np.nan, y)
    with pytest.raises(ValueError, match=r"`y_train` has \d+ missing or infinite value"):
        bvd(tree, X[tr], y_missing[tr], X[te], y[te], g[te])
    with pytest.raises(ValueError, match=r"`y_test` has \d+ missing or infinite value"):
        bvd(tree, X[tr], y[tr], X[te], y_missing[te], g[te])
    with pytest.raises(ValueError, match=r"`y_optimal` has \d+ missing or infinite value"):
        bvd(tree, X[tr], y[tr], X[te], y[te], g[te], y_optimal=y_missing[te])
    with pytest.raises(ValueError, match=r"`y_optimal` must have one value per test row"):
        bvd(tree, X[tr], y[tr], X[te], y[te], g[te], y_optimal=y[te][1:])


def test_learning_curves_log_and_brier_losses_score_predicted_probabilities():
    """At a training size equal to the whole training set every repeat fits the same
    deterministic model, so each group's curve value is that model's log loss (Brier
    score) on the group's test rows, as scikit-learn computes it."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import brier_score_loss, log_loss

    rng = np.random.default_rng(0)
    X = rng.normal(size=(900, 2))
    g = rng.choice(["a", "b"], 900, p=[0.7, 0.3])
    y = (X[:, 0] + (g == "b") * X[:, 1] + rng.normal(size=900) > 0).astype(int)
    tr, te = slice(0, 600), slice(600, None)
    model = LogisticRegression().fit(X[tr], y[tr])
    p = model.predict_proba(X[te])[:, 1]
    for loss, ref in (("log", log_loss), ("brier", brier_score_loss)):
        res = group_learning_curves(
            LogisticRegression(),
            X[tr],
            y[tr],
            g[tr],
            sizes=[150, 300, 600],
            n_repeats=3,
            loss=loss,
            X_test=X[te],
            y_test=y[te],
            group_test=g[te],
            random_state=1,
        )
        full = res.curves[res.curves.n == 600].groupby("group")["loss"]
        assert full.std().max() < 1e-8  # the same model in every repeat
        for grp in ("a", "b"):
            m = g[te] == grp
            assert full.mean()[grp] == pytest.approx(ref(y[te][m], p[m]), rel=1e-6)
    with pytest.raises(TypeError, match="predict_proba"):
        group_learning_curves(LinearRegression(), X, y, g, sizes=[100], loss="log")
    with pytest.raises(ValueError, match="'brier', 'log'"):
        group_learning_curves(LogisticRegression(), X, y, g, sizes=[100], loss="hinge")
    rare = np.r_[np.ones(899, int), 0]  # one negative in 900: a sample of 20 has one class
    with pytest.raises(ValueError, match=r"sample of 20 rows, which holds one class only .*2 cl"):
        group_learning_curves(
            LogisticRegression(), X, rare, g, sizes=[20, 40, 80], n_repeats=2, random_state=0
        )
    with pytest.raises(ValueError, match=r"20 rows, which holds one class only .*`train_size`"):
        bias_variance_decomposition(
            LogisticRegression(), X, rare, X, rare, g, train_size=20, n_repeats=2, random_state=0
        )


def test_learning_curves_take_a_dataframe_for_estimators_that_select_columns_by_name():
    """A pipeline whose ColumnTransformer selects columns by name needs X as a DataFrame:
    the curves and the decomposition keep it one, and give what the same pipeline gives on
    the numpy array with columns selected by position."""
    import pandas as pd
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    rng = np.random.default_rng(0)
    n = 1200
    X = pd.DataFrame({"age": rng.normal(40, 10, n), "job": rng.choice(["x", "y", "z"], n)})
    g = rng.choice(["a", "b"], n, p=[0.7, 0.3])
    y = ((X["age"] - 40) / 10 + (X["job"] == "x") + rng.normal(size=n) > 0.5).astype(int)

    def pipe(job, age):
        return make_pipeline(
            make_column_transformer((OneHotEncoder(), job), (StandardScaler(), age)),
            LogisticRegression(),
        )

    by_name, by_position = pipe(["job"], ["age"]), pipe([1], [0])
    kw = dict(sizes=[50, 100, 200], n_repeats=4, loss="log", random_state=0)
    frame = group_learning_curves(by_name, X, y, g, **kw)
    array = group_learning_curves(by_position, X.to_numpy(object), y.to_numpy(), g, **kw)
    np.testing.assert_array_equal(frame.curves["loss"], array.curves["loss"])
    assert np.isfinite(frame.curves["loss"]).all()
    kw = dict(loss="zero_one", n_repeats=4, train_size=300, random_state=0)
    frame = bias_variance_decomposition(by_name, X[:800], y[:800], X[800:], y[800:], g[800:], **kw)
    Xa = X.to_numpy(object)
    array = bias_variance_decomposition(
        by_position, Xa[:800], y[:800], Xa[800:], y[800:], g[800:], **kw
    )
    pd.testing.assert_frame_equal(frame, array)


def test_learning_curves_split_off_every_groups_share_of_test_rows():
    """The held-out test set takes round(test_size n_a) rows of every group (so a small
    group is neither left out nor over-represented by chance); a group left without test
    rows is named in a warning, not dropped silently."""
    from bayesfair.frequentist.learning import _stratified_split

    rng = np.random.default_rng(1)
    g = np.repeat(["a", "b", "c", "d"], [500, 37, 8, 2])
    rng.shuffle(g)
    te, tr = _stratified_split(g, 0.2, np.random.default_rng(0))
    assert len(np.intersect1d(te, tr)) == 0 and len(te) + len(tr) == len(g)
    counts = {k: int((g[te] == k).sum()) for k in "abcd"}
    assert counts == {"a": 100, "b": 7, "c": 2, "d": 0}
    mixed = np.array(["a", 1] * 10, dtype=object)  # labels numpy cannot sort
    te, _ = _stratified_split(mixed, 0.5, np.random.default_rng(0))
    assert sorted(map(str, mixed[te])) == ["1"] * 5 + ["a"] * 5
    X = rng.normal(size=(len(g), 1))
    y = X[:, 0] + rng.normal(size=len(g))
    with pytest.warns(UserWarning, match=r"\['d'\] have no rows in the test set"):
        res = group_learning_curves(
            LinearRegression(), X, y, g, sizes=[20, 50, 100], n_repeats=2, random_state=0
        )
    assert sorted(res.fits["group"]) == ["a", "b", "c"]


def test_unused_categories_of_the_groups_are_named():
    """A Categorical `group` with a category that has no rows: the curves and the
    decomposition are those of the observed groups, and the empty one is named (it went
    unmentioned: the arrays see only observed values)."""
    import pandas as pd

    rng = np.random.default_rng(0)
    n = 400
    X = rng.normal(size=(n, 2))
    y = X[:, 0] + rng.normal(size=n)
    g = pd.Categorical(rng.choice(["a", "b"], n), categories=["a", "b", "c"])
    with pytest.warns(UserWarning, match=r"categories \['c'\] of `group` have no rows"):
        res = group_learning_curves(
            LinearRegression(), X, y, g, sizes=[40, 80, 160], n_repeats=3, random_state=0
        )
    assert sorted(res.fits["group"]) == ["a", "b"]
    with pytest.warns(UserWarning, match=r"categories \['c'\] of `group_test` have no rows"):
        out = bias_variance_decomposition(
            LinearRegression(),
            X[:200],
            y[:200],
            X[200:],
            y[200:],
            g[200:],
            train_size=50,
            n_repeats=3,
            random_state=0,
        )
    assert sorted(out["group"]) == ["a", "b"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every category used: nothing to say
        group_learning_curves(
            LinearRegression(),
            X,
            y,
            g.remove_unused_categories(),
            sizes=[40, 80, 160],
            n_repeats=3,
            random_state=0,
        )


def test_a_curve_that_falls_to_zero_is_not_flagged():
    """A loss that falls like n^-0.5 to 0 (delta at its floor, beta well away from 0) is a
    learning curve like any other: no note; the same loss flat over the sizes is noted."""
    from bayesfair.frequentist.learning import LearningCurveResult

    n = np.array([50, 100, 200, 400, 800])
    curves = pd.DataFrame({"group": "a", "n": n, "repeat": 0, "loss": 2.0 * n**-0.5})
    fits = pd.DataFrame([{"group": "a", "delta": 0.0, "alpha": 2.0, "beta": 0.5}])
    assert LearningCurveResult(curves, fits).notes == []
    flat = fits.assign(alpha=0.4, beta=0.01)
    assert "the fit of a sits on a bound" in LearningCurveResult(curves, flat).notes[0]
