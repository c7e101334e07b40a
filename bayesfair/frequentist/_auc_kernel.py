"""Compiled null distribution of the DeLong-studentized AUC difference (numba).

One pass over the rows, sorted by score once, per permutation: within each tie block
the group's positives and negatives are counted, and the placement values of all the
block's positives (negatives) are equal, so AUC and both DeLong variance components
accumulate from block totals.  The permuted group is a uniformly random subset of the
rows of its size (a partial Fisher-Yates shuffle), so a permutation costs O(n).
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True)
def _group_stats(in_g, y, block_end, n1, n0):
    """AUC and DeLong variance of the rows with in_g (sorted order)."""
    n = y.shape[0]
    negbelow = 0.0
    posbelow = 0.0
    s10 = 0.0
    ss10 = 0.0
    s01 = 0.0
    ss01 = 0.0
    i = 0
    while i < n:
        e = block_end[i]
        pb = 0.0
        nbk = 0.0
        for t in range(i, e + 1):
            if in_g[t]:
                if y[t]:
                    pb += 1.0
                else:
                    nbk += 1.0
        if pb > 0:
            v10 = (negbelow + 0.5 * nbk) / n0
            s10 += pb * v10
            ss10 += pb * v10 * v10
        if nbk > 0:
            v01 = (n1 - posbelow - pb + 0.5 * pb) / n1
            s01 += nbk * v01
            ss01 += nbk * v01 * v01
        negbelow += nbk
        posbelow += pb
        i = e + 1
    auc = s10 / n1
    var10 = (ss10 - s10 * s10 / n1) / (n1 - 1.0)
    var01 = (ss01 - s01 * s01 / n0) / (n0 - 1.0)
    return auc, var10 / n1 + var01 / n0


@nb.njit(cache=True)
def _both_stats(in_a, y, block_end, n1a, n0a, n1b, n0b):
    """AUC and DeLong variance of group A (in_a) and of the rest, in one pass."""
    n = y.shape[0]
    nbl_a = 0.0
    pbl_a = 0.0
    nbl_b = 0.0
    pbl_b = 0.0
    s10a = ss10a = s01a = ss01a = 0.0
    s10b = ss10b = s01b = ss01b = 0.0
    i = 0
    while i < n:
        e = block_end[i]
        pa = na = pb = nb_ = 0.0
        for t in range(i, e + 1):
            if in_a[t]:
                if y[t]:
                    pa += 1.0
                else:
                    na += 1.0
            elif y[t]:
                pb += 1.0
            else:
                nb_ += 1.0
        if pa > 0:
            v = (nbl_a + 0.5 * na) / n0a
            s10a += pa * v
            ss10a += pa * v * v
        if na > 0:
            v = (n1a - pbl_a - 0.5 * pa) / n1a
            s01a += na * v
            ss01a += na * v * v
        if pb > 0:
            v = (nbl_b + 0.5 * nb_) / n0b
            s10b += pb * v
            ss10b += pb * v * v
        if nb_ > 0:
            v = (n1b - pbl_b - 0.5 * pb) / n1b
            s01b += nb_ * v
            ss01b += nb_ * v * v
        nbl_a += na
        pbl_a += pa
        nbl_b += nb_
        pbl_b += pb
        i = e + 1
    auc_a = s10a / n1a
    var_a = ((ss10a - s10a * s10a / n1a) / (n1a - 1.0)) / n1a + (
        (ss01a - s01a * s01a / n0a) / (n0a - 1.0)
    ) / n0a
    auc_b = s10b / n1b
    var_b = ((ss10b - s10b * s10b / n1b) / (n1b - 1.0)) / n1b + (
        (ss01b - s01b * s01b / n0b) / (n0b - 1.0)
    ) / n0b
    return auc_a, var_a, auc_b, var_b


@nb.njit(cache=True)
def auc_null(y, block_end, n_a, size, studentize, seed):
    """``size`` permuted statistics: group A is a random subset of ``n_a`` rows."""
    np.random.seed(seed)  # noqa: NPY002 (numba's generator, seeded per chunk)
    n = y.shape[0]
    idx = np.arange(n)
    in_a = np.zeros(n, np.bool_)
    n1_tot = 0.0
    for i in range(n):
        if y[i]:
            n1_tot += 1.0
    out = np.empty(size)
    for b in range(size):
        for i in range(n_a):
            j = i + np.random.randint(n - i)  # noqa: NPY002
            tmp = idx[i]
            idx[i] = idx[j]
            idx[j] = tmp
        in_a[:] = False
        n1a = 0.0
        for i in range(n_a):
            in_a[idx[i]] = True
            if y[idx[i]]:
                n1a += 1.0
        n0a = n_a - n1a
        n1b = n1_tot - n1a
        n0b = (n - n_a) - n1b
        if n1a < 1 or n0a < 1 or n1b < 1 or n0b < 1:
            out[b] = np.nan
            continue
        aa, va, ab, vb = _both_stats(in_a, y, block_end, n1a, n0a, n1b, n0b)
        d = aa - ab
        if not studentize:
            out[b] = d
        else:
            se = np.sqrt(va + vb)
            if se > 0:
                out[b] = d / se
            elif d == 0:
                out[b] = 0.0
            else:
                out[b] = np.inf if d > 0 else -np.inf
    return out
