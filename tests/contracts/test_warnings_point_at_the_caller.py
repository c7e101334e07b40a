"""A warning of the package names the line of the user's code that made the call (as
pandas' do), not a line of the package, whichever public function and how many of the
package's layers it went through."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

import bayesfair as bf


def _data() -> bf.AuditData:
    """Three sexes x two ages, one intersection without rows and one whose rows are all
    labelled 1 (its false negative rate is defined, its false positive rate is not)."""
    rng = np.random.default_rng(0)
    sex = rng.choice(["f", "m"], 400)
    age = rng.choice(["old", "young"], 400)
    frame = pd.DataFrame({"sex": sex, "age": age, "y": rng.integers(0, 2, 400)})
    frame["d"] = rng.integers(0, 2, 400)
    frame = frame[~((frame.sex == "m") & (frame.age == "old"))]  # an empty intersection
    frame.loc[(frame.sex == "f") & (frame.age == "old"), "y"] = 1
    return bf.AuditData(
        frame,
        ["sex", "age"],
        "y",
        decision="d",
        categories={"sex": ["f", "m", "x"], "age": ["old", "young"]},
    )


def test_each_warning_points_at_the_line_that_called():
    data = _data()
    calls = {
        "fairness_confidence_interval": lambda: bf.fairness_confidence_interval(data),
        "empirical_fairness": lambda: bf.empirical_fairness(data),
        "intersectional_permutation_test": lambda: bf.intersectional_permutation_test(
            data, "fpr", n_resamples=19, random_state=0
        ),
    }
    for name, call in calls.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        ours = [w for w in caught if issubclass(w.category, UserWarning)]
        assert ours, f"{name} did not warn"
        for w in ours:
            assert w.filename == __file__, (name, w.filename, str(w.message))
