"""The C callbacks through which nutpie samples the package's closed-form densities.

nutpie's Rust sampler calls ``logp(dim, x, grad, logp, user_data)`` and
``expand(dim, n_expanded, x, out, user_data)`` from its own threads, without the
Python interpreter.  Here ``user_data`` is a flat float64 buffer that carries every
size and value of the model, with the kind of model in its eighth slot: the
logistic models of P(y|s) (:mod:`bayesfair.models._fastlogp`) or the hierarchical
model of per-group metrics (:mod:`bayesfair.disaggregated._hb_logp`).  Nothing in
the callbacks depends on a data set, so numba compiles them once per machine and
caches them on disk.
"""

from __future__ import annotations

import functools
import itertools

import numba
import numpy as np

from .disaggregated import _hb_logp as _hb
from .models import _fastlogp as _fl

__all__ = ["HIERARCHICAL", "LOGISTIC", "nutpie_model"]

LOGISTIC, HIERARCHICAL = 0.0, 1.0
_HEADER = 8

_LOGP_SIG = numba.types.int64(
    numba.types.uint64,
    numba.types.CPointer(numba.types.double),
    numba.types.CPointer(numba.types.double),
    numba.types.CPointer(numba.types.double),
    numba.types.CPointer(numba.types.double),
)
_EXPAND_SIG = numba.types.int64(
    numba.types.uint64,
    numba.types.uint64,
    numba.types.CPointer(numba.types.double),
    numba.types.CPointer(numba.types.double),
    numba.types.CPointer(numba.types.double),
)


def _logp_entry(dim, x_, out_, logp_, ud_):
    head = numba.carray(ud_, (_HEADER,))
    x = numba.carray(x_, (dim,))
    out = numba.carray(out_, (dim,))
    if head[7] == LOGISTIC:
        val = _fl.logp_and_grad(x, numba.carray(ud_, (_fl.buffer_size(head),)), out)
    else:
        val = _hb.hb_logp_and_grad(x, numba.carray(ud_, (_hb.buffer_size(head),)), out)
    logp_[0] = val
    for j in range(dim):
        if not np.isfinite(out[j]):
            return 3
    if not np.isfinite(val):
        return 4
    return 0


def _expand_entry(dim, expanded, x_, out_, ud_):
    head = numba.carray(ud_, (_HEADER,))
    x = numba.carray(x_, (dim,))
    out = numba.carray(out_, (expanded,))
    if head[7] == LOGISTIC:
        _fl.expand(x, numba.carray(ud_, (_fl.buffer_size(head),)), out)
    else:
        _hb.hb_expand(x, numba.carray(ud_, (_hb.buffer_size(head),)), out)
    return 0


@functools.cache
def _cfuncs():
    """The callbacks, compiled (or loaded from numba's cache) on first use."""
    return (
        numba.cfunc(_LOGP_SIG, cache=True, nogil=True)(_logp_entry),
        numba.cfunc(_EXPAND_SIG, cache=True, nogil=True)(_expand_entry),
    )


def nutpie_model(
    buffer: np.ndarray,
    start: np.ndarray,
    variables: tuple[list[str], list[tuple[int, ...]], dict[str, tuple[str, ...]]],
    coords: dict,
):
    """A nutpie model whose density the callbacks read from ``buffer``.

    ``variables`` are the names, shapes and dims that ``expand`` writes, in order;
    chains start at ``start`` jittered by U(-1, 1), as PyMC's default for nutpie.
    """
    import pandas as pd
    from nutpie.compile_pymc import CompiledPyMCModel

    names, shapes, dims = variables
    sizes = [int(np.prod(s)) for s in shapes]
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    slices = [slice(int(a), int(b)) for a, b in itertools.pairwise(offsets)]
    ndim = len(start)

    def initial_point(seed: int) -> np.ndarray:
        return start + np.random.default_rng(seed).uniform(-1.0, 1.0, ndim)

    logp_cfunc, expand_cfunc = _cfuncs()
    return CompiledPyMCModel(
        _n_dim=ndim,
        dims=dims,
        _coords={k: pd.Index(v) for k, v in coords.items()},
        _shapes=dict(zip(names, shapes, strict=True)),
        compiled_logp_func=logp_cfunc,
        compiled_expand_func=expand_cfunc,
        initial_point_func=initial_point,
        shared_data={},
        user_data=buffer,  # kept alive by the model: the callbacks get its address
        n_expanded=int(offsets[-1]),
        shape_info=(names, slices, shapes),
        logp_func=None,
        expand_func=None,
    )
