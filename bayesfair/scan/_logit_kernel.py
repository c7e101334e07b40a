"""The compiled Newton iterations of I-hat's weighted logistic regression
(:class:`bayesfair.scan.ihat._WeightedLogit`).

The scan's permutation test refits two such models on every permuted data set, each on a
few dozen merged rows, where NumPy spends its time in call overhead rather than
arithmetic. Every compiled function lives in this one file: numba invalidates a cached
function when its own file changes, not when a function it calls in another file does.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["newton"]


@numba.njit(cache=True)
def _objective(xa, y, w, reg, beta):
    """``sum_i w_i (log(1 + exp(eta_i)) - y_i eta_i) + sum_j reg_j beta_j^2 / 2``."""
    s = 0.0
    for i in range(xa.shape[0]):
        eta = 0.0
        for j in range(xa.shape[1]):
            eta += xa[i, j] * beta[j]
        s += w[i] * (max(eta, 0.0) + np.log1p(np.exp(-abs(eta))) - y[i] * eta)
    pen = 0.0
    for j in range(len(beta)):
        pen += reg[j] * beta[j] * beta[j]
    return s + 0.5 * pen


@numba.njit(cache=True)
def newton(xa, y, w, reg, max_iter):
    """Minimise :func:`_objective` over ``beta`` from 0 by Newton's method with step
    halving (the Hessian ``X' diag(w mu (1 - mu)) X + diag(reg) + 1e-12 I``), until the
    objective stops falling (relative change 1e-14) or the step is below 1e-10."""
    n_rows, p = xa.shape
    beta = np.zeros(p)
    obj = _objective(xa, y, w, reg, beta)
    for _ in range(max_iter):
        g = reg * beta
        h = np.diag(reg) + 1e-12 * np.eye(p)
        for i in range(n_rows):
            eta = 0.0
            for j in range(p):
                eta += xa[i, j] * beta[j]
            mu = 1.0 / (1.0 + np.exp(-eta))
            r = w[i] * (mu - y[i])
            c = w[i] * mu * (1 - mu)
            for j in range(p):
                g[j] += xa[i, j] * r
                cj = c * xa[i, j]
                if cj != 0.0:
                    for q in range(p):
                        h[j, q] += cj * xa[i, q]
        step = np.linalg.solve(h, g)
        t = 1.0
        while True:
            new = beta - t * step
            new_obj = _objective(xa, y, w, reg, new)
            if new_obj <= obj + 1e-12 * abs(obj) or t < 1e-8:
                break
            t *= 0.5
        done = abs(obj - new_obj) <= 1e-14 * max(1.0, abs(obj))
        beta, obj = new, new_obj
        if done or np.max(np.abs(t * step)) < 1e-10:
            break
    return beta
