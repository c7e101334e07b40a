"""The one place that touches ArviZ: the package runs on ArviZ 0.2x (``InferenceData``) and
ArviZ 1.x (``xarray.DataTree``), and every difference between them is here.

What a user gets back is what their ArviZ works with: ``idata_`` is an ``InferenceData``
under ArviZ 0.2x and a ``DataTree`` under ArviZ 1, so ``az.summary`` and ``az.plot_*`` run on
it either way.  The package sets its own interval defaults rather than inheriting ArviZ's
(whose default HDI probability is 0.94 in 0.2x and 0.89 in 1.x).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ._vocabulary import LEVEL

__all__ = [
    "ARVIZ_1",
    "add_binomial_groups",
    "add_group",
    "add_variables",
    "assign_coords",
    "compare",
    "diagnostics",
    "from_draws",
    "groups",
    "hdi",
    "posterior_array",
]


@functools.cache
def _az():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ArviZ 0.2x announces its refactor on import
        import arviz as az
    return az


def _major() -> int:
    from importlib.metadata import version

    return int(version("arviz").split(".")[0])


#: whether the installed ArviZ is 1.x (DataTree) rather than 0.2x (InferenceData)
ARVIZ_1 = _major() >= 1


def hdi(draws: np.ndarray, level: float = LEVEL) -> np.ndarray:
    """Highest-density interval over the leading (sample) axis of ``draws``: shape (2, ...)."""
    az = _az()
    draws = np.asarray(draws, dtype=float)
    if ARVIZ_1:
        import xarray as xr

        flat = draws.reshape(1, *draws.shape)  # one chain of all samples
        dims = ["chain", "draw", *[f"d{i}" for i in range(draws.ndim - 1)]]
        out = az.hdi(xr.DataArray(flat, dims=dims), prob=level)
        return np.moveaxis(out.transpose(..., "ci_bound").to_numpy(), -1, 0)
    if draws.ndim == 1:
        return np.asarray(az.hdi(draws, hdi_prob=level))
    flat = draws.reshape(1, draws.shape[0], *draws.shape[1:])  # one chain of all samples
    return np.moveaxis(np.asarray(az.hdi(flat, hdi_prob=level)), -1, 0)


def groups(idata) -> set[str]:
    """The names of the groups of ``idata`` (``posterior``, ``log_likelihood``, ...)."""
    if ARVIZ_1:
        return set(idata.children)
    return set(idata.groups())


def from_draws(
    posterior: Mapping[str, np.ndarray],
    *,
    log_likelihood: Mapping[str, np.ndarray] | None = None,
    observed: Mapping[str, np.ndarray] | None = None,
    coords: Mapping[str, Sequence] | None = None,
    dims: Mapping[str, list[str]] | None = None,
):
    """An InferenceData (DataTree under ArviZ 1) from arrays shaped (chain, draw, ...)."""
    return _from_groups(
        {
            "posterior": posterior,
            "log_likelihood": log_likelihood,
            "observed_data": observed,
        },
        coords=coords,
        dims=dims,
    )


def _from_groups(
    data: Mapping[str, Mapping[str, np.ndarray] | None],
    *,
    coords: Mapping[str, Sequence] | None = None,
    dims: Mapping[str, list[str]] | None = None,
):
    """ArviZ's ``from_dict`` of the groups of ``data`` that are not None or empty."""
    az = _az()
    data = {name: dict(vars_) for name, vars_ in data.items() if vars_}
    coords = {k: list(v) for k, v in (coords or {}).items()}
    dims = {k: list(v) for k, v in (dims or {}).items()}
    if ARVIZ_1:
        return az.from_dict(data, coords=coords, dims=dims)
    return az.from_dict(**data, coords=coords, dims=dims)


def add_group(
    idata,
    name: str,
    variables: Mapping[str, np.ndarray],
    *,
    coords: Mapping[str, Sequence] | None = None,
    dims: Mapping[str, list[str]] | None = None,
) -> None:
    """Add (or replace) the group ``name`` of ``idata`` in place."""
    extra = _from_groups({name: variables}, coords=coords, dims=dims)
    if ARVIZ_1:
        idata[name] = extra[name]
    else:
        if name in idata.groups():
            delattr(idata, name)
        idata.extend(extra)


def _dataset(idata, group: str):
    """The group ``group`` of ``idata`` as an ``xarray.Dataset``."""
    return idata[group].to_dataset() if ARVIZ_1 else getattr(idata, group)


def _set_dataset(idata, group: str, ds) -> None:
    if ARVIZ_1:
        import xarray as xr

        idata[group] = xr.DataTree(ds)
    else:
        setattr(idata, group, ds)


def assign_coords(idata, name: str, **coords) -> None:
    """Set coordinates of a group of ``idata`` in place."""
    _set_dataset(idata, name, _dataset(idata, name).assign_coords(**coords))


def add_variables(
    idata,
    group: str,
    variables: Mapping[str, tuple[Sequence[str], np.ndarray]],
    coords: Mapping[str, Sequence] | None = None,
) -> None:
    """Add variables ``name: (dims, values)`` (dims after chain and draw) to a group of
    ``idata`` in place, with the ``coords`` of their dims."""
    ds = _dataset(idata, group).assign(
        {name: (("chain", "draw", *dims), values) for name, (dims, values) in variables.items()}
    )
    used = {d for dims, _ in variables.values() for d in dims}
    ds = ds.assign_coords({d: list(v) for d, v in (coords or {}).items() if d in used})
    _set_dataset(idata, group, ds)


def add_binomial_groups(
    idata, n: np.ndarray, k: np.ndarray, labels: Sequence[str], *, p=None, rng=None
) -> None:
    """Give ``idata`` of a binomial model of the counts ``k`` of ``n`` what ArviZ's checks
    need: ``observed_data`` ``y`` = k and ``constant_data`` ``n`` and ``k`` (where missing),
    and with ``p`` (draws shaped chain, draw, intersection) and ``rng`` a
    ``posterior_predictive`` ``y`` ~ Binomial(n, p) for every draw, so that ``az.plot_ppc``,
    ``az.loo_pit`` and ``az.plot_bpv`` work."""
    present = groups(idata)
    n = np.asarray(n, dtype=np.int64)
    coords = {"intersection": list(labels)}
    dims = {name: ["intersection"] for name in ("y", "n", "k")}
    if p is not None and "posterior_predictive" not in present:
        y = rng.binomial(n, np.clip(np.nan_to_num(p, nan=0.5), 0.0, 1.0))
        ppc = {"y": y.astype(np.int32 if n.max(initial=0) < 2**31 else int)}
        add_group(idata, "posterior_predictive", ppc, coords=coords, dims=dims)
    if "observed_data" not in present:
        add_group(idata, "observed_data", {"y": np.asarray(k, np.int64)}, coords=coords, dims=dims)
    if "constant_data" not in present:
        const = {"n": n, "k": np.asarray(k)}
        add_group(idata, "constant_data", const, coords=coords, dims=dims)


def posterior_array(idata, name: str) -> np.ndarray:
    """A posterior variable as a numpy array (chain, draw, ...)."""
    return np.asarray(idata.posterior[name].values)


def diagnostics(idata, var_names: Sequence[str] | None = None) -> dict[str, float]:
    """Divergences, largest R-hat and smallest bulk/tail ESS of the free parameters."""
    az = _az()
    out: dict[str, float] = {"divergences": 0.0, "r_hat_max": np.nan, "ess_bulk_min": np.nan}
    if "sample_stats" in groups(idata) and "diverging" in idata.sample_stats:
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
        if ARVIZ_1:
            return az.compare(_informative_loglik(idatas), method=method.lower())
        return az.compare(dict(idatas), ic="loo", method=method)


def _informative_loglik(idatas: Mapping[str, object]) -> dict[str, object]:
    """``idatas`` without the observations whose log-likelihood is one and the same
    constant in every draw of every model (an intersection without rows: 0).  They add
    the same to every model's LOO, so leave the comparison as it is; ArviZ 1's Pareto
    smoothing refuses them ("All tail values are the same"), ArviZ 0.2x warns."""
    import xarray as xr

    lls = {name: _dataset(idata, "log_likelihood")["y"] for name, idata in idatas.items()}
    first = next(iter(lls.values()))
    obs_dims = [d for d in first.dims if d not in ("chain", "draw")]
    constant = None
    for ll in lls.values():
        same = (ll.max(("chain", "draw")) == ll.min(("chain", "draw"))) & (
            ll.isel(chain=0, draw=0) == first.isel(chain=0, draw=0)
        )
        constant = same if constant is None else constant & same
    if not bool(constant.any()):
        return dict(idatas)
    keep = ~constant.stack(obs=obs_dims).to_numpy()
    out = {}
    for name, idata in idatas.items():
        ll = lls[name].stack(obs=obs_dims).isel(obs=keep).reset_index("obs", drop=True)
        out[name] = xr.DataTree.from_dict(
            {
                "posterior": _dataset(idata, "posterior"),
                "log_likelihood": xr.Dataset({"y": ll}),
            }
        )
    return out
