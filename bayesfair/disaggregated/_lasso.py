"""Weighted lasso with an unpenalised intercept by coordinate descent (numba).

Minimises  1/2 sum_a w_a (y_a - b0 - x_a . theta)^2 + lam ||theta||_1  with the
weights normalised to sum to one -- scikit-learn's ``Lasso(alpha=lam)`` objective
with ``sample_weight=w`` -- on the tiny problems of structured regression (one
observation per group), where scikit-learn's per-call overhead would dominate the
hundreds of fits of cross-validation and the residual bootstrap.
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True)
def lasso_cd(X, y, w, lam, theta0, max_iter=10_000, tol=1e-10):
    n, d = X.shape
    ws = w / w.sum()
    xm = np.zeros(d)
    ym = 0.0
    for i in range(n):
        ym += ws[i] * y[i]
        for j in range(d):
            xm[j] += ws[i] * X[i, j]
    Xc = np.empty((n, d))
    yc = np.empty(n)
    for i in range(n):
        yc[i] = y[i] - ym
        for j in range(d):
            Xc[i, j] = X[i, j] - xm[j]
    z = np.zeros(d)
    for j in range(d):
        for i in range(n):
            z[j] += ws[i] * Xc[i, j] * Xc[i, j]
    theta = theta0.copy()
    r = yc.copy()
    for i in range(n):
        for j in range(d):
            r[i] -= Xc[i, j] * theta[j]
    for _ in range(max_iter):
        delta = 0.0
        for j in range(d):
            if z[j] <= 1e-15:
                theta[j] = 0.0
                continue
            rho = 0.0
            for i in range(n):
                rho += ws[i] * Xc[i, j] * r[i]
            rho += z[j] * theta[j]
            if rho > lam:
                new = (rho - lam) / z[j]
            elif rho < -lam:
                new = (rho + lam) / z[j]
            else:
                new = 0.0
            diff = new - theta[j]
            if diff != 0.0:
                for i in range(n):
                    r[i] -= Xc[i, j] * diff
                theta[j] = new
                delta = max(delta, abs(diff) * np.sqrt(z[j]))
        if delta < tol:
            break
    b0 = ym
    for j in range(d):
        b0 -= xm[j] * theta[j]
    return b0, theta


def lambda_max(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """Smallest penalty at which every coefficient is zero."""
    ws = w / w.sum()
    xc = X - ws @ X
    return float(np.max(np.abs(xc.T @ (ws * (y - ws @ y))))) if X.shape[1] else 0.0


def partial_ridge(X, y, w, selected, lam2):
    """Lasso + partial ridge (Liu, Xu and Li): least squares with a ridge penalty lam2 only
    on the coefficients the lasso did not select (intercept unpenalised)."""
    ws = w / w.sum()
    Xa = np.column_stack([np.ones(len(y)), X])
    pen = np.concatenate([[0.0], np.where(selected, 0.0, lam2)]) + 1e-10
    A = (Xa.T * ws) @ Xa + np.diag(pen)
    b = Xa.T @ (ws * y)
    coef = np.linalg.lstsq(A, b, rcond=None)[0]
    return coef[0], coef[1:]
