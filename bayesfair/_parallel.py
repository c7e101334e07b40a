"""Resampling loops through joblib, seeded so that results do not depend on the backend.

Work is split into a fixed number of chunks, each seeded from one
``numpy.random.SeedSequence``; the chunks, not the workers, determine the
random streams, so ``n_jobs=1``, ``n_jobs=2`` or a Dask cluster (through
``joblib.parallel_config(backend="dask")``) give identical results.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
from joblib import Parallel, delayed

from ._validation import check_n_jobs, check_resamples, check_seed

__all__ = ["chunked_resamples", "sequential_resamples", "shuffled_statistic"]

#: How many chunks a resampling loop is split into (independent of n_jobs).
N_CHUNKS = 16


def _chunks(
    n_resamples: int, random_state, n_jobs: object, n_chunks: int
) -> tuple[np.ndarray, list[np.random.SeedSequence]]:
    """Sizes adding up to ``n_resamples`` in at most ``n_chunks`` chunks and one seed each
    (a SeedSequence is used as it is: callers spawn from one before passing it on)."""
    check_resamples(n_resamples, "n_resamples")
    check_n_jobs(n_jobs)
    seq = (
        random_state
        if isinstance(random_state, np.random.SeedSequence)
        else check_seed(random_state)
    )
    k = int(min(n_chunks, n_resamples))
    sizes = np.full(k, n_resamples // k)
    sizes[: n_resamples % k] += 1
    return sizes, seq.spawn(k)


def chunked_resamples(
    fn: Callable[[int, np.random.Generator], np.ndarray],
    n_resamples: int,
    random_state: int | np.random.SeedSequence | None,
    n_jobs: int | None = 1,
    n_chunks: int = N_CHUNKS,
    on_chunk: Callable[[int], object] | None = None,
) -> np.ndarray:
    """Run ``fn(size, rng)`` over chunks that add up to ``n_resamples``; concatenate results.

    ``fn`` returns an array whose first axis has length ``size``; ``on_chunk(size)`` is
    called as each chunk's result arrives (a progress bar's advance).
    """
    sizes, seeds = _chunks(n_resamples, random_state, n_jobs, n_chunks)
    if n_jobs in (None, 1):
        results = (
            fn(int(s), np.random.default_rng(sd)) for s, sd in zip(sizes, seeds, strict=True)
        )
    else:
        results = Parallel(n_jobs=n_jobs, return_as="generator")(
            delayed(fn)(int(s), np.random.default_rng(sd))
            for s, sd in zip(sizes, seeds, strict=True)
        )
    parts = []
    for part in results:
        parts.append(part)
        if on_chunk is not None:
            on_chunk(len(part))
    return np.concatenate(parts, axis=0)


#: Exceedances after which a sequential permutation test stops (Besag and Clifford's h).
EXCEEDANCES = 20


def sequential_resamples(
    fn: Callable[[int, np.random.Generator], np.ndarray],
    n_resamples: int,
    random_state: int | np.random.SeedSequence | None,
    observed: float,
    n_jobs: int | None = 1,
    h: int = EXCEEDANCES,
) -> tuple[np.ndarray, float, int]:
    """Permutations drawn in order until ``h`` of them reach ``observed``, and the p-value.

    Besag and Clifford's (1991) sequential Monte Carlo p-value: draw resampled statistics
    until ``h`` are at least ``observed`` (then ``p = h / L`` after ``L`` draws) or until
    ``n_resamples`` are drawn with ``g < h`` such (then ``p = (g + 1) / (n + 1)``, the
    usual p-value).  Both are valid, ``P(p <= u) <= u``; a clearly non-significant
    statistic costs about ``h / p`` draws instead of ``n_resamples``, a significant one
    all of them.  Draws that are NaN (resamples that could not be scored) take no part.

    The draws come in chunks of fixed seeds, run ``n_jobs`` at a time in chunk order, so
    the result does not depend on ``n_jobs`` or the backend.

    Parameters
    ----------
    fn : callable
        ``fn(size, rng) -> array`` of ``size`` resampled statistics.
    n_resamples : int
        Most draws.
    random_state : None, int or numpy.random.SeedSequence
    observed : float
        The observed statistic (larger is more extreme).
    n_jobs : int, optional
        Chunks run at once through joblib.
    h : int, default 20
        Exceedances at which to stop.

    Returns
    -------
    null : numpy.ndarray
        The draws made (NaN ones left out).
    pvalue : float
        NaN when every draw was NaN.
    skipped : int
        NaN draws left out.
    """
    # finer chunks than chunked_resamples': the test stops at a chunk's end
    sizes, seeds = _chunks(n_resamples, random_state, n_jobs, 4 * N_CHUNKS)
    k = len(sizes)
    width = 1 if n_jobs in (None, 1) else (os.cpu_count() or 1) if n_jobs < 0 else n_jobs
    drawn, hits, skipped = [], 0, 0
    for start in range(0, k, width):
        todo = list(zip(sizes[start : start + width], seeds[start : start + width], strict=True))
        if width == 1:
            parts = [fn(int(n), np.random.default_rng(sd)) for n, sd in todo]
        else:
            parts = Parallel(n_jobs=n_jobs)(
                delayed(fn)(int(n), np.random.default_rng(sd)) for n, sd in todo
            )
        for part in parts:
            part = np.asarray(part, float)
            skipped += int(np.isnan(part).sum())
            part = part[~np.isnan(part)]
            exceed = np.flatnonzero(part >= observed)
            if hits + len(exceed) >= h:
                stop = exceed[h - hits - 1] + 1
                drawn.append(part[:stop])
                null = np.concatenate(drawn)
                return null, h / len(null), skipped
            hits += len(exceed)
            drawn.append(part)
    null = np.concatenate(drawn) if drawn else np.empty(0)
    return null, (hits + 1) / (len(null) + 1) if len(null) else float("nan"), skipped


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
