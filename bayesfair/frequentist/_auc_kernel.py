"""Compiled null distribution of the DeLong-studentized AUC difference (numba).

One pass over the rows, sorted by score once, per permutation: within each tie block
the group's positives and negatives are counted, and the placement values of all the
block's positives (negatives) are equal, so AUC and both DeLong variance components
accumulate from block totals.  The permuted group is a uniformly random subset of the
rows of its size (or, within outcome, of the positives and of the negatives of its
numbers of each), drawn by selection sampling in the same pass, so a permutation
costs one O(n) pass and no random memory access.
"""

from __future__ import annotations

import numba as nb
import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


@nb.njit(cache=True, inline="always")
def _splitmix(state):
    """SplitMix64: next state and a uniform double in [0, 1) (numba's np.random costs ~17 ns
    per draw here, this about 1 ns)."""
    state = state + _GOLDEN
    z = state
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    z = z ^ (z >> np.uint64(31))
    return state, np.float64(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@nb.njit(cache=True)
def _fused_permutation(y, block_end, needed, remaining, within, state):
    """Draw a uniformly random subset of rows as group A (selection sampling, one uniform
    per row, in sorted order) and accumulate both groups' AUC and DeLong terms in the same
    pass: ``needed[0]`` of the ``remaining[0]`` rows, or with ``within`` ``needed[1]`` of
    the ``remaining[1]`` positives and ``needed[0]`` of the ``remaining[0]`` negatives
    (both arrays are used up).  Placement sums are accumulated unnormalised, since the
    groups' sizes are known only at the end."""
    n = y.shape[0]
    nbl_a = pbl_a = nbl_b = pbl_b = 0.0
    r10a = rr10a = c01a = d01a = e01a = 0.0
    r10b = rr10b = c01b = d01b = e01b = 0.0
    i = 0
    while i < n:
        e = block_end[i]
        pa = na = pb = nb_ = 0.0
        for t in range(i, e + 1):
            state, u = _splitmix(state)
            c = np.int64(within and y[t])
            take = u * remaining[c] < needed[c]
            needed[c] -= take
            remaining[c] -= 1
            if take:
                if y[t]:
                    pa += 1.0
                else:
                    na += 1.0
            elif y[t]:
                pb += 1.0
            else:
                nb_ += 1.0
        u = nbl_a + 0.5 * na
        r10a += pa * u
        rr10a += pa * u * u
        w = pbl_a + 0.5 * pa
        c01a += na
        d01a += na * w
        e01a += na * w * w
        u = nbl_b + 0.5 * nb_
        r10b += pb * u
        rr10b += pb * u * u
        w = pbl_b + 0.5 * pb
        c01b += nb_
        d01b += nb_ * w
        e01b += nb_ * w * w
        nbl_a += na
        pbl_a += pa
        nbl_b += nb_
        pbl_b += pb
        i = e + 1
    out = np.empty(4)
    for g in range(2):
        if g == 0:
            n1, n0, r10, rr10, c01, d01, e01 = pbl_a, nbl_a, r10a, rr10a, c01a, d01a, e01a
        else:
            n1, n0, r10, rr10, c01, d01, e01 = pbl_b, nbl_b, r10b, rr10b, c01b, d01b, e01b
        if n1 < 2 or n0 < 2:
            out[2 * g] = np.nan
            out[2 * g + 1] = np.nan
            continue
        s10 = r10 / n0
        ss10 = rr10 / (n0 * n0)
        s01 = (n1 * c01 - d01) / n1
        ss01 = (n1 * n1 * c01 - 2.0 * n1 * d01 + e01) / (n1 * n1)
        auc = s10 / n1
        var10 = (ss10 - s10 * s10 / n1) / (n1 - 1.0)
        var01 = (ss01 - s01 * s01 / n0) / (n0 - 1.0)
        out[2 * g] = auc
        out[2 * g + 1] = var10 / n1 + var01 / n0
    return out, state


@nb.njit(cache=True)
def auc_null(y, block_end, n_a, n_a1, within, size, studentize, seed):
    """``size`` permuted statistics: group A is a random subset of ``n_a`` rows (with
    ``within``: of ``n_a1`` positives and ``n_a - n_a1`` negatives)."""
    state = np.uint64(seed)
    out = np.empty(size)
    n1 = 0
    if within:
        for t in range(y.shape[0]):
            n1 += np.int64(y[t])
    needed = np.empty(2, np.int64)
    remaining = np.empty(2, np.int64)
    for b in range(size):
        needed[0], needed[1] = n_a - n_a1 if within else n_a, n_a1
        remaining[0], remaining[1] = y.shape[0] - n1, n1
        r, state = _fused_permutation(y, block_end, needed, remaining, within, state)
        aa, va, ab, vb = r[0], r[1], r[2], r[3]
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
