"""Resampling loops through joblib, seeded so that results do not depend on the backend.

Work is split into a fixed number of chunks, each seeded from one
``numpy.random.SeedSequence``; the chunks, not the workers, determine the
random streams, so ``n_jobs=1``, ``n_jobs=2`` or a Dask cluster (through
``joblib.parallel_config(backend="dask")``) give identical results.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from joblib import Parallel, delayed

from ._validation import check_resamples, check_seed

__all__ = ["chunked_resamples", "shuffled_statistic"]

#: How many chunks a resampling loop is split into (independent of n_jobs).
N_CHUNKS = 16


def chunked_resamples(
    fn: Callable[[int, np.random.Generator], np.ndarray],
    n_resamples: int,
    random_state: int | np.random.SeedSequence | None,
    n_jobs: int | None = 1,
    n_chunks: int = N_CHUNKS,
) -> np.ndarray:
    """Run ``fn(size, rng)`` over chunks that add up to ``n_resamples``; concatenate results.

    ``fn`` returns an array whose first axis has length ``size``.
    """
    check_resamples(n_resamples, "n_resamples")
    if n_jobs is not None and (
        isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0
    ):
        raise ValueError(
            f"`n_jobs` must be None or a non-zero integer (-1: every core), got {n_jobs!r}"
        )
    # a SeedSequence is used as it is (callers spawn from one before passing it on)
    seq = (
        random_state
        if isinstance(random_state, np.random.SeedSequence)
        else check_seed(random_state)
    )
    k = int(min(n_chunks, n_resamples))
    sizes = np.full(k, n_resamples // k)
    sizes[: n_resamples % k] += 1
    seeds = seq.spawn(k)
    if n_jobs in (None, 1):
        parts = [fn(int(s), np.random.default_rng(sd)) for s, sd in zip(sizes, seeds, strict=True)]
    else:
        parts = Parallel(n_jobs=n_jobs)(
            delayed(fn)(int(s), np.random.default_rng(sd))
            for s, sd in zip(sizes, seeds, strict=True)
        )
    return np.concatenate(parts, axis=0)


def shuffled_statistic(
    values: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    batch: int = 64,
) -> Callable[[int, np.random.Generator], np.ndarray]:
    """A ``fn(size, rng)`` for :func:`chunked_resamples`: ``statistic`` of ``size``
    independent shuffles of ``values``, drawn ``batch`` at a time as the rows of a
    (batch, n) array so that the statistic is vectorised over shuffles."""

    def draw(size: int, rng: np.random.Generator) -> np.ndarray:
        out = []
        for start in range(0, size, batch):
            k = min(batch, size - start)
            out.append(statistic(rng.permuted(np.broadcast_to(values, (k, len(values))), axis=1)))
        return np.concatenate(out)

    return draw
