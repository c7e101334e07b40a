"""Held-out evaluation of models of P(y|s)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..data import AuditData
from .base import FairnessModel

__all__ = ["negative_cross_entropy"]


def negative_cross_entropy(
    model: FairnessModel | np.ndarray,
    test: AuditData,
    *,
    role: str = "outcome",
    estimate: str = "predictive",
) -> float:
    r"""Average negative cross-entropy per intersection on a held-out table (higher is better).

    .. math:: \frac{1}{|S|} \sum_{s \in S} \sum_y \hat P_{test}(y|s) \log P_{model}(y|s)

    over the test intersections ``S`` with rows: the metric of Foulds et al.
    Table 2.

    Parameters
    ----------
    model : FairnessModel or array
        A fitted model, or P(y = 1 | s) per intersection.
    test : AuditData
        Held-out data with the same protected attributes and levels.
    role : {"outcome", "decision"}
        Which of the test data's columns give the empirical ``P_test(y|s)``.
    estimate : {"predictive", "point"}
        The posterior predictive ("FB") or the point estimate ("PE").

    Returns
    -------
    float
        Negative; closer to 0 is better.

    Examples
    --------
    >>> from bayesfair import AuditData
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.models import DirichletMultinomial, negative_cross_entropy
    >>> ds = make_gaussian_threshold(n_rows=8000, random_state=0)
    >>> roles = dict(protected=list(ds.protected), outcome=ds.outcome)
    >>> train = AuditData(ds.frame[:4000], **roles)
    >>> test = AuditData(ds.frame[4000:], **roles, categories=train.categories)
    >>> fit = DirichletMultinomial(random_state=0).fit(train)
    >>> negative_cross_entropy(fit, test) < 0
    True
    """
    if not isinstance(test, AuditData):
        raise TypeError(
            f"`test` must be an AuditData of the held-out rows, got {type(test).__name__}"
        )
    if isinstance(model, FairnessModel):
        if estimate not in ("predictive", "point"):
            raise ValueError(f"`estimate` must be 'predictive' or 'point', got {estimate!r}")
        p1 = model.predict_proba() if estimate == "predictive" else model.p_point_
        labels = model.design_.labels
        test_labels = test.group_labels  # a property that rebuilds the labels: read once
        if labels != test_labels and sorted(labels) == sorted(test_labels):
            # the same intersections, enumerated in another order: pair them by label
            p1 = pd.Series(p1, index=labels)[test_labels].to_numpy()
        elif labels != test_labels:
            test_set, model_set = set(test_labels), set(labels)
            missing = [lab for lab in labels if lab not in test_set][:5]
            extra = [lab for lab in test_labels if lab not in model_set][:5]
            raise ValueError(
                f"the test data's intersections differ from the model's ({len(labels)} in the "
                f"model, {test.n_intersections} in the test data; only in the model: {missing}, "
                f"only in the test data: {extra}); build the test AuditData with "
                "categories=train.categories so that both enumerate the same intersections"
            )
    else:
        p1 = np.asarray(model, dtype=float)
        if p1.shape != (test.n_intersections,):
            raise ValueError(
                f"`model` must give one probability per intersection ({test.n_intersections})"
            )
    c = test.counts(role).astype(float)
    n = c.sum(axis=1)
    keep = n > 0
    pt = c[keep] / n[keep, None]
    pm = np.stack([1 - p1[keep], p1[keep]], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(pt > 0, pt * np.log(pm), 0.0)
    return float(terms.sum(axis=1).mean())
