"""Names and values pass through the models, plots and files whatever characters they hold:
a '/' in a column name (which PyMC and netCDF refuse in variable names), '$' in a value
(which matplotlib reads as mathtext), markup and quotes (which the HTML escapes)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from matplotlib import cbook

import bayesfair as bf
from bayesfair._names import safe_names
from bayesfair.models import HierarchicalLogisticRegression, LogisticRegression, design_from
from bayesfair.report import plot_group_rates


@pytest.fixture(scope="module")
def odd() -> bf.AuditData:
    rng = np.random.default_rng(0)
    n = 600
    df = pd.DataFrame(
        {
            "race/ethnicity": rng.choice(["a", "b", "c"], n),
            "income": rng.choice(["$50K-$75K", "$x^$", "<b>bold</b>"], n),
            "y": rng.integers(0, 2, n),
            "p": rng.random(n),
        }
    )
    return bf.AuditData(df, ["race/ethnicity", "income"], "y", score="p", threshold=0.5)


def test_safe_names_are_distinct_and_stable():
    names = ["race/ethnicity", "race_ethnicity", "a/b/c", "x:", "sex"]
    safe = safe_names(names)
    assert safe == {
        "race/ethnicity": "race_ethnicity_2",
        "race_ethnicity": "race_ethnicity",
        "a/b/c": "a_b_c",
        "x:": "x:_",
        "sex": "sex",
    }
    assert len(set(safe.values())) == len(names) and safe_names(names) == safe


@pytest.mark.bayesian
def test_models_take_a_column_with_a_slash(odd, tmp_path):
    lr = LogisticRegression(method="map", random_state=0).fit(odd)
    assert np.isfinite(lr.predict_proba()).all()
    hlr = HierarchicalLogisticRegression(method="map", random_state=0)
    model = hlr.build_model(design_from(odd))
    assert {"beta_race_ethnicity", "beta_income"} <= set(model.named_vars)
    assert "race_ethnicity_value" in model.coords


@pytest.mark.bayesian
def test_hierarchical_bayes_takes_a_column_with_a_slash(odd):
    from bayesfair.disaggregated import HierarchicalBayes
    from bayesfair.disaggregated.hierarchical import fit_hierarchical

    labels = pd.DataFrame({"race/ethnicity": ["a", "a", "b", "b"], "sex": ["F", "M"] * 2})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata, theta = fit_hierarchical(
            labels,
            ["fpr"],
            k=np.array([[3, 5, 2, 7]]),
            m=np.array([[10, 12, 9, 14]]),
            estimator=HierarchicalBayes(draws=20, tune=20, chains=1, main_effects="non-centred"),
            sizes=np.array([10, 12, 9, 14]),
        )
    assert "sigma_race_ethnicity" in idata.posterior and theta.shape == (20, 1, 4)


def test_dollars_are_drawn_as_written(odd):
    fig = plot_group_rates(odd)
    ax = fig.axes[0]
    fig.canvas.draw()  # "$x^$" as mathtext would raise here
    shown = [t.get_text() for t in ax.get_yticklabels()]
    assert any(r"\$50K-\$75K" in t for t in shown) and any(r"\$x^\$" in t for t in shown)
    # the escaped text is not mathtext: matplotlib draws it with the dollars, unescaped
    assert not any(cbook.is_math_text(t) for t in shown)


def test_the_report_of_odd_names_renders(odd):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        html = bf.run_audit(odd).report().to_html()
    assert "race/ethnicity" in html and "&lt;b&gt;bold&lt;/b&gt;" in html and "<b>bold" not in html
    assert "$x^$" in html


def test_gaussian_scan_warns_at_the_logit_clip():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.choice(["u", "v"], 200)})
    observed = rng.random(200)
    observed[:5] = 1.0
    with pytest.warns(UserWarning, match=r"5 of 200 rows have `observed` probability 0 or 1"):
        bf.subset_scan(df, ["a"], observed, np.full(200, 0.5), score_type="gaussian", n_restarts=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # strictly inside (0, 1): no warning
        bf.subset_scan(
            df,
            ["a"],
            np.clip(observed, 0.01, 0.99),
            np.full(200, 0.5),
            score_type="gaussian",
            n_restarts=2,
        )
