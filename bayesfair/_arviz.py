"""The one place that touches ArviZ, so that a move to ArviZ 1 (DataTree) stays local.

The package sets its own interval defaults rather than inheriting ArviZ's.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ._vocabulary import LEVEL

__all__ = [
    "add_binomial_groups",
    "compare",
    "diagnostics",
    "from_draws",
    "hdi",
    "posterior_array",
]


def _az():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ArviZ 0.2x announces its refactor on import
        import arviz as az
    return az


def hdi(draws: np.ndarray, level: float = LEVEL) -> np.ndarray:
    """Highest-density interval over the leading (sample) axis of ``draws``: shape (2, ...)."""
    az = _az()
    draws = np.asarray(draws, dtype=float)
    if draws.ndim == 1:
        return np.asarray(az.hdi(draws, hdi_prob=level))
    flat = draws.reshape(1, draws.shape[0], *draws.shape[1:])  # one chain of all samples
    return np.moveaxis(np.asarray(az.hdi(flat, hdi_prob=level)), -1, 0)


def from_draws(
    posterior: Mapping[str, np.ndarray],
    *,
    log_likelihood: Mapping[str, np.ndarray] | None = None,
    observed: Mapping[str, np.ndarray] | None = None,
    coords: Mapping[str, Sequence] | None = None,
    dims: Mapping[str, list[str]] | None = None,
):
    """An InferenceData from arrays shaped (chain, draw, ...)."""
    az = _az()
    return az.from_dict(
        posterior=dict(posterior),
        log_likelihood=dict(log_likelihood) if log_likelihood else None,
        observed_data=dict(observed) if observed else None,
        coords=dict(coords or {}),
        dims=dict(dims or {}),
    )


def add_binomial_groups(
    idata, n: np.ndarray, k: np.ndarray, labels: Sequence[str], *, p=None, rng=None
) -> None:
    """Give ``idata`` of a binomial model of the counts ``k`` of ``n`` what ArviZ's checks
    need: ``observed_data`` ``y`` = k and ``constant_data`` ``n`` and ``k`` (where missing),
    and with ``p`` (draws shaped chain, draw, intersection) and ``rng`` a
    ``posterior_predictive`` ``y`` ~ Binomial(n, p) for every draw, so that ``az.plot_ppc``,
    ``az.loo_pit`` and ``az.plot_bpv`` work."""
    groups = set(idata.groups())
    n = np.asarray(n, dtype=np.int64)
    ppc = None
    if p is not None and "posterior_predictive" not in groups:
        y = rng.binomial(n, np.clip(np.nan_to_num(p, nan=0.5), 0.0, 1.0))
        ppc = {"y": y.astype(np.int32 if n.max(initial=0) < 2**31 else int)}
    extra = _az().from_dict(
        posterior_predictive=ppc,
        observed_data=None if "observed_data" in groups else {"y": np.asarray(k, np.int64)},
        constant_data=None if "constant_data" in groups else {"n": n, "k": np.asarray(k)},
        coords={"intersection": list(labels)},
        dims={name: ["intersection"] for name in ("y", "n", "k")},
    )
    idata.extend(extra)


def posterior_array(idata, name: str) -> np.ndarray:
    """A posterior variable as a numpy array (chain, draw, ...)."""
    return np.asarray(idata.posterior[name].values)


def diagnostics(idata, var_names: Sequence[str] | None = None) -> dict[str, float]:
    """Divergences, largest R-hat and smallest bulk/tail ESS of the free parameters."""
    az = _az()
    out: dict[str, float] = {"divergences": 0.0, "r_hat_max": np.nan, "ess_bulk_min": np.nan}
    if "sample_stats" in idata.groups() and "diverging" in idata.sample_stats:
        out["divergences"] = float(idata.sample_stats["diverging"].sum())
    n_chains = idata.posterior.sizes.get("chain", 1)
    if n_chains >= 2 and idata.posterior.sizes.get("draw", 1) >= 4:
        names = list(var_names) if var_names else None
        # not az.summary: it rounds R-hat to two decimals, so 1.0149 read as 1.01 and
        # passed the R-hat > 1.01 check
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r_hat = az.rhat(idata, var_names=names)
            bulk = az.ess(idata, var_names=names, method="bulk")
            tail = az.ess(idata, var_names=names, method="tail")
        out["r_hat_max"] = _over_variables(r_hat, np.nanmax)
        out["ess_bulk_min"] = _over_variables(bulk, np.nanmin)
        out["ess_tail_min"] = _over_variables(tail, np.nanmin)
    return out


def _over_variables(ds, reduce) -> float:
    """``reduce`` of every defined value of every variable of ``ds`` (NaN if none)."""
    values = np.concatenate([np.ravel(ds[v].to_numpy()) for v in ds.data_vars] or [[]])
    values = values[np.isfinite(values)]
    return float(reduce(values)) if values.size else np.nan


def r_hat_by_variable(idata, var_names: Sequence[str]) -> dict[str, float]:
    """The largest R-hat of each variable (empty with fewer than 2 chains)."""
    if idata.posterior.sizes.get("chain", 1) < 2:
        return {}
    az = _az()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = az.rhat(idata, var_names=list(var_names))
    return {name: float(np.nanmax(r[name].to_numpy())) for name in r.data_vars}


#: the largest R-hat a fit may have without a warning
R_HAT_MAX = 1.01


def sampler_problems(diag: Mapping[str, float], min_ess_bulk: float | None = None) -> list[str]:
    """What is wrong with a fit, from its :func:`diagnostics`: divergent transitions,
    R-hat above :data:`R_HAT_MAX` and, given ``min_ess_bulk``, a low bulk ESS (an
    undefined R-hat or ESS is not a problem).  Empty when nothing is."""
    msgs = []
    if diag["divergences"] > 0:
        msgs.append(f"{int(diag['divergences'])} divergent transitions")
    if diag.get("r_hat_max", 0) > R_HAT_MAX:
        msgs.append(f"R-hat up to {diag['r_hat_max']:.3f} (> {R_HAT_MAX})")
    if min_ess_bulk is not None and diag.get("ess_bulk_min", np.inf) < min_ess_bulk:
        msgs.append(f"bulk ESS as low as {diag['ess_bulk_min']:.0f} (< {min_ess_bulk})")
    return msgs


def compare(idatas: Mapping[str, object], method: str) -> pd.DataFrame:
    """ArviZ's LOO comparison with ``method`` in {"stacking", "BB-pseudo-BMA", "pseudo-BMA"}."""
    az = _az()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return az.compare(dict(idatas), ic="loo", method=method)
