"""Logistic models of P(y|s) on attribute indicators: LR, hierarchical LR, and a neural network."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _arviz
from .._sampling import quiet_pytensor
from .._validation import check_real
from ._design import Design
from ._fastlogp import MarginalLayout, logistic_nutpie_model
from ._laplace import EmpiricalBayesPoint, hlr_empirical_bayes
from .base import FairnessModel

__all__ = ["HierarchicalLogisticRegression", "LogisticRegression", "NeuralNetwork"]

EFFECTS = ("sum_to_zero", "one_hot")
PARAMETERIZATIONS = ("auto", "noncentered", "centered", "marginal")
POINT_ESTIMATES = ("empirical_bayes", "joint_map")


def _model_with_counts(design: Design):
    import pymc as pm

    model = pm.Model(coords=design.coords())
    with model:
        pm.Data("n", design.n, dims="intersection")
        pm.Data("k", design.k, dims="intersection")
    return model


def _information(design: Design) -> np.ndarray:
    """Fisher information of each intersection's log-odds, ``n p (1 - p)`` (smoothed)."""
    p = (design.k + 0.5) / (design.n + 1.0)
    return design.n * p * (1 - p)


def _observe(model, eta) -> None:
    import pymc as pm

    with model:
        pm.Deterministic("p", pm.math.sigmoid(eta), dims="intersection")
        pm.Binomial("y", n=model["n"], logit_p=eta, observed=model["k"], dims="intersection")


class LogisticRegression(FairnessModel):
    """Bayesian logistic regression on one indicator per attribute value.

    ``logit P(y=1|s) = c + sum_d beta_d[s_d]`` with ``c ~ Normal(mu, sigma)``.

    Parameters
    ----------
    mu, sigma : float
        Prior mean and scale of the coefficients.
    effects : {"sum_to_zero", "one_hot"}
        ``"one_hot"`` is the paper's parameterisation: ``beta_d[v] ~ Normal(mu,
        sigma)`` for every value, redundant with ``c`` and identified only by
        the prior, which makes NUTS trees long.  ``"sum_to_zero"`` (default)
        gives each attribute's effects a ``ZeroSumNormal(sigma)`` prior: the
        same linear predictor class, identified, and it samples cleanly.
    **kwargs
        Inference settings of :class:`~bayesfair.models.FairnessModel` (``method``,
        ``draws``, ``random_state``, ...).

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.models import LogisticRegression
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> LogisticRegression(method="map", random_state=0).fit(data).p_point_.shape
    (16,)
    """

    name = "LR"

    #: the constructor argument that sets ``sigma`` (for messages)
    _sigma_argument = "sigma"

    def __init__(
        self, mu: float = 0.0, sigma: float = 1.0, effects: str = "sum_to_zero", **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.mu = mu
        self.sigma = sigma
        self.effects = effects

    def _validate(self) -> None:
        super()._validate()
        if self.effects not in EFFECTS:
            raise ValueError(f"`effects` must be one of {EFFECTS}, got {self.effects!r}")
        check_real(self.mu, "mu")
        check_real(self.sigma, self._sigma_argument, sign="positive")

    def _linear(self, model, design: Design, sigma: float):
        import pymc as pm

        with model:
            eta = pm.Normal("c", self.mu, sigma)
            for d, a in enumerate(design.attributes):
                v = design.var(a)
                dim = f"{v}_value"
                if self.effects == "sum_to_zero":
                    beta = pm.ZeroSumNormal(f"beta_{v}", sigma=sigma, dims=dim)
                else:
                    beta = pm.Normal(f"beta_{v}", self.mu, sigma, dims=dim)
                eta = eta + beta[design.codes[d]]
        return eta

    def build_model(self, design: Design):
        """The PyMC model (see :meth:`FairnessModel.build_model`).

        Parameters
        ----------
        design : Design
            The counts.

        Returns
        -------
        pymc.Model
        """
        model = _model_with_counts(design)
        _observe(model, self._linear(model, design, self.sigma))
        return model

    def _closed_form_model(self, design: Design):
        return logistic_nutpie_model(design, mu=self.mu, sigma=self.sigma, effects=self.effects)


class HierarchicalLogisticRegression(LogisticRegression):
    """Hierarchical logistic regression (HLR), Foulds et al. Section 3.

    Generative process: ``sigma2 ~ Exponential(lam)``; ``beta_i, c ~ Normal(mu,
    sigma1)``; ``gamma_j ~ Normal(beta . s_j + c, sigma2)``; ``P(y=1|s_j) =
    logistic(gamma_j)``.  The intersection's log-odds deviate from a jointly
    fitted logistic regression by as much as its data justify.

    Parameters
    ----------
    mu, sigma1 : float, default 0 and 1
    lam : float, default 10
        Rate of the exponential prior on ``sigma2`` (prior mean 1/lam).
    effects : {"sum_to_zero", "one_hot"}
        See :class:`LogisticRegression`; default sum-to-zero.
    parameterization : {"auto", "noncentered", "centered", "marginal"}
        ``gamma_j = eta_j + sigma2 z_j`` with ``z_j ~ N(0, 1)``, or ``gamma_j ~
        N(eta_j, sigma2)``, or ``"marginal"``: the effects integrated out of the
        sampled density and drawn afterwards from their exact conditional
        distribution (see :class:`~bayesfair.models._fastlogp.MarginalLayout`; the
        same model, without the directions along which the effects and the
        deviations trade off).  ``"auto"`` (default) takes ``"marginal"`` for a
        single protected attribute, where every intersection's deviation is
        redundant with its value's effect (the non-centred fit diverged in 3 of 4
        seeds on COMPAS' race alone, the centred in 4 of 4), and otherwise centres
        when every non-empty intersection's data pin its log-odds down far more
        tightly than the prior scale of the deviations (``n p (1-p) > 100 lam^2``,
        e.g. millions of rows in few groups) and otherwise does not.
    point_estimate : {"empirical_bayes", "joint_map"}
        The point estimate ``p_point_`` ("O", and the fit of ``method="map"``); see
        Notes.
    target_accept : float, default 0.98
    **kwargs
        Inference settings of :class:`~bayesfair.models.FairnessModel` (``method``,
        ``draws``, ``chains``, ``random_state``, ...).

    Attributes
    ----------
    sigma2_point_ : float
        ``sigma2`` at the point estimate (empirical Bayes: the mode of its marginal
        posterior; 0 is the additive model), beside the fitted attributes of
        :class:`~bayesfair.models.FairnessModel`.

    Notes
    -----
    Defaults: sum-to-zero effects, automatic centring and
    ``target_accept=0.98`` were chosen for NUTS fits without divergences on Adult,
    COMPAS and millions of synthetic rows, at some cost in time (the measurements are
    in ``models/cards/hierarchical_logistic_regression.md``).  :meth:`paper`
    returns the settings of the authors' public code.

    With nutpie installed, NUTS (for this class and
    :class:`LogisticRegression`) evaluates the log density and its gradient
    written out in closed form (``bayesfair/models/_fastlogp.py``, tested
    against PyMC's): one compiled function for every data set, cached on disk
    by numba, instead of compiling each PyMC model once per process (``make bench``
    times both).

    The point estimate ``p_point_`` ("O", ``method="map"``) is by default the
    empirical-Bayes one of mixed models (lme4's Laplace fit, with the prior on
    ``sigma2``): ``sigma2`` at the mode of its marginal posterior, every effect and
    deviation integrated out by the Laplace approximation, then the mode of the rest
    given that ``sigma2`` (:func:`~bayesfair.models._laplace.hlr_empirical_bayes`,
    milliseconds for hundreds of intersections).  Given ``sigma2`` every
    parameterization is a linear map of the others, so this estimate is the same in
    all of them.  The joint mode (``point_estimate="joint_map"``, PyMC's ``find_MAP``
    in the model's coordinates) is not: in the centred ones the density grows without
    bound as ``sigma2 -> 0`` (the optimiser stops somewhere along that ridge), in the
    non-centred ones the mode keeps much of each intersection's noise (Foulds et al.
    found their HLR point estimate "too poor to be shown"; the model card compares
    the two on 625 intersections, and ``pytest tests/models/test_models.py -k
    hlr_point_estimate`` checks the empirical-Bayes estimate against the Laplace
    marginal of PyMC's own density in each parameterization).  Like any mode of a variance, it can
    sit at ``sigma2 = 0`` (the additive model) when the intersections show no
    heterogeneity beyond what the prior expects.

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.models import HierarchicalLogisticRegression
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> fit = HierarchicalLogisticRegression(draws=200, tune=200, chains=2, random_state=0)
    >>> fit.fit(data).p_draws_.shape  # NUTS: chains x draws x intersections
    (2, 200, 16)
    """

    name = "HLR"

    _sigma_argument = "sigma1"
    _fit_caches = (*FairnessModel._fit_caches, "_eb_point")

    def __init__(
        self,
        mu: float = 0.0,
        sigma1: float = 1.0,
        lam: float = 10.0,
        effects: str = "sum_to_zero",
        parameterization: str = "auto",
        *,
        point_estimate: str = "empirical_bayes",
        target_accept: float = 0.98,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            mu=mu, sigma=sigma1, effects=effects, target_accept=target_accept, **kwargs
        )
        self.sigma1 = sigma1
        self.lam = lam
        self.parameterization = parameterization
        self.point_estimate = point_estimate

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's arguments and their current values (``sigma1``, not ``sigma``).

        Parameters
        ----------
        deep : bool, default True
            Accepted for scikit-learn's :func:`~sklearn.base.clone`; changes nothing.

        Returns
        -------
        dict
        """
        params = super().get_params(deep)
        params.pop("sigma", None)
        return params

    @classmethod
    def paper(cls, **kwargs: Any) -> HierarchicalLogisticRegression:
        """The authors' public code: beta, c ~ Normal(0, 1) on one-hot indicators,
        sigma2 ~ Exponential(10), ADVI for 200,000 iterations with PyMC's default optimiser.

        Parameters
        ----------
        **kwargs
            Settings that replace the paper's (for example ``advi_iterations=20_000``).

        Returns
        -------
        HierarchicalLogisticRegression

        Examples
        --------
        >>> from bayesfair.models import HierarchicalLogisticRegression
        >>> HierarchicalLogisticRegression.paper().get_params()["advi_iterations"]
        200000
        """
        settings: dict[str, Any] = dict(
            mu=0.0,
            sigma1=1.0,
            lam=10.0,
            effects="one_hot",
            method="advi",
            advi_iterations=200_000,
            advi_optimizer="adagrad_window",
        )
        settings.update(kwargs)
        return cls(**settings)

    def _validate(self) -> None:
        self.sigma = self.sigma1
        super()._validate()
        if self.parameterization not in PARAMETERIZATIONS:
            raise ValueError(
                f"`parameterization` must be one of {PARAMETERIZATIONS}, "
                f"got {self.parameterization!r}"
            )
        check_real(self.lam, "lam", sign="positive")
        if self.point_estimate not in POINT_ESTIMATES:
            raise ValueError(
                f"`point_estimate` must be one of {POINT_ESTIMATES}, got {self.point_estimate!r}"
            )

    def _laplace_point(self) -> EmpiricalBayesPoint:
        """The empirical-Bayes point estimate of the fitted counts (sigma2, p), computed
        on first use."""
        if not hasattr(self, "design_"):
            raise ValueError(f"this {type(self).__name__} is not fitted yet")
        if "_eb_point" not in self.__dict__:
            self._eb_point = hlr_empirical_bayes(
                self.design_, mu=self.mu, sigma1=self.sigma1, lam=self.lam, effects=self.effects
            )
        return self._eb_point

    def _point_estimate(self) -> np.ndarray:
        if self.point_estimate == "joint_map":
            return super()._point_estimate()
        return self._laplace_point().p

    @property
    def sigma2_point_(self) -> float:
        """``sigma2`` (the spread of the intersections' deviations from the additive
        model, on the log-odds scale) at the point estimate ``p_point_``.

        The mode of its marginal posterior by default; its value at the joint mode with
        ``point_estimate="joint_map"``.  0 means the point estimate is the additive
        model: the intersections show no heterogeneity beyond what the prior expects.
        The posterior's draws are in ``idata_.posterior["sigma2"]``.
        """
        self._check_fitted()
        if self.point_estimate == "joint_map":
            with quiet_pytensor():
                point = self._map_objective().constrained(self._map_point())
            return float(point["sigma2"])
        return float(self._laplace_point().sigma2)

    def resolved_parameterization(self, design: Design) -> str:
        """The parameterisation ``"auto"`` picks for ``design`` (see the class docstring).

        Parameters
        ----------
        design : Design
            The counts (:func:`~bayesfair.models.design_from`).

        Returns
        -------
        str
            ``"marginal"``, ``"centered"`` or ``"noncentered"``.
        """
        if self.parameterization != "auto":
            return self.parameterization
        if len(design.attributes) == 1 and design.n_groups <= MarginalLayout.MAX_GROUPS:
            return "marginal"
        info = _information(design)[design.n > 0]
        return "centered" if info.min() > 100 * self.lam**2 else "noncentered"

    def cache_key(self, design: Design) -> tuple:
        """As :meth:`FairnessModel.cache_key`, with the parameterisation ``design`` gets.

        Parameters
        ----------
        design : Design
            The counts.

        Returns
        -------
        tuple
        """
        return (*super().cache_key(design), self.resolved_parameterization(design))

    def _marginal_layout(self, design: Design) -> MarginalLayout:
        """The marginal layout of ``design``, built once per fit (its singular value
        decomposition serves the PyMC model, the closed-form density and the draws of
        the effects)."""
        settings = dict(mu=self.mu, sigma=self.sigma1, effects=self.effects, lam=self.lam)
        cached = self.__dict__.get("_marginal")
        if cached is None or cached[0] is not design or cached[1] != settings:
            self._marginal = (design, settings, MarginalLayout(design, **settings))
        return self._marginal[2]

    def _closed_form_model(self, design: Design):
        if self.resolved_parameterization(design) == "marginal":
            return self._marginal_layout(design).nutpie_model(design.coords())
        return logistic_nutpie_model(
            design,
            mu=self.mu,
            sigma=self.sigma1,
            effects=self.effects,
            lam=self.lam,
            centered=self.resolved_parameterization(design) == "centered",
        )

    def build_model(self, design: Design):
        """The PyMC model (see :meth:`FairnessModel.build_model`).

        Parameters
        ----------
        design : Design
            The counts.

        Returns
        -------
        pymc.Model
        """
        import pymc as pm

        if self.resolved_parameterization(design) == "marginal":
            return self._build_marginal(design)
        model = _model_with_counts(design)
        eta = self._linear(model, design, self.sigma1)
        with model:
            sigma2 = pm.Exponential("sigma2", self.lam)
            if self.resolved_parameterization(design) == "noncentered":
                z = pm.Normal("z", 0.0, 1.0, dims="intersection")
                gamma = pm.Deterministic("gamma", eta + sigma2 * z, dims="intersection")
            else:
                gamma = pm.Normal("gamma", eta, sigma2, dims="intersection")
        _observe(model, gamma)
        return model

    def _build_marginal(self, design: Design):
        import pymc as pm
        import pytensor.tensor as pt

        lay = self._marginal_layout(design)
        model = _model_with_counts(design)
        for name, values in lay.coords().items():
            model.add_coord(name, values)
        with model:
            sigma2 = pm.Exponential("sigma2", self.lam)
            m = pm.Normal("m", 0.0, pt.sqrt(lay.prior_var + sigma2**2), dims="main_direction")
            gamma = lay.base + pt.dot(lay.main, m)
            if lay.n_interaction:
                w = pm.Normal("w", 0.0, 1.0, dims="interaction_direction")
                gamma = gamma + sigma2 * pt.dot(lay.interaction, w)
            gamma = pm.Deterministic("gamma", gamma, dims="intersection")
        _observe(model, gamma)
        return model

    def _fit_pymc(self, design: Design) -> None:
        super()._fit_pymc(design)
        post = self.idata_.posterior
        if self.resolved_parameterization(design) != "marginal" or "gamma" not in post:
            return
        # the effects and z, drawn given each draw of gamma and sigma2 (after the
        # diagnostics, which judge the sampled values m, w and sigma2)
        rng = np.random.default_rng([self._seed(), 3])
        drawn = self._marginal_layout(design).recover(
            post["gamma"].to_numpy(), post["sigma2"].to_numpy(), rng
        )
        _arviz.add_variables(self.idata_, "posterior", drawn, design.coords())


class NeuralNetwork(FairnessModel):
    """Bayesian neural network on one-hot attributes (the paper: 3 hidden layers of 10 ReLU).

    All weights and biases have ``Normal(0, sigma)`` priors.  Its posterior is
    multimodal (hidden units can be permuted), so NUTS chains need not mix:
    the fit reports that through R-hat; ADVI is the paper's choice.

    Parameters
    ----------
    hidden : tuple of int, default (10, 10, 10)
        Widths of the hidden ReLU layers.
    sigma : float, default 1
        Prior scale of every weight and bias.
    **kwargs
        Inference settings of :class:`~bayesfair.models.FairnessModel` (``method``,
        ``advi_iterations``, ``random_state``, ...).

    Examples
    --------
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.models import NeuralNetwork
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> fit = NeuralNetwork(hidden=(4,), method="map", random_state=0).fit(data)
    >>> bool(((fit.p_point_ > 0) & (fit.p_point_ < 1)).all())
    True
    """

    name = "DNN"
    #: the MAP starts from zero weights and from 10 random points (see ``_MapObjective.solve``)
    _map_restarts = 10

    @property
    def _start_jitter(self) -> float:
        return 0.5 * float(self.sigma)

    def __init__(self, hidden: tuple[int, ...] = (10, 10, 10), sigma: float = 1.0, **kwargs: Any):
        super().__init__(**kwargs)
        self.hidden = hidden
        self.sigma = sigma

    def _validate(self) -> None:
        super()._validate()
        ok = isinstance(self.hidden, (tuple, list)) and len(self.hidden) > 0
        if not ok or any(
            isinstance(h, bool) or not isinstance(h, (int, np.integer)) or h < 1
            for h in self.hidden
        ):
            raise ValueError(
                f"`hidden` must be a tuple of positive integer layer widths, got {self.hidden!r}"
            )
        check_real(self.sigma, "sigma", sign="positive")

    def build_model(self, design: Design):
        """The PyMC model (see :meth:`FairnessModel.build_model`).

        Parameters
        ----------
        design : Design
            The counts.

        Returns
        -------
        pymc.Model
        """
        import pymc as pm
        import pytensor.tensor as pt

        model = _model_with_counts(design)
        x = design.one_hot()
        with model:
            h = pt.as_tensor_variable(x)
            width = x.shape[1]
            for i, units in enumerate(self.hidden):
                w = pm.Normal(f"w{i}", 0.0, self.sigma, shape=(width, int(units)))
                b = pm.Normal(f"b{i}", 0.0, self.sigma, shape=(int(units),))
                h = pt.maximum(0.0, pt.dot(h, w) + b)
                width = int(units)
            w_out = pm.Normal("w_out", 0.0, self.sigma, shape=(width,))
            b_out = pm.Normal("b_out", 0.0, self.sigma)
            eta = pt.dot(h, w_out) + b_out
        _observe(model, eta)
        return model
