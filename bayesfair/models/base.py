"""The base class of the Bayesian models of P(y|s): configuration, fit (NUTS, ADVI or MAP),
diagnostics and summaries. The sampler back-end is :mod:`bayesfair._sampling`, the MAP
objective :mod:`bayesfair.models._map`."""

from __future__ import annotations

import logging
import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import gammaln, xlog1py, xlogy
from scipy.stats import binom

from .. import _arviz
from .._sampling import SamplerWarning, _have_nutpie, quiet_pytensor, sample_nuts
from .._validation import SeedLike, check_count, check_open_probability, check_seed
from .._vocabulary import LEVEL, interval_columns, renamed_arguments
from .._warning_location import user_stacklevel
from ..data import AuditData, as_audit_data
from ._design import Design, design_from
from ._map import _MAP_CACHE, _MapObjective

__all__ = ["FairnessModel", "binomial_loglik"]

METHODS = ("nuts", "advi", "map")
ADVI_OPTIMIZERS = ("adam", "adagrad_window")
ADVI_STARTS = ("auto", "initial", "map", "best")
#: standard deviation of every variational factor of an ADVI run started at the MAP
ADVI_MAP_START_SIGMA = 0.1
_NUTPIE_CACHE: dict[tuple, Any] = {}


def _final_loss(loss: np.ndarray) -> float:
    """An ADVI run's final loss: the mean over its last tenth of iterations."""
    return float(loss[-max(1, len(loss) // 10) :].mean())


def binomial_loglik(p: np.ndarray, design: Design) -> np.ndarray:
    """Binomial log-likelihood of every intersection's counts, per draw of P(y=1|s).

    scipy's ``binom.logpmf`` by its own formula, with the log binomial coefficient
    computed once per intersection instead of once per draw and intersection (which
    took three quarters of a Dirichlet fit of 3,456 intersections x 4,000 draws).
    """
    k, n = np.asarray(design.k, dtype=np.float64), np.asarray(design.n, dtype=np.float64)
    combiln = gammaln(n + 1) - (gammaln(k + 1) + gammaln(n - k + 1))
    p = np.clip(p, 1e-300, 1 - 1e-16)
    return combiln + xlogy(k, p) + xlog1py(n - k, -p)


class FairnessModel:
    """Base of every model of P(y = 1 | s) fitted on the per-intersection table.

    Subclasses set their hyperparameters in ``__init__`` and build a PyMC
    model in :meth:`build_model`; conjugate models override :meth:`_fit_exact`.

    Parameters
    ----------
    method : {"nuts", "advi", "map"}
        Full Bayes by NUTS (nutpie when installed, else PyMC's sampler), full
        Bayes by ADVI (the paper's choice), or the MAP point estimate ("PE").
    draws, tune, chains : int
        NUTS settings; ``draws`` is also the number of ADVI posterior draws.
    target_accept : float
    advi_iterations : int
    advi_optimizer : {"adam", "adagrad_window"}
        Stochastic optimiser of the ADVI objective: Adam with learning rate 0.01
        (default), or PyMC's own default, windowed Adagrad with learning rate 0.001,
        which the authors' PyMC3 code used.  The latter converges slowly: after 30,000
        iterations the loss of a logistic regression on Adult is still falling, and
        the paper's neural network stays at a loss seven times Adam's.  A loss still
        falling over the last tenth of the iterations raises a ``SamplerWarning``.
    advi_start : {"auto", "initial", "map", "best"}
        Where ADVI starts: PyMC's initial point (every variational factor at the
        model's initial value with standard deviation 0.69), the MAP (standard
        deviation 0.1), or both, keeping the run whose final loss (negative ELBO,
        averaged over the last tenth of the iterations) is lower.  ``"auto"`` is
        ``"best"`` for models whose MAP needs random restarts (the neural network)
        and ``"initial"`` otherwise; ``"best"`` doubles the ADVI time.  From PyMC's
        initial point mean-field ADVI can stop at a local optimum where the network
        predicts one rate for every intersection (COMPAS: loss 193.9, against 132.7
        from the MAP, notebook 02; ``models/cards/neural_network.md``).
    sampler : {"auto", "nutpie", "pymc"}
    random_state : None, int, or numpy SeedSequence, Generator or RandomState, optional

    Attributes
    ----------
    design_ : Design
        The counts the model was fitted on.
    idata_ : arviz.InferenceData
        Posterior (with ``p`` of dims (chain, draw, intersection)) and the
        binomial log-likelihood of each intersection.
    p_draws_ : numpy.ndarray, shape (chain, draw, n_intersections)
        Draws of P(y = 1 | s); one draw for ``method="map"``.
    p_point_ : numpy.ndarray, shape (n_intersections,)
        The point estimate ("PE", the paper's "O"): MAP (HLR: empirical Bayes), or
        counts for conjugate models.
    diagnostics_ : dict
        Divergences, largest R-hat, smallest ESS (NUTS); the final ADVI loss and its
        fall over the last tenth of the iterations (ADVI); with ``advi_start="best"``
        also each start's final loss.
    advi_start_ : {"initial", "map"}
        Where the kept ADVI run started (ADVI only).
    warnings_ : list of str

    Examples
    --------
    A model of your own needs only :meth:`build_model`; fitting, the three estimates of
    :func:`~bayesfair.models.posterior_fairness`, model averaging and the report come
    with the base class.  Here every intersection shares one rate (complete pooling):

    >>> import pymc as pm
    >>> from bayesfair.datasets import make_gaussian_threshold
    >>> from bayesfair.models import FairnessModel
    >>> class Pooled(FairnessModel):
    ...     name = "pooled"
    ...     def build_model(self, design):
    ...         with pm.Model(coords=design.coords()) as model:
    ...             n = pm.Data("n", design.n, dims="intersection")
    ...             k = pm.Data("k", design.k, dims="intersection")
    ...             rate = pm.Beta("rate", 1.0, 1.0)
    ...             p = pm.Deterministic("p", rate * pm.math.ones_like(n), dims="intersection")
    ...             pm.Binomial("y", n=n, p=p, observed=k, dims="intersection")
    ...         return model
    >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
    >>> fit = Pooled(method="map").fit(data)
    >>> float(fit.p_point_.min()) == float(fit.p_point_.max())
    True
    """

    name = "model"
    #: whether :meth:`fit` draws directly (no sampler: conjugate and nested-Laplace models)
    exact = False
    #: the ``method`` of a model that draws directly
    direct_method = "exact"

    @renamed_arguments(random_seed="random_state")
    def __init__(
        self,
        *,
        method: str = "nuts",
        draws: int = 1000,
        tune: int = 1000,
        chains: int = 4,
        target_accept: float = 0.9,
        advi_iterations: int = 30_000,
        advi_optimizer: str = "adam",
        advi_start: str = "auto",
        sampler: str = "auto",
        random_state: SeedLike = None,
    ) -> None:
        self.method = method
        self.draws = draws
        self.tune = tune
        self.chains = chains
        self.target_accept = target_accept
        self.advi_iterations = advi_iterations
        self.advi_optimizer = advi_optimizer
        self.advi_start = advi_start
        self.sampler = sampler
        self.random_state = random_state

    def _seed_source(self) -> SeedLike:
        return self.random_state

    # ------------------------------------------------------------------ configuration
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's arguments and their current values (as scikit-learn's).

        Parameters
        ----------
        deep : bool, default True
            Accepted for scikit-learn's :func:`~sklearn.base.clone` and model
            selection; these models hold no sub-estimators, so it changes nothing.

        Returns
        -------
        dict
        """
        import inspect

        # The arguments the class's constructor accepts: its own, and its parents' only
        # as far as each constructor passes ``**kwargs`` on (the conjugate models fix
        # ``method`` and ``tune`` and do not take them).
        names: list[str] = []
        for cls in type(self).__mro__:
            if cls is object or "__init__" not in vars(cls):
                continue
            params = inspect.signature(cls.__init__).parameters.values()
            names += [p.name for p in params if p.name != "self" and p.kind != p.VAR_KEYWORD]
            if not any(p.kind == p.VAR_KEYWORD for p in params):
                break
        return {n: getattr(self, n) for n in dict.fromkeys(names)}

    def set_params(self, **params: Any) -> FairnessModel:
        """Set constructor arguments (as scikit-learn's); takes effect at the next :meth:`fit`.

        Parameters
        ----------
        **params
            Argument names of the constructor and their new values.

        Returns
        -------
        self
        """
        valid = self.get_params()
        for key, value in params.items():
            if key not in valid:
                raise ValueError(
                    f"{type(self).__name__} has no argument {key!r}; its arguments are "
                    f"{sorted(valid)}"
                )
            setattr(self, key, value)
        return self

    def __getstate__(self) -> dict[str, Any]:
        # The PyMC model holds compiled functions that do not pickle; it is rebuilt from
        # ``design_`` when it is needed again (only for a MAP not computed before pickling).
        state = self.__dict__.copy()
        state.pop("_model", None)
        return state

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def _validate(self) -> None:
        allowed = METHODS if not self.exact else (*METHODS, self.direct_method)
        if self.method not in allowed:
            raise ValueError(f"`method` must be one of {allowed}, got {self.method!r}")
        for arg in ("draws", "chains", "advi_iterations"):
            check_count(getattr(self, arg), arg)
        if self.advi_optimizer not in ADVI_OPTIMIZERS:
            raise ValueError(
                f"`advi_optimizer` must be one of {ADVI_OPTIMIZERS}, got {self.advi_optimizer!r}"
            )
        if self.advi_start not in ADVI_STARTS:
            raise ValueError(f"`advi_start` must be one of {ADVI_STARTS}, got {self.advi_start!r}")
        check_count(self.tune, "tune", minimum=0)
        if self.method == "nuts" and self.tune < 1:
            raise ValueError(
                "`tune` must be a positive integer for NUTS, which adapts its step size and "
                f"mass matrix while tuning (nutpie panics without), got {self.tune!r}"
            )
        check_open_probability(self.target_accept, "target_accept")
        check_seed(self._seed_source())
        if self.sampler not in ("auto", "nutpie", "pymc"):
            raise ValueError(f"`sampler` must be 'auto', 'nutpie' or 'pymc', got {self.sampler!r}")
        if self.sampler == "nutpie" and not _have_nutpie():
            raise ValueError("sampler='nutpie' needs nutpie: pip install 'bayesfair[fast]'")

    #: random restarts of the MAP and the scale of their jitter (0 for models whose
    #: log posterior is concave in the unconstrained values: one start suffices)
    _map_restarts: int = 0
    _start_jitter: float = 0.0

    # ------------------------------------------------------------------ to implement
    def build_model(self, design: Design):
        """Return a ``pymc.Model`` with ``pm.Data`` ``n`` and ``k``, Deterministic ``p``
        (dims ``intersection``) and observed Binomial ``y``.

        Parameters
        ----------
        design : Design
            The counts (:func:`~bayesfair.models.design_from`).

        Returns
        -------
        pymc.Model
        """
        raise NotImplementedError

    def _closed_form_model(self, design: Design):
        """A nutpie model of the log density and gradient written out in closed form
        (:mod:`bayesfair._nutpie`), or None to let nutpie compile the PyMC model."""
        return None

    def cache_key(self, design: Design) -> tuple:
        """What determines the compiled model apart from the data values (the attribute
        levels fix both the shapes and the coords that the sampler writes into ``idata_``).

        Parameters
        ----------
        design : Design
            The counts.

        Returns
        -------
        tuple
            Hashable; fits with equal keys share one compiled sampler.
        """
        levels = tuple((a, tuple(map(str, v))) for a, v in design.categories.items())
        return (type(self).__name__, levels, tuple(sorted(self._hyper().items())))

    def _hyper(self) -> dict[str, Any]:
        base = FairnessModel.__init__.__code__.co_varnames
        return {k: v for k, v in self.get_params().items() if k not in base}

    # ------------------------------------------------------------------ fitting
    # attributes computed on first use from a fit, which a refit must drop
    _fit_caches: tuple[str, ...] = ("_map", "_p_point", "advi_start_")

    @renamed_arguments(target="role")
    def fit(self, data: AuditData | Design, role: str = "outcome", **roles: Any) -> FairnessModel:
        """Fit the model to the table of ``data``.

        Parameters
        ----------
        data : AuditData, DataFrame or Design
            The audited data (only its per-intersection counts are used).
        role : {"outcome", "decision"}
            Model the true labels or the audited mechanism's decisions.
        **roles
            With a DataFrame as ``data``: its columns' roles, as
            :class:`~bayesfair.AuditData` takes them (``protected=``, ``outcome=``, ...).

        Returns
        -------
        self
            Fitted: ``idata_``, ``p_draws_``, ``p_point_``, ``diagnostics_``.
        """
        self._validate()
        if not isinstance(data, Design):
            data = design_from(as_audit_data(data, roles), role)
        design = data
        self.design_ = design
        self.warnings_: list[str] = []
        self.diagnostics_: dict[str, float] = {}
        # a refit must not keep the previous fit's point estimate (computed on first use)
        for stale in self._fit_caches:
            self.__dict__.pop(stale, None)
        if self.exact:
            self._fit_exact(design)
        else:
            self._fit_pymc(design)
        self.p_draws_ = _arviz.posterior_array(self.idata_, "p")
        _arviz.add_binomial_groups(self.idata_, design.n, design.k, design.labels)
        return self

    def _seed(self) -> int:
        return int(np.random.default_rng(self._seed_source()).integers(2**31 - 1))

    def _fit_pymc(self, design: Design) -> None:
        model = self.build_model(design)
        seed = self._seed()
        self._model = model
        with quiet_pytensor():
            if self.method == "map":
                idata = _arviz.from_draws(
                    {"p": self.p_point_[None, None, :]},
                    coords=design.coords(),
                    dims={"p": ["intersection"]},
                )
            elif self.method == "advi":
                idata = self._advi(model, seed)
            else:
                idata = self._nuts(model, design, seed)
        self.idata_ = idata
        p = _arviz.posterior_array(idata, "p")
        ll = binomial_loglik(p, design)
        _arviz.add_group(
            idata,
            "log_likelihood",
            {"y": ll},
            coords={"intersection": design.labels},
            dims={"y": ["intersection"]},
        )
        if self.method == "nuts":
            self._check_diagnostics(idata)

    def _advi(self, model, seed: int):
        """ADVI from the start(s) ``advi_start`` names; the run with the lowest final loss
        gives the posterior draws."""
        import pymc as pm

        start = self.advi_start
        if start == "auto":
            start = "best" if self._map_restarts else "initial"
        labels = ["initial", "map"] if start == "best" else [start]
        # PyMC logs "Finished [100%]: Average Loss = ..." at INFO on every fit; the
        # final loss is in ``diagnostics_`` instead, and a loss still falling warns
        vi_log = logging.getLogger("pymc.variational.inference")
        vi_level = vi_log.level
        vi_log.setLevel(logging.WARNING)
        runs = {}
        try:
            for label in labels:
                kwargs = {}
                if label == "map":
                    point = self._map_point()
                    kwargs = {
                        "start": self._map_objective().constrained(point),
                        "start_sigma": {
                            name: np.full(np.size(v), ADVI_MAP_START_SIGMA)
                            for name, v in point.items()
                        },
                    }
                optimizer = (
                    pm.adam(learning_rate=0.01)
                    if self.advi_optimizer == "adam"
                    else pm.adagrad_window(learning_rate=0.001)
                )
                try:
                    with model:
                        runs[label] = pm.fit(
                            n=self.advi_iterations,
                            method="advi",
                            obj_optimizer=optimizer,
                            random_seed=seed,
                            progressbar=False,
                            **kwargs,
                        )
                except FloatingPointError as err:  # PyMC stops a run whose loss is NaN
                    if len(labels) == 1 or (label == labels[-1] and not runs):
                        raise
                    text = f"{type(self).__name__}: ADVI from the {label} start failed ({err})"
                    self.warnings_.append(text)
                    warnings.warn(text, SamplerWarning, stacklevel=user_stacklevel())
        finally:
            vi_log.setLevel(vi_level)
        final = {label: _final_loss(np.asarray(a.hist, dtype=float)) for label, a in runs.items()}
        self.advi_start_ = min(final, key=final.get)
        approx = runs[self.advi_start_]
        self._check_advi(np.asarray(approx.hist, dtype=float))
        if len(labels) > 1:
            self.diagnostics_.update({f"advi_final_loss_{k}": v for k, v in final.items()})
        with model:
            return approx.sample(self.draws, random_seed=seed + 1)

    def _map_objective(self) -> _MapObjective:
        """The compiled MAP problem of this fit's model structure, cached per structure
        (like the sampler's compiled model), so repeated fits of one structure compile
        once."""
        if not hasattr(self, "design_"):
            raise ValueError(f"this {type(self).__name__} is not fitted yet")
        key = self.cache_key(self.design_)
        if key not in _MAP_CACHE:
            if "_model" not in self.__dict__:  # unpickled: rebuild the model of the fit
                self._model = self.build_model(self.design_)
            with quiet_pytensor():
                _MAP_CACHE[key] = _MapObjective(self._model)
        return _MAP_CACHE[key]

    def _map_point(self) -> dict[str, np.ndarray]:
        """The MAP as a point of the model's value variables (transformed where the
        model transforms, as the samplers see them)."""
        if "_map" not in self.__dict__:
            obj = self._map_objective()
            with quiet_pytensor():
                self._map = obj.solve(
                    self.design_.n,
                    self.design_.k,
                    restarts=self._map_restarts,
                    jitter=self._start_jitter,
                    rng=self._seed() + 2,
                )
        return self._map

    def _point_estimate(self) -> np.ndarray:
        """P(y=1|s) at the point estimate: here the MAP."""
        point = self._map_point()
        with quiet_pytensor():
            return self._map_objective().p(point)

    @property
    def p_point_(self) -> np.ndarray:
        """The point estimate ("PE", the paper's "O"), computed on first use: the MAP
        (HLR: empirical Bayes, see its ``point_estimate``)."""
        if "_p_point" not in self.__dict__:
            self._p_point = np.asarray(self._point_estimate(), dtype=float)
        return self._p_point

    @p_point_.setter
    def p_point_(self, value: np.ndarray) -> None:
        self._p_point = np.asarray(value, dtype=float)

    def _nuts(self, model, design: Design, seed: int):
        def compiled():  # nutpie's compilation of the PyMC model, once per structure
            import nutpie

            key = self.cache_key(design)
            if key not in _NUTPIE_CACHE:
                _NUTPIE_CACHE[key] = nutpie.compile_pymc_model(model)
            return _NUTPIE_CACHE[key].with_data(n=design.n, k=design.k)

        return sample_nuts(
            lambda: model,
            lambda: self._closed_form_model(design),
            draws=self.draws,
            tune=self.tune,
            chains=self.chains,
            seed=seed,
            target_accept=self.target_accept,
            use_nutpie=self.sampler == "nutpie" or (self.sampler == "auto" and _have_nutpie()),
            compile_nutpie=compiled,
        )

    def _check_advi(self, loss: np.ndarray) -> None:
        """Record how much the ADVI loss (negative ELBO) fell over the last tenth of the
        iterations, and warn when that fall is both real (over 3 standard errors of the
        difference of the two windows' means) and at least 1 nat: the fit stopped early."""
        w = len(loss) // 10
        if w < 10:
            return
        last, prev = loss[-w:], loss[-2 * w : -w]
        drop = float(prev.mean() - last.mean())
        se = float(np.sqrt(prev.var() / w + last.var() / w))
        self.diagnostics_.update({"advi_final_loss": _final_loss(loss), "advi_loss_drop": drop})
        if drop > max(1.0, 3 * se):
            text = (
                f"{type(self).__name__}: ADVI loss still falling ({drop:.1f} nats over the "
                f"last {w:,} of {len(loss):,} iterations); raise `advi_iterations`"
                + (" or use advi_optimizer='adam'" if self.advi_optimizer != "adam" else "")
            )
            self.warnings_.append(text)
            warnings.warn(text, SamplerWarning, stacklevel=user_stacklevel())

    def _check_diagnostics(self, idata) -> None:
        free = [v for v in idata.posterior.data_vars if v not in ("p", "logit_p", "gamma")]
        diag = _arviz.diagnostics(idata, free)
        self.diagnostics_ = diag
        for m in _arviz.sampler_problems(diag, min_ess_bulk=100 * self.chains):
            if m.endswith("divergent transitions") and self.target_accept < 0.995:
                m += f"; a larger `target_accept` (now {self.target_accept}) usually removes them"
            text = f"{type(self).__name__}: {m}"
            self.warnings_.append(text)
            warnings.warn(text, SamplerWarning, stacklevel=user_stacklevel())

    # ------------------------------------------------------------------ results
    def _check_fitted(self) -> None:
        if not hasattr(self, "idata_"):
            raise ValueError(f"this {type(self).__name__} is not fitted yet: call fit(data) first")

    def predict_proba(self) -> np.ndarray:
        """Posterior predictive P(y = 1 | s) per intersection (the paper's "X" plug-in).

        Returns
        -------
        numpy.ndarray, shape (n_intersections,)
        """
        self._check_fitted()
        return self.p_draws_.mean(axis=(0, 1))

    @renamed_arguments(prob="level")
    def summary(self, level: float = LEVEL) -> pd.DataFrame:
        """Per-intersection posterior of P(y=1|s) next to the counts, with fit diagnostics
        in ``.attrs``.

        Parameters
        ----------
        level : float
            Mass of the highest-density intervals (default: the package's 0.90).

        Returns
        -------
        pandas.DataFrame
            One row per intersection: counts, empirical rate, point estimate,
            posterior mean and HDI (columns ``lower``, ``upper`` and ``level``).
        """
        self._check_fitted()
        check_open_probability(level, "level")
        p = self.p_draws_.reshape(-1, self.design_.n_groups)
        lo, hi = _arviz.hdi(p, level) if p.shape[0] > 1 else (p[0], p[0])
        d = self.design_
        with np.errstate(invalid="ignore", divide="ignore"):
            emp = np.where(d.n > 0, d.k / np.maximum(d.n, 1), np.nan)
        out = pd.DataFrame(
            {
                "intersection": d.labels,
                "n": d.n,
                "positives": d.k,
                "empirical": emp,
                "point": self.p_point_,
                "mean": p.mean(axis=0),
                **interval_columns(lo, hi, level),
            }
        )
        out.attrs["model"] = repr(self)
        out.attrs["diagnostics"] = dict(self.diagnostics_)
        out.attrs["warnings"] = list(self.warnings_)
        return out

    def sample_posterior_predictive(self, random_state: SeedLike = None):
        """Add to ``idata_`` a ``posterior_predictive`` group of every intersection's count
        of positives, ``y ~ Binomial(n, p)`` for every posterior draw of ``p``, as PyMC's
        ``sample_posterior_predictive(extend_inferencedata=True)`` does; ArviZ's checks
        (``az.plot_ppc``, ``az.loo_pit``, ``az.plot_bpv``) then run on ``idata_``.

        Not done at fit time: at thousands of intersections it costs more than the fit
        of a conjugate model. A second call keeps the first's draws.

        Parameters
        ----------
        random_state : None, int, or numpy SeedSequence, Generator or RandomState
            Seeds the draws (default: from the model's ``random_state``).

        Returns
        -------
        arviz.InferenceData
            ``idata_``, extended.
        """
        self._check_fitted()
        seed = [self._seed(), 5] if random_state is None else check_seed(random_state)
        d = self.design_
        _arviz.add_binomial_groups(
            self.idata_, d.n, d.k, d.labels, p=self.p_draws_, rng=np.random.default_rng(seed)
        )
        return self.idata_

    def _draws_in_unit_interval(self) -> np.ndarray:
        """The draws of P(y=1|s), (draw, intersection), clipped to [0, 1]."""
        return np.clip(self.p_draws_.reshape(-1, self.design_.n_groups), 0.0, 1.0)

    def _predictive_pvalues(self, p: np.ndarray | None = None) -> np.ndarray:
        """Two-sided posterior predictive p-value of every intersection's count (NaN
        without rows), as the average of exact binomial tails over the draws ``p``
        (default: :meth:`_draws_in_unit_interval`)."""
        d = self.design_
        p = self._draws_in_unit_interval() if p is None else p
        with np.errstate(invalid="ignore"):
            below = binom.cdf(d.k, d.n, p).mean(axis=0)  # P(y_rep <= y)
            above = binom.sf(d.k - 1, d.n, p).mean(axis=0)  # P(y_rep >= y)
        return np.where(d.n > 0, np.minimum(1.0, 2 * np.minimum(below, above)), np.nan)

    @renamed_arguments(prob="level")
    def predictive_check(self, level: float = LEVEL) -> pd.DataFrame:
        """Posterior predictive check of every intersection's count of positives.

        Does the fitted model reproduce the data it was fitted on? A model that pools
        intersections (HLR), or assumes an additive (LR) or independent (NB) form, may
        pull an intersection's P(y|s) away from what its rows say; this shows where.

        Parameters
        ----------
        level : float
            Mass of the central predictive interval (default: the package's 0.90).

        Returns
        -------
        pandas.DataFrame
            One row per intersection: ``n``, ``positives``, the predictive mean, the
            central predictive interval of the count (from the draws of
            :meth:`sample_posterior_predictive`, or the binomial's at a MAP fit) and
            ``pvalue``,
            the two-sided posterior predictive p-value ``min(1, 2 min(P(y_rep <= y),
            P(y_rep >= y)))``, computed exactly as the average of binomial tails over
            the posterior draws (NaN for an intersection without rows). Such p-values
            are conservative (they gather near 0.5 when the model fits), so read a
            small one as misfit and a large one as no evidence either way.

        Examples
        --------
        >>> from bayesfair.datasets import make_gaussian_threshold
        >>> from bayesfair.models import NaiveBayes
        >>> data = make_gaussian_threshold(n_rows=2000, random_state=0).audit_data()
        >>> check = NaiveBayes(random_state=0).fit(data).predictive_check()
        >>> list(check.columns)[:4]
        ['intersection', 'n', 'positives', 'predicted']
        """
        self._check_fitted()
        check_open_probability(level, "level")
        d = self.design_
        p = self._draws_in_unit_interval()
        pvalue = self._predictive_pvalues(p)
        tails = [(1 - level) / 2, (1 + level) / 2]
        if p.shape[0] > 1:
            ppc = self.sample_posterior_predictive().posterior_predictive
            y = ppc["y"].values.reshape(-1, d.n_groups)
            lo, hi = np.quantile(y, tails, axis=0, method="inverted_cdf")
        else:
            lo, hi = binom.ppf(tails, d.n[:, None], p[0][:, None]).T
            if np.isfinite(lo).all() and np.isfinite(hi).all():
                lo, hi = lo.astype(np.int64), hi.astype(np.int64)
        return pd.DataFrame(
            {
                "intersection": d.labels,
                "n": d.n,
                "positives": d.k,
                "predicted": d.n * p.mean(axis=0),
                **interval_columns(lo, hi, level),
                "pvalue": pvalue,
            }
        )
