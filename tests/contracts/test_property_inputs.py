"""Property test over the public entry points: whatever frame a user brings (mixed types,
NaN and inf, empty and one-row groups, odd column names and values, one row or many), every
call either returns or raises a ValueError or TypeError with a message; never anything else
(a KeyError, an IndexError, numpy's or PyMC's internals)."""

from __future__ import annotations

import string
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bayesfair as bf
from bayesfair.report import Report

#: names and values a user's data may hold: spaces, slashes, dollars, markup, quotes,
#: formulas, non-ASCII, numbers and missing-value spellings
ODD_TEXT = st.sampled_from(
    [
        "a",
        "b",
        "race/ethnicity",
        "$50K-$75K",
        "$x^$",
        "<b>x</b>",
        "=1+1",
        "it's",
        'say "hi"',
        "é ü",
        "NA",
        "None",
        "",
        " ",
        "a, b",
        "1",
        "tab\tx",
    ]
)
CATEGORY = st.one_of(ODD_TEXT, st.integers(-3, 3), st.booleans(), st.none(), st.just(np.nan))
BINARY = st.one_of(
    st.sampled_from([0, 1]), st.just(np.nan), st.just(2), st.just("yes"), st.just(True)
)
SCORE = st.one_of(
    st.floats(0, 1), st.just(np.nan), st.just(np.inf), st.just(-0.5), st.just(1.5), st.just("x")
)
COLUMN_NAMES = st.lists(
    st.one_of(ODD_TEXT, st.text(string.ascii_letters + "/$ _-", min_size=1, max_size=8)),
    min_size=5,
    max_size=5,
    unique=True,
).filter(lambda names: all(n.strip() for n in names))


@st.composite
def frames(draw):
    names = draw(COLUMN_NAMES)
    clean = draw(st.booleans())  # half the frames are valid, so the calls get past validation
    if clean:
        # every value of both attributes present, groups of one row or many, the rates
        # sometimes degenerate (all 0 or all 1 in a group)
        rng = np.random.default_rng(draw(st.integers(0, 2**16)))
        g1 = draw(st.lists(ODD_TEXT.filter(bool), min_size=2, max_size=4, unique=True))
        g2 = draw(st.lists(st.integers(-3, 3), min_size=2, max_size=3, unique=True))
        n = draw(st.sampled_from([len(g1) * len(g2), 30, 200]))
        cells = [(u, v) for u in g1 for v in g2]
        idx = np.r_[np.arange(len(cells)), rng.integers(0, len(cells), n)][:n]
        skew = draw(st.sampled_from([0.0, 0.5, 1.0]))
        cols = [
            np.array([cells[i][0] for i in idx], dtype=object),
            np.array([cells[i][1] for i in idx]),
            (rng.random(n) < np.where(idx % 2, skew, 0.5)).astype(int),
            rng.random(n),
            rng.integers(0, 2, n),
        ]
    else:
        n = draw(st.sampled_from([0, 1, 2, 5, 30]))
        cols = [
            draw(st.lists(CATEGORY, min_size=n, max_size=n)),
            draw(st.lists(CATEGORY, min_size=n, max_size=n)),
            draw(st.lists(BINARY, min_size=n, max_size=n)),
            draw(st.lists(SCORE, min_size=n, max_size=n)),
            draw(st.lists(BINARY, min_size=n, max_size=n)),
        ]
    frame = pd.DataFrame(dict(zip(names, cols, strict=True)))
    return frame, names


def _calls(frame: pd.DataFrame, names: list[str]):
    """(what, call) of every entry point on this frame."""
    a, b, y, p, d = names
    data_box: dict = {}

    def audit_data():
        data_box["data"] = bf.AuditData(frame, [a, b], y, score=p, decision=d)
        return data_box["data"]

    def on_data(fn):
        def call():
            data = data_box.get("data")
            if data is None:
                return None  # AuditData refused the frame: nothing more to call
            return fn(data)

        return call

    def report(data):
        rep = bf.run_audit(data).report()
        return Report.to_html(rep)

    return [
        ("AuditData", audit_data),
        ("empirical_fairness", on_data(bf.empirical_fairness)),
        ("fairness_confidence_interval", on_data(bf.fairness_confidence_interval)),
        ("group_rates", on_data(lambda x: bf.group_rates(x, "fpr"))),
        (
            "intersectional_permutation_test",
            on_data(lambda x: bf.intersectional_permutation_test(x, "fpr", n_resamples=19)),
        ),
        ("group_auc", on_data(bf.group_auc)),
        ("run_audit+report", on_data(report)),
        (
            "from_counts",
            lambda: bf.AuditData.from_counts(
                bf.aggregate_counts(frame, [a, b], y, decision=d), [a, b]
            ),
        ),
        (
            "subset_scan",
            lambda: bf.subset_scan(frame, [a, b], frame[y], frame[p], n_restarts=2),
        ),
        (
            "disaggregated_evaluation",
            lambda: bf.disaggregated_evaluation(
                frame,
                [a, b],
                y,
                d,
                p,
                metrics=["fpr"],
                estimators=["standard", "james_stein"],
            ),
        ),
    ]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(frames())
def test_every_entry_point_returns_or_refuses_by_name(case):
    frame, names = case
    for what, call in _calls(frame, names):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                call()
            except (ValueError, TypeError) as err:
                assert str(err).strip(), f"{what}: {type(err).__name__} without a message"
            except Exception as err:
                pytest.fail(f"{what} raised {type(err).__name__}: {err}")
