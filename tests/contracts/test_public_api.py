"""The public API: everything in ``bayesfair.__all__`` exists, and the entry points of
every capability are reachable from the top level."""

import pytest

import bayesfair as bf
from bayesfair.disaggregated import StructuredRegression


def test_all_names_exist_and_are_documented():
    for name in bf.__all__:
        obj = getattr(bf, name)
        if callable(obj) and name != "__version__":
            assert obj.__doc__, f"{name} has no docstring"


def test_entry_points_of_every_capability_are_top_level():
    for name in (
        "AuditData",
        "run_audit",
        "empirical_fairness",
        "HierarchicalLogisticRegression",
        "posterior_fairness",
        "model_average",
        "disaggregated_evaluation",
        "conditional_bias_scan",
        "posterior_bias_scan",
        "permutation_test",
        "metric_permutation_test",
        "intersectional_permutation_test",
        "discrimination_test",
        "group_learning_curves",
    ):
        assert name in bf.__all__, name
    assert len(set(bf.__all__)) == len(bf.__all__), "duplicate names in __all__"


def test_result_objects_print_short():
    """A result's repr names its statistic and p-value and summarises its arrays and
    tables by shape (as scipy.stats' results do), instead of printing 9,999 null draws."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"g": rng.choice(["a", "b"], 300), "y": rng.integers(0, 2, 300)})
    df["d"] = rng.integers(0, 2, 300)
    data = bf.AuditData(df, "g", "y", decision="d")
    res = bf.permutation_test(data, "fnr", n_resamples=999, random_state=0)
    text = repr(res)
    assert len(text) < 500
    assert f"pvalue={res.pvalue:.6g}" in text
    assert "null_distribution=<array shape=(999,)>" in text
    assert "estimates=<DataFrame 2 rows x 4 columns>" in text
    est = bf.empirical_fairness(data, pseudo_count=0)
    assert f"epsilon={est.epsilon:.6g}" in repr(est) and "pseudo_count=0.0" in repr(est)
    audit = bf.run_audit(data)
    assert repr(audit).startswith("AuditResult(data=<AuditData>") and len(repr(audit)) < 500


@pytest.mark.bayesian
def test_random_state_is_taken_alike_everywhere():
    """Every entry point with ``random_state`` takes None, a non-negative int, a numpy
    SeedSequence, Generator or RandomState (as scipy.stats does); an int and a
    SeedSequence of that int give the same result, and the same SeedSequence used twice
    gives it twice (it is not consumed); anything else is an error naming the argument."""
    import numpy as np
    import pandas as pd
    import pytest
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(1)
    n = 600
    df = pd.DataFrame(
        {
            "g": rng.choice(["a", "b"], n),
            "h": rng.choice(["u", "v", "w"], n),
            "y": rng.integers(0, 2, n),
            "d": rng.integers(0, 2, n),
            "score": rng.uniform(0.05, 0.95, n),
        }
    )
    data = bf.AuditData(df, ["g", "h"], "y", decision="d", score="score")
    y, g = df["y"].to_numpy(), df["g"].to_numpy()
    edf = bf.DirichletMultinomial(draws=50, random_state=0).fit(data)
    dec = bf.DirichletMultinomial(draws=80, random_state=0).fit(data, role="decision")
    calls = {
        "permutation_test": lambda rs: (
            bf.permutation_test(
                data, "fpr", by="g", n_resamples=99, random_state=rs
            ).null_distribution
        ),
        "intersectional_permutation_test": lambda rs: _null_and_pairs(
            bf.intersectional_permutation_test(data, n_resamples=300, random_state=rs)
        ),
        "auc_permutation_test": lambda rs: (
            bf.auc_permutation_test(data, by="g", n_resamples=99, random_state=rs).null_distribution
        ),
        "metric_permutation_test": lambda rs: (
            bf.metric_permutation_test(
                y,
                g,
                lambda v: float(np.mean(v)),
                n_resamples=30,
                n_variance_resamples=10,
                random_state=rs,
            ).null_distribution
        ),
        "subset_scan": lambda rs: (
            bf.subset_scan(df, ["g", "h"], "y", df["score"], n_restarts=3, random_state=rs).score
        ),
        "posterior_fairness": lambda rs: bf.posterior_fairness(edf, dec, random_state=rs).draws[
            "df_amplification"
        ],
        "DirichletMultinomial": lambda rs: (
            bf.DirichletMultinomial(draws=20, random_state=rs).fit(data).p_draws_
        ),
        "group_learning_curves": lambda rs: bf.group_learning_curves(
            LinearRegression(),
            df[["score"]].to_numpy(),
            y,
            g,
            sizes=[50, 100, 200],
            n_repeats=2,
            random_state=rs,
        ).curves["loss"],
    }
    for name, call in calls.items():
        first = np.asarray(call(7))
        seq = np.random.SeedSequence(7)
        np.testing.assert_array_equal(np.asarray(call(seq)), first, err_msg=name)
        np.testing.assert_array_equal(np.asarray(call(seq)), first, err_msg=name)
        for ok in (None, np.random.default_rng(7), np.random.RandomState(7), np.int64(7)):
            call(ok)
        for bad in ("7", 7.0, True):
            with pytest.raises(TypeError, match="`random_state` must be None, a non-negative"):
                call(bad)
        with pytest.raises(ValueError, match="`random_state` must be a non-negative int"):
            call(-1)


def _null_and_pairs(res):
    import numpy as np

    return np.concatenate([res.null_distribution, res.pairwise.select_dtypes("number").stack()])


def test_switches_must_be_true_or_false():
    """A True/False argument given anything else is refused with its name ('no' was taken
    as True and None as False; 'x' failed in numpy for include_empty)."""
    import numpy as np
    import pandas as pd
    import pytest

    from bayesfair.frequentist import correlation_permutation_test

    rng = np.random.default_rng(0)
    n = 200
    df = pd.DataFrame(
        {
            "g": rng.choice(["a", "b"], n),
            "y": rng.integers(0, 2, n),
            "d": rng.integers(0, 2, n),
            "score": rng.uniform(0.05, 0.95, n),
        }
    )
    data = bf.AuditData(df, "g", "y", decision="d", score="score")
    y, g = df["y"].to_numpy(), df["g"].to_numpy()
    calls = {
        "studentize": [
            lambda v: bf.permutation_test(data, "fpr", n_resamples=9, studentize=v),
            lambda v: bf.auc_permutation_test(data, n_resamples=9, studentize=v),
            lambda v: bf.metric_permutation_test(y, g, n_resamples=9, studentize=v),
            lambda v: correlation_permutation_test(y, df["score"], n_resamples=9, studentize=v),
        ],
        "include_empty": [lambda v: bf.empirical_fairness(data, pseudo_count=1.0, include_empty=v)],
        "interactions": [lambda v: StructuredRegression(interactions=v)],
        "outcome_rates": [lambda v: StructuredRegression(outcome_rates=v)],
    }
    for name, fns in calls.items():
        for fn in fns:
            for bad in ("no", None, 1):
                with pytest.raises(TypeError, match=f"`{name}` must be True or False"):
                    fn(bad)
            fn(np.True_)  # numpy's bool is a bool


def test_pandas_inputs_with_different_indexes_are_refused():
    """Two pandas inputs that should describe the same rows but carry different indexes
    (one taken from a shuffled frame) were paired by position, silently mismatching rows;
    they are refused with both names. Aligned Series and numpy arrays are taken."""
    import numpy as np
    import pandas as pd
    import pytest
    from sklearn.linear_model import LinearRegression

    from bayesfair.frequentist import bias_variance_decomposition, correlation_permutation_test

    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame({"g": rng.choice(["a", "b"], n), "x": rng.normal(size=n)})
    df["y"] = df["x"] + rng.normal(size=n)
    df["l"] = rng.integers(0, 2, n)
    df["a"] = rng.choice(["p", "q"], n)
    df["p"] = rng.uniform(0.1, 0.9, n)
    df["o"] = (rng.random(n) < df["p"]).astype(float)
    sh = df.sample(frac=1, random_state=1)
    lin = LinearRegression()
    refused = {
        ("values", "group"): lambda: bf.metric_permutation_test(df["y"], sh["g"], n_resamples=9),
        ("loss", "group"): lambda: bf.discrimination_test(df["l"], sh["g"]),
        ("loss_a", "loss_b"): lambda: bf.compare_discrimination(df["l"], sh["l"], df["g"]),
        ("x", "error"): lambda: correlation_permutation_test(df["x"], sh["y"], n_resamples=9),
        ("X", "y"): lambda: bf.group_learning_curves(
            lin, df[["x"]], sh["y"], df["g"], sizes=[20, 40, 80], n_repeats=2
        ),
        ("X_test", "y_test"): lambda: bias_variance_decomposition(
            lin, df[["x"]], df["y"], df[["x"]], sh["y"], df["g"], n_repeats=2
        ),
        ("data", "expected"): lambda: bf.subset_scan(df, ["a"], "o", sh["p"], n_restarts=2),
    }
    for (first, second), call in refused.items():
        with pytest.raises(ValueError, match=f"`{first}` and `{second}` are pandas objects"):
            call()
    bf.metric_permutation_test(sh["y"], sh["g"], n_resamples=9)  # aligned: taken
    bf.subset_scan(df, ["a"], "o", sh["p"].to_numpy(), n_restarts=2)  # an array: by position
