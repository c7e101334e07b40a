"""Compiled core of the multidimensional fast subset scan (numba).

The data arrive compressed into *atoms*: rows that share every scan attribute
value and (for the Bernoulli score) the same expectation, with their count
``m`` and the sum ``s`` of the event variable (Bernoulli) or of the log-odds
differences Delta (Gaussian).  The compression is exact: both scores are sums
of per-row terms that depend only on (attribute values, I, I-hat).

Only the positive direction (q > 1, mu > 0) is implemented here; the caller
maps the negative direction onto it (Bernoulli: I -> 1 - I and logit I-hat ->
-logit I-hat, which maps q to 1/q; Gaussian: Delta -> -Delta).

Parameter ``theta`` is beta = log q (Bernoulli) or mu (Gaussian).
"""

from __future__ import annotations

import numba as nb
import numpy as np
from numba import types
from numba.typed import Dict

BERNOULLI = 0
GAUSSIAN = 1
#: bound on |log q|; a subgroup whose events are all 1 has its maximum at q -> infinity, and
#: the score at log q = 40 is within exp(-40) of the supremum.
BETA_MAX = 40.0
_TOL = 1e-12


@nb.njit(cache=True, inline="always")
def _softplus(x):
    if x > 0.0:
        return x + np.log1p(np.exp(-x))
    return np.log1p(np.exp(x))


@nb.njit(cache=True, inline="always")
def _sigmoid(x):
    if x >= 0.0:
        return 1.0 / (1.0 + np.exp(-x))
    e = np.exp(x)
    return e / (1.0 + e)


@nb.njit(cache=True)
def _bern_fgh(beta, idx, m, s, lg, sp0):
    """Score F(S | beta), its first and second derivative in beta, over atoms idx."""
    f = 0.0
    g = 0.0
    h = 0.0
    for t in range(idx.shape[0]):
        a = idx[t]
        x = lg[a] + beta
        p = _sigmoid(x)
        f += s[a] * beta - m[a] * (_softplus(x) - sp0[a])
        g += s[a] - m[a] * p
        h -= m[a] * p * (1.0 - p)
    return f, g, h


@nb.njit(cache=True)
def _totals(idx, m, s):
    mt = 0.0
    st = 0.0
    for t in range(idx.shape[0]):
        mt += m[idx[t]]
        st += s[idx[t]]
    return mt, st


@nb.njit(cache=True)
def set_max(idx, family, m, s, lg, sp0, sig2):
    """max over theta >= 0 of F(S | theta) and the maximiser, for the atoms idx."""
    mt, st = _totals(idx, m, s)
    if mt <= 0.0:
        return 0.0, 0.0
    if family == GAUSSIAN:
        if st <= 0.0:
            return 0.0, 0.0
        return st * st / (2.0 * sig2 * mt), st / mt
    _f0, g0, h0 = _bern_fgh(0.0, idx, m, s, lg, sp0)
    if g0 <= 0.0:
        return 0.0, 0.0
    lo = 0.0
    hi = BETA_MAX
    fh, gh, _hh = _bern_fgh(hi, idx, m, s, lg, sp0)
    if gh >= 0.0:  # still increasing at the bound (all events 1): supremum at infinity
        return fh, hi
    beta = 0.0
    g = g0
    h = h0
    for _ in range(200):
        step = beta - g / h if h < 0.0 else 0.5 * (lo + hi)
        if not (lo < step < hi):
            step = 0.5 * (lo + hi)
        f, g, h = _bern_fgh(step, idx, m, s, lg, sp0)
        if g > 0.0:
            lo = step
        else:
            hi = step
        if abs(step - beta) <= _TOL * (1.0 + abs(step)) or hi - lo <= _TOL:
            beta = step
            break
        beta = step
    f, g, h = _bern_fgh(beta, idx, m, s, lg, sp0)
    return f, beta


@nb.njit(cache=True)
def _bern_root(target, a, b, increasing, idx, m, s, lg, sp0):
    """theta in [a, b] with F(theta) = target, F monotone on [a, b] (safeguarded Newton)."""
    lo = a
    hi = b
    x = b if increasing else a
    for _ in range(200):
        f, g, _h = _bern_fgh(x, idx, m, s, lg, sp0)
        r = f - target
        # keep [lo, hi] bracketing the root
        if (r < 0.0) == increasing:
            lo = x
        else:
            hi = x
        step = x - r / g if g != 0.0 else 0.5 * (lo + hi)
        if not (lo < step < hi):
            step = 0.5 * (lo + hi)
        if abs(step - x) <= _TOL * (1.0 + abs(x)) or hi - lo <= _TOL:
            return step
        x = step
    return x


@nb.njit(cache=True)
def set_interval(idx, pen, fmax, theta, family, m, s, lg, sp0, sig2):
    """(lo, hi): the theta >= 0 where F(S | theta) > pen (caller checks fmax > pen)."""
    if family == GAUSSIAN:
        mt, st = _totals(idx, m, s)
        disc = st * st - 2.0 * sig2 * pen * mt
        r = np.sqrt(max(disc, 0.0))
        return max((st - r) / mt, 0.0), (st + r) / mt
    if pen <= 0.0:
        lo = 0.0
    else:
        lo = _bern_root(pen, 0.0, theta, True, idx, m, s, lg, sp0)
    if theta >= BETA_MAX:
        hi = BETA_MAX
    else:
        fb, _gb, _hb = _bern_fgh(BETA_MAX, idx, m, s, lg, sp0)
        if fb > pen:
            hi = BETA_MAX
        else:
            hi = _bern_root(pen, theta, BETA_MAX, False, idx, m, s, lg, sp0)
    return lo, hi


@nb.njit(cache=True)
def _in_mask(a, codes, offsets, mask, skip):
    for jj in range(codes.shape[1]):
        if jj != skip and not mask[offsets[jj] + codes[a, jj]]:
            return False
    return True


@nb.njit(cache=True)
def mask_penalty(mask, offsets, arity, pen, skip):
    tot = 0.0
    for jj in range(arity.shape[0]):
        if jj == skip:
            continue
        c = 0
        for v in range(arity[jj]):
            if mask[offsets[jj] + v]:
                c += 1
        if c < arity[jj]:
            tot += pen * c
    return tot


@nb.njit(cache=True)
def score_mask(mask, codes, offsets, arity, family, m, s, lg, sp0, sig2, pen):
    """Penalised score of the subgroup given by a value mask, and its theta."""
    n = 0
    idx = np.empty(codes.shape[0], np.int64)
    for a in range(codes.shape[0]):
        if _in_mask(a, codes, offsets, mask, -1):
            idx[n] = a
            n += 1
    f, th = set_max(idx[:n], family, m, s, lg, sp0, sig2)
    return f - mask_penalty(mask, offsets, arity, pen, -1), th


@nb.njit(cache=True)
def _range_step(k, order, starts, family, m, s, lg, sp0, sig2, pen, pen_other):
    """Optimal contiguous range of an ordinal attribute's values (exact: every range)."""
    best_sub = np.ones(k, np.bool_)
    fall, best_theta = set_max(order, family, m, s, lg, sp0, sig2)
    best = fall - pen_other
    for lo in range(k):
        for hi in range(lo + 1, k + 1):
            c = hi - lo
            if c == k:
                continue
            seg = order[starts[lo] : starts[hi]]
            f, th = set_max(seg, family, m, s, lg, sp0, sig2)
            net = f - pen * c - pen_other
            if net > best:
                best = net
                best_theta = th
                best_sub[:] = False
                best_sub[lo:hi] = True
    return best_sub, best, best_theta


@nb.njit(cache=True)
def coordinate_step(j, mask, codes, offsets, arity, family, m, s, lg, sp0, sig2, pen, ordinal):
    """Optimal non-empty subset of the values of attribute j, the others held fixed (exact).

    For an ordinal attribute (``ordinal[j]``) only contiguous ranges of its values
    are allowed, and every range is scored."""
    k = arity[j]
    A = codes.shape[0]
    counts = np.zeros(k + 1, np.int64)
    keep = np.zeros(A, np.bool_)
    for a in range(A):
        if _in_mask(a, codes, offsets, mask, j):
            keep[a] = True
            counts[codes[a, j] + 1] += 1
    starts = np.cumsum(counts)
    fill = starts[:-1].copy()
    order = np.empty(starts[k], np.int64)
    for a in range(A):
        if keep[a]:
            v = codes[a, j]
            order[fill[v]] = a
            fill[v] += 1
    pen_other = mask_penalty(mask, offsets, arity, pen, j)
    if ordinal[j]:
        return _range_step(k, order, starts, family, m, s, lg, sp0, sig2, pen, pen_other)

    best_sub = np.ones(k, np.bool_)
    fall, best_theta = set_max(order, family, m, s, lg, sp0, sig2)
    best = fall - pen_other

    valid = np.zeros(k, np.bool_)
    lo = np.zeros(k)
    hi = np.zeros(k)
    nb_ = 0
    for v in range(k):
        seg = order[starts[v] : starts[v + 1]]
        if seg.shape[0] == 0:
            continue
        fv, tv = set_max(seg, family, m, s, lg, sp0, sig2)
        if fv > pen:
            lo[v], hi[v] = set_interval(seg, pen, fv, tv, family, m, s, lg, sp0, sig2)
            if hi[v] > lo[v]:
                valid[v] = True
                nb_ += 2
    if nb_ == 0:
        return best_sub, best, best_theta
    bps = np.empty(nb_)
    t = 0
    for v in range(k):
        if valid[v]:
            bps[t] = lo[v]
            bps[t + 1] = hi[v]
            t += 2
    bps.sort()
    sub = np.zeros(k, np.bool_)
    buf = np.empty(order.shape[0], np.int64)
    for t in range(nb_ - 1):
        if bps[t + 1] <= bps[t]:
            continue
        mid = 0.5 * (bps[t] + bps[t + 1])
        c = 0
        n = 0
        for v in range(k):
            sub[v] = valid[v] and lo[v] < mid < hi[v]
            if sub[v]:
                c += 1
                for u in range(starts[v], starts[v + 1]):
                    buf[n] = order[u]
                    n += 1
        if c == 0:
            continue
        f, th = set_max(buf[:n], family, m, s, lg, sp0, sig2)
        net = f - (0.0 if c == k else pen * c) - pen_other
        if net > best:
            best = net
            best_theta = th
            best_sub[:] = sub
    return best_sub, best, best_theta


_KEY = types.UniTuple(types.int64, 2)
_VAL = types.Tuple((types.int64, types.float64, types.float64))


@nb.njit(cache=True)
def _bits(mask, lo, hi):
    """Mask bits outside [lo, hi) packed into an int64 (caller checks len(mask) <= 63)."""
    b = 0
    for v in range(mask.shape[0]):
        if mask[v] and not (lo <= v < hi):
            b |= 1 << v
    return b


@nb.njit(cache=True)
def scan(codes, offsets, arity, family, m, s, lg, sig2, pen, init_masks, seed, ordinal):
    """Coordinate ascent from each initial mask; returns the best mask, score, theta and
    the score reached by every restart.

    ``ordinal`` (bool per attribute) restricts those attributes to contiguous ranges;
    their initial masks must be contiguous.  A coordinate step depends only on the
    attribute and the values held for the other attributes, so its result is memoised
    across steps and restarts (when the attributes have at most 63 values in all):
    restarts that meet a state already seen cost nothing.
    """
    np.random.seed(seed)  # noqa: NPY002 (numba's own generator, seeded per call)
    sp0 = np.empty(lg.shape[0])
    for a in range(lg.shape[0]):
        sp0[a] = _softplus(lg[a])
    R = init_masks.shape[0]
    M = arity.shape[0]
    V = init_masks.shape[1]
    memo = Dict.empty(key_type=_KEY, value_type=_VAL)
    use_memo = V <= 63
    best_mask = init_masks[0].copy()
    best_score = -np.inf
    best_theta = 0.0
    per_restart = np.empty(R)
    scanned = np.zeros(M, np.bool_)
    for r in range(R):
        mask = init_masks[r].copy()
        score, theta = score_mask(mask, codes, offsets, arity, family, m, s, lg, sp0, sig2, pen)
        scanned[:] = False
        n_scanned = 0
        while n_scanned < M:
            pick = np.random.randint(M - n_scanned)  # noqa: NPY002
            j = 0
            for jj in range(M):
                if not scanned[jj]:
                    if pick == 0:
                        j = jj
                        break
                    pick -= 1
            lo_j = offsets[j]
            hi_j = offsets[j] + arity[j]
            if use_memo:
                key = (np.int64(j), _bits(mask, lo_j, hi_j))
                if key in memo:
                    subbits, sc, th = memo[key]
                    sub = np.zeros(arity[j], np.bool_)
                    for v in range(arity[j]):
                        sub[v] = (subbits >> v) & 1
                else:
                    sub, sc, th = coordinate_step(
                        j, mask, codes, offsets, arity, family, m, s, lg, sp0, sig2, pen, ordinal
                    )
                    subbits = 0
                    for v in range(arity[j]):
                        if sub[v]:
                            subbits |= 1 << v
                    memo[key] = (subbits, sc, th)
            else:
                sub, sc, th = coordinate_step(
                    j, mask, codes, offsets, arity, family, m, s, lg, sp0, sig2, pen, ordinal
                )
            if sc > score + 1e-10 * max(1.0, abs(score)):
                mask[lo_j:hi_j] = sub
                score = sc
                theta = th
                scanned[:] = False
            scanned[j] = True
            n_scanned = 0
            for jj in range(M):
                if scanned[jj]:
                    n_scanned += 1
        per_restart[r] = score
        if score > best_score:
            best_score = score
            best_mask = mask.copy()
            best_theta = theta
    return best_mask, best_score, best_theta, per_restart
