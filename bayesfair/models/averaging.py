"""Model averaging over fitted models of P(y|s): the paper's BMA, LOO stacking, pseudo-BMA."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .. import _arviz
from .._validation import SeedLike, check_seed
from ._design import Design, design_from
from .base import FairnessModel

__all__ = ["ModelAverage", "model_average"]

METHODS = ("bma", "stacking", "pseudo-bma", "bb-pseudo-bma")


class ModelAverage(FairnessModel):
    """A weighted mixture of fitted models; usable wherever a fitted model is.

    Parameters
    ----------
    models : list of FairnessModel, or dict name -> FairnessModel
        Two or more models fitted on the same table (a dict's names index the weights).
    method : {"bma", "stacking", "pseudo-bma", "bb-pseudo-bma"}
        See :func:`model_average`.
    draws : int, default 4000
        Draws of the mixture posterior.
    random_state : None, int, or numpy SeedSequence, Generator or RandomState, optional

    Attributes
    ----------
    weights_ : pandas.Series
        Weight of every model (index: model names).
    p_draws_ : numpy.ndarray, shape (1, draws, n_intersections)
        Draws from the mixture posterior (each model contributes draws in
        proportion to its weight).
    comparison_ : pandas.DataFrame or None
        ArviZ's LOO comparison table (stacking and pseudo-BMA).

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.models import DirichletMultinomial, ModelAverage, NaiveBayes
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> fits = [DirichletMultinomial(random_state=0).fit(data),
    ...         NaiveBayes(random_state=0).fit(data)]
    >>> ModelAverage(fits, "bma").fit().p_draws_.shape
    (1, 4000, 16)
    """

    name = "Ensemble"

    def __init__(
        self,
        models: Sequence[FairnessModel] | Mapping[str, FairnessModel],
        method: str = "bma",
        *,
        draws: int = 4000,
        random_state: SeedLike = None,
    ) -> None:
        super().__init__(method="map", draws=draws, random_state=random_state)
        self.models = models
        self.averaging = method

    def get_params(self, deep: bool = True) -> dict:
        """The constructor's arguments and their current values.

        Parameters
        ----------
        deep : bool, default True
            Accepted for scikit-learn's :func:`~sklearn.base.clone`; the fitted
            models are returned as given, never cloned.

        Returns
        -------
        dict
        """
        return {
            "models": self.models,
            "method": self.averaging,
            "draws": self.draws,
            "random_state": self.random_state,
        }

    def __sklearn_clone__(self) -> ModelAverage:
        # scikit-learn's clone would clone the models into unfitted copies; averaging
        # needs them fitted, so a clone shares them (it never changes them).
        return type(self)(**self.get_params())

    def set_params(self, **params) -> ModelAverage:
        """Set constructor arguments (as scikit-learn's); they take effect at the next fit.

        Parameters
        ----------
        **params
            ``models``, ``method``, ``draws`` or ``random_state``.

        Returns
        -------
        self
        """
        if "method" in params:
            params = dict(params)
            self.averaging = params.pop("method")
        return super().set_params(**params)

    def fit(self, data=None, role: str = "outcome") -> ModelAverage:
        """Compute the weights and the mixture (the models must be fitted already).

        Parameters
        ----------
        data : AuditData or Design, optional
            The table the models were fitted on. The models carry their data,
            so this is only checked: a different table (or ``role``) is a
            ValueError, since averaging does not refit the models.
        role : {"outcome", "decision"}
            The role of ``data`` to check against (used with ``data`` only).

        Returns
        -------
        self
        """
        names, models = _named_models(self.models)
        check_seed(self.random_state)
        if self.averaging not in METHODS:
            raise ValueError(f"`method` must be one of {METHODS}, got {self.averaging!r}")
        d = _common_design(models, data, role)
        names = names or unique_names(models)
        w = self._weights(models, names)
        self.weights_ = pd.Series(w, index=names, name="weight")
        rng = np.random.default_rng(self.random_state)
        counts = rng.multinomial(self.draws, w)
        parts = []
        for m, c in zip(models, counts, strict=True):
            flat = m.p_draws_.reshape(-1, d.n_groups)
            if c:
                parts.append(flat[rng.integers(0, len(flat), c)])
        self.p_draws_ = np.concatenate(parts)[None, :, :]
        self.design_ = d
        self.p_point_ = np.sum(
            [wi * np.nan_to_num(m.p_point_, nan=0.5) for wi, m in zip(w, models, strict=True)],
            axis=0,
        )
        self._predictive = np.sum(
            [wi * m.predict_proba() for wi, m in zip(w, models, strict=True)], axis=0
        )
        self.idata_ = _arviz.from_draws(
            {"p": self.p_draws_}, coords=d.coords(), dims={"p": ["intersection"]}
        )
        _arviz.add_binomial_groups(self.idata_, d.n, d.k, d.labels)
        self.warnings_, self.diagnostics_ = [], {}
        return self

    def _weights(self, models: list, names: list[str]) -> np.ndarray:
        """The models' weights, summing to 1; ``comparison_`` set for the LOO methods."""
        self.comparison_ = None
        if self.averaging == "bma":
            # Foulds et al. Section 4: P(M_k | D) proportional to prod_(y,s) P(y | s, M_k) with
            # the posterior predictive, under a uniform prior over models.
            ll = np.array([_predictive_loglik(m) for m in models])
            w = np.exp(ll - ll.max())
        else:
            for m in models:
                if m.p_draws_.shape[0] * m.p_draws_.shape[1] < 2:
                    raise ValueError(
                        f"{names[models.index(m)]} has one draw (MAP): LOO needs a posterior"
                    )
            method = {
                "stacking": "stacking",
                "pseudo-bma": "pseudo-BMA",
                "bb-pseudo-bma": "BB-pseudo-BMA",
            }[self.averaging]
            comp = _arviz.compare(dict(zip(names, (m.idata_ for m in models), strict=True)), method)
            self.comparison_ = comp
            w = comp.loc[names, "weight"].to_numpy(dtype=float)
        return w / w.sum()

    def predict_proba(self) -> np.ndarray:
        """The mixture's posterior predictive: the weighted mean of the models'.

        Returns
        -------
        numpy.ndarray, shape (n_intersections,)
        """
        self._check_fitted()
        return self._predictive


def _same_table(a: Design, b: Design) -> bool:
    return a.labels == b.labels and np.array_equal(a.n, b.n) and np.array_equal(a.k, b.k)


def _predictive_loglik(m: FairnessModel) -> float:
    d = m.design_
    p = np.clip(m.predict_proba(), 1e-12, 1 - 1e-12)
    return float(np.sum(d.k * np.log(p) + (d.n - d.k) * np.log1p(-p)))


def unique_names(models: Sequence[FairnessModel]) -> list[str]:
    names, seen = [], {}
    for m in models:
        base = f"{m.name}-{m.method}"
        seen[base] = seen.get(base, 0) + 1
        names.append(base if seen[base] == 1 else f"{base}#{seen[base]}")
    return names


def model_average(
    models: Sequence[FairnessModel] | Mapping[str, FairnessModel], method: str = "bma", **kwargs
) -> ModelAverage:
    """Average fitted models: ``"bma"`` (the paper's eq. 5 weights), ``"stacking"``,
    ``"pseudo-bma"`` or ``"bb-pseudo-bma"`` (LOO over intersections, through ArviZ).

    Note that LOO here leaves out one *intersection* at a time (the models see
    the aggregated table), which asks how well a model predicts an unseen
    group, not an unseen row.

    ``"bma"`` weighs each model by the posterior predictive likelihood of the table it
    was fitted on, which rewards fit and does not charge flexibility: with many
    intersections the saturated Dirichlet-multinomial takes all the weight even where a
    simpler model is the true one.  On 200,000 rows of 1,024 intersections drawn from an
    additive logit, "bma" gave the Dirichlet-multinomial weight 1.0 against logistic
    regression, where "stacking" gave logistic regression 0.97 and "pseudo-bma" 1.0.
    Prefer the LOO-based methods when the models differ in flexibility.

    Parameters
    ----------
    models : list of FairnessModel, or dict name -> FairnessModel
        Two or more models fitted on the same table and role; a dict's names index
        ``weights_`` (a list's models are named after their classes).
    method : {"bma", "stacking", "pseudo-bma", "bb-pseudo-bma"}, default "bma"
    **kwargs
        ``draws`` and ``random_state`` of :class:`ModelAverage`.

    Returns
    -------
    ModelAverage
        Fitted; ``weights_`` holds the weights.

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.models import DirichletMultinomial, NaiveBayes, model_average
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> fits = [DirichletMultinomial(random_state=0).fit(data),
    ...         NaiveBayes(random_state=0).fit(data)]
    >>> avg = model_average(fits, "bma")
    >>> round(float(avg.weights_.sum()), 6)
    1.0
    """
    return ModelAverage(models, method, **kwargs).fit()


def _named_models(given) -> tuple[list[str] | None, list]:
    """The models (fitted bayesfair models), with their names when given as a dict."""
    if isinstance(given, Mapping):  # name -> model: the weights carry the names
        names, models = [str(k) for k in given], list(given.values())
    elif isinstance(given, (str, pd.DataFrame, np.ndarray)) or not isinstance(given, Iterable):
        raise TypeError(
            "`models` must be a list of fitted bayesfair models (or a dict name -> model), "
            f"got {type(given).__name__}"
        )
    else:
        names, models = None, list(given)
    bad = [type(m).__name__ for m in models if not isinstance(m, FairnessModel)]
    if bad:
        raise TypeError(f"`models` must hold fitted bayesfair models only, got {bad}")
    return names, models


def _common_design(models: list, data, role: str) -> Design:
    """The table every model was fitted on (the same one, for the same role), checked
    against ``data`` when given: averaging does not refit."""
    if len(models) < 2:
        raise ValueError("model averaging needs at least two fitted models")
    for m in models:
        m._check_fitted()
    d = models[0].design_
    for m in models[1:]:
        if m.design_.role != d.role:
            raise ValueError(
                "all models must model the same role, got "
                f"{sorted({x.design_.role for x in models})}"
            )
        if not _same_table(m.design_, d):
            raise ValueError("all models must be fitted on the same table")
    if data is not None:
        given = data if isinstance(data, Design) else design_from(data, role)
        if given.role != d.role or not _same_table(given, d):
            raise ValueError(
                f"`data` (role {given.role!r}) is not the table the models were "
                f"fitted on (role {d.role!r}): model averaging does not refit its "
                "models; fit each model on the new data, or call fit() without data"
            )
    return d
