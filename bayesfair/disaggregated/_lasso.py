"""Weighted lasso with an unpenalised intercept by coordinate descent (numba), and the
partial ridge refit of rBLPR.

Minimises  1/2 sum_a w_a (y_a - b0 - x_a . theta)^2 + lam ||theta||_1  with the
weights normalised to sum to one -- scikit-learn's ``Lasso(alpha=lam)`` objective
with ``sample_weight=w`` -- on the tiny problems of structured regression (one
observation per group), where scikit-learn's per-call overhead would dominate the
hundreds of fits of cross-validation and the residual bootstrap.  After
``accel_after`` plain sweeps the iterates are Anderson-extrapolated every
``accel_k`` sweeps (Bertrand and Massias, "Anderson acceleration of coordinate
descent", AISTATS 2021), which the exactly collinear group and attribute
indicators need at small penalties, where plain sweeps converge very slowly.
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True)
def _columns(X):
    """The nonzeros of ``X`` by column: ``rows[start[j]:start[j + 1]]`` and ``vals[...]``.

    Structured regression's features are mostly indicators (a group's identity column
    has one nonzero), so the sweeps below touch only these and never a centred copy of
    ``X``, whose every entry is nonzero."""
    n, d = X.shape
    # both passes run along X's rows (C order), not down its columns: at 2,400 groups a
    # column-wise scan of the dense matrix took 50 ms, all of a lasso fit's time
    count = np.zeros(d, np.int64)
    for i in range(n):
        for j in range(d):
            if X[i, j] != 0.0:
                count[j] += 1
    start = np.zeros(d + 1, np.int64)
    for j in range(d):
        start[j + 1] = start[j] + count[j]
    rows = np.empty(start[d], np.int64)
    vals = np.empty(start[d])
    cursor = start[:d].copy()
    for i in range(n):  # rows in increasing order within each column, as before
        for j in range(d):
            if X[i, j] != 0.0:
                q = cursor[j]
                rows[q] = i
                vals[q] = X[i, j]
                cursor[j] = q + 1
    return start, rows, vals


@nb.njit(cache=True)
def _residual(start, rows, vals, y, theta, out):
    """``out = y - X @ theta`` (without intercept) from the column nonzeros."""
    out[:] = y
    for j in range(theta.shape[0]):
        t = theta[j]
        if t != 0.0:
            for q in range(start[j], start[j + 1]):
                out[rows[q]] -= vals[q] * t


@nb.njit(cache=True)
def _objective(u, ws, theta, lam):
    """The lasso objective at ``theta`` from its residual ``u`` before the intercept (the
    optimal intercept removes the weighted mean of ``u``)."""
    ubar = 0.0
    for i in range(u.shape[0]):
        ubar += ws[i] * u[i]
    obj = 0.0
    for i in range(u.shape[0]):
        obj += 0.5 * ws[i] * (u[i] - ubar) ** 2
    for j in range(theta.shape[0]):
        obj += lam * abs(theta[j])
    return obj


def lasso_cd(
    X: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    lam: float,
    theta0: np.ndarray,
    max_iter: int = 10_000,
    tol: float = 1e-10,
    accel_after: int = 100,
    accel_k: int = 5,
) -> tuple[float, np.ndarray]:
    """The module's lasso (see its docstring) from ``theta0``: coordinate sweeps over the
    columns' nonzeros with the intercept profiled out, Anderson extrapolation every
    ``accel_k`` sweeps after ``accel_after``, until the largest coordinate change is below
    ``tol``; returns the intercept and the coefficients.

    A plain function that passes every argument to the compiled :func:`_lasso_cd`: numba's
    dispatcher resolves an omitted default argument in Python on every call, which costs
    more than a fit of one of these problems takes; with every argument given, and each of
    one type, it calls the compiled code directly.
    """
    return _lasso_cd(
        X, y, w, float(lam), theta0, int(max_iter), float(tol), int(accel_after), int(accel_k)
    )


@nb.njit(cache=True)
def _lasso_cd(X, y, w, lam, theta0, max_iter, tol, accel_after, accel_k):
    """:func:`lasso_cd`, compiled.

    One function on purpose: numba compiles it into a single loop nest whose state (the
    residual, its weighted mean, the extrapolation's history) stays in local arrays; split
    into calls, each sweep would pass that state through function boundaries on problems
    where a fit takes tens of microseconds.
    """
    n, d = X.shape
    ws = w / w.sum()
    start, rows, vals = _columns(X)
    # the intercept is profiled out: with u = y - X theta, the residual is u - ubar
    # (ubar = sum ws u), and coordinate j sees sum_i ws_i (X_ij - xm_j)(u_i - ubar), which
    # is sum over the column's nonzeros of ws_i X_ij (u_i - ubar) because the residual
    # has weighted mean 0
    xm = np.zeros(d)
    z = np.zeros(d)
    for j in range(d):
        wsum = 0.0
        for q in range(start[j], start[j + 1]):
            xm[j] += ws[rows[q]] * vals[q]
            wsum += ws[rows[q]]
        for q in range(start[j], start[j + 1]):
            z[j] += ws[rows[q]] * (vals[q] - xm[j]) ** 2
        z[j] += xm[j] * xm[j] * (1.0 - wsum)  # the zero entries, each X_ij - xm_j = -xm_j
    ym = 0.0
    for i in range(n):
        ym += ws[i] * y[i]
    theta = theta0.copy()
    u = np.empty(n)
    _residual(start, rows, vals, y, theta, u)
    ubar = 0.0
    for i in range(n):
        ubar += ws[i] * u[i]
    # Anderson extrapolation of the sweeps (Bertrand and Massias 2021) once plain coordinate
    # descent has run ``accel_after`` sweeps without converging: on exactly collinear
    # indicators (group identities beside attribute values) at small penalties it would
    # otherwise crawl to ``max_iter``; an extrapolated point is kept only if it lowers the
    # objective, so the iteration still converges to a lasso solution
    hist = np.zeros((accel_k + 1, d))
    u_extr = np.empty(n)
    u_now = np.empty(n)  # the current residual afresh, not the running one, for the comparison
    n_hist = 0
    for it in range(max_iter):
        delta = 0.0
        for j in range(d):
            if z[j] <= 1e-15:
                new = 0.0  # a constant column: no effect separate from the intercept
            else:
                rho = 0.0
                for q in range(start[j], start[j + 1]):
                    rho += ws[rows[q]] * vals[q] * (u[rows[q]] - ubar)
                rho += z[j] * theta[j]
                if rho > lam:
                    new = (rho - lam) / z[j]
                elif rho < -lam:
                    new = (rho + lam) / z[j]
                else:
                    new = 0.0
            diff = new - theta[j]
            if diff != 0.0:
                for q in range(start[j], start[j + 1]):
                    u[rows[q]] -= vals[q] * diff
                ubar -= xm[j] * diff
                theta[j] = new
                if z[j] > 1e-15:
                    delta = max(delta, abs(diff) * np.sqrt(z[j]))
        if delta < tol:
            break
        if it >= accel_after and d > 1:
            hist[n_hist] = theta
            n_hist += 1
            if n_hist == accel_k + 1:
                n_hist = 0
                U = np.empty((d, accel_k))
                for k in range(accel_k):
                    U[:, k] = hist[k + 1] - hist[k]
                G = U.T @ U
                scale = 0.0
                for k in range(accel_k):
                    scale = max(scale, G[k, k])
                if scale > 0.0:
                    c = np.linalg.solve(G + 1e-10 * scale * np.eye(accel_k), np.ones(accel_k))
                    tot = c.sum()
                    if np.isfinite(tot) and abs(tot) > 1e-300:
                        c /= tot
                        extr = np.zeros(d)
                        for k in range(accel_k):
                            extr += c[k] * hist[k + 1]
                        _residual(start, rows, vals, y, extr, u_extr)
                        _residual(start, rows, vals, y, theta, u_now)
                        if _objective(u_extr, ws, extr, lam) < _objective(u_now, ws, theta, lam):
                            theta[:] = extr
                            u[:] = u_extr
                            ubar = 0.0
                            for i in range(n):
                                ubar += ws[i] * u[i]
    b0 = ym
    for j in range(d):
        b0 -= xm[j] * theta[j]
    return b0, theta


def lambda_max(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """Smallest penalty at which every coefficient is zero."""
    ws = w / w.sum()
    xc = X - ws @ X
    return float(np.max(np.abs(xc.T @ (ws * (y - ws @ y))))) if X.shape[1] else 0.0


class PartialRidge:
    """Lasso + partial ridge (Liu, Xu and Li): least squares with a ridge penalty lam2 only
    on the coefficients the lasso did not select (intercept unpenalised), for one design
    ``X`` and weights ``w``.  rBLPR refits it once per bootstrap replicate with new
    responses and selections; the weighted Gram matrix is the same every time, so it is
    formed once (on many groups, forming it would be much of a fit's cost).

    The system of a fit is ``A = B - lam2 E_S E_S'`` with ``B = gram + (lam2 + 1e-10) I``
    the same for every replicate and ``E_S`` the columns of the intercept and the selected
    coefficients.  With few of those, a fit inverts B once per lam2 and solves only an
    |S| x |S| system (Woodbury's identity): O(p^2 + |S|^3) per replicate instead of the
    O(p^3) of a dense solve, which matters because with one identity feature per group p
    exceeds the number of groups (thousands of groups make the dense solves of the
    bootstrap take longer than everything else).  A solution whose residual is not small
    is recomputed by the dense solve; ``dense=True`` always takes the dense solve
    (``make bench`` measures the difference).
    """

    def __init__(self, X: np.ndarray, w: np.ndarray, *, dense: bool = False) -> None:
        self._dense = dense
        self._ws = w / w.sum()
        self._Xa = np.column_stack([np.ones(len(w)), X])
        self._gram = (self._Xa.T * self._ws) @ self._Xa
        self._b_inv: dict[float, np.ndarray] = {}
        self.dense_solves = 0  # fits that took the dense solve

    def fit(self, y: np.ndarray, selected: np.ndarray, lam2: float) -> tuple[float, np.ndarray]:
        """``(intercept, coefficients)`` for responses ``y``."""
        keep = np.concatenate([[True], np.asarray(selected, bool)])
        pen = np.where(keep, 0.0, lam2) + 1e-10
        b = self._Xa.T @ (self._ws * y)
        n_s, p = int(keep.sum()), len(keep)
        coef = None
        if lam2 > 0 and 2 * n_s < p and not self._dense:
            if lam2 not in self._b_inv:
                self._b_inv[lam2] = np.linalg.inv(self._gram + (lam2 + 1e-10) * np.eye(p))
            b_inv = self._b_inv[lam2]
            u = b_inv @ b
            cols = b_inv[:, keep]
            t = np.linalg.solve(np.eye(n_s) / lam2 - cols[keep], u[keep])
            coef = u + cols @ t
            resid = self._gram @ coef + pen * coef - b
            if not np.linalg.norm(resid) <= 1e-9 * max(np.linalg.norm(b), 1e-300):
                coef = None
        if coef is None:
            # A is positive definite (every diagonal term gets at least 1e-10), so an LU
            # solve gives lstsq's solution (whose cutoff, eps x size, lies below 1e-10 / the
            # largest eigenvalue for standardised features) at a tenth of its SVD's cost
            coef = np.linalg.solve(self._gram + np.diag(pen), b)
            self.dense_solves += 1
        return coef[0], coef[1:]
