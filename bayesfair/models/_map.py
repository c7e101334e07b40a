"""The MAP estimate of a model of P(y|s): its log posterior and gradient compiled once per
model structure (PyTensor), minimised by L-BFGS-B with restarts."""

from __future__ import annotations

from typing import Any

import numpy as np

#: one compiled objective per model structure (cache key), shared by every fit of it
_MAP_CACHE: dict[tuple, Any] = {}


def _minimize(cost, x0: np.ndarray, max_restarts: int = 5):
    """L-BFGS-B on ``cost`` (value and gradient), restarted from its own end point while
    the gradient is not yet small and a restart still lowers the cost: L-BFGS-B can stop
    on its relative-reduction test far from a stationary point (HLR's joint MAP is tested
    to end at one: ``tests/models/test_models.py -k marginal_mode_in_every``)."""
    from scipy.optimize import minimize

    res = minimize(cost, x0, jac=True, method="L-BFGS-B")
    for _ in range(max_restarts):
        if np.max(np.abs(res.jac), initial=0.0) < 1e-3:
            break
        again = minimize(cost, res.x, jac=True, method="L-BFGS-B")
        if not again.fun < res.fun - 1e-9 * max(1.0, abs(res.fun)):
            break
        res = again
    return res


class _MapObjective:
    """The MAP problem of one model structure, compiled once: the log density (without
    Jacobian, as ``pymc.find_MAP``) and its gradient over the unconstrained values, and
    ``p`` as a function of them.  The counts are ``pm.Data``, set before each solve."""

    def __init__(self, model) -> None:
        from pymc.blocking import DictToArrayBijection

        self.model = model
        self.start = model.initial_point()
        raveled = DictToArrayBijection.map(self.start)
        self.x0, self.info = raveled.data, raveled.point_map_info
        # the log density and its gradient (raveled in the start point's order) by one
        # compiled call: an optimiser asks for both at every step
        import pytensor
        import pytensor.tensor as pt

        values = {v.name: v for v in model.value_vars}
        wrt = [values[name] for name, *_ in self.info]
        logp = model.logp(jacobian=False)
        grad = pt.concatenate([g.ravel() for g in pytensor.grad(logp, wrt)])
        self.logp_dlogp = DictToArrayBijection.mapf(
            model.compile_fn([logp, grad], inputs=wrt, on_unused_input="ignore"), self.start
        )
        # ``p`` as a graph of the value variables (model["p"] itself would draw its
        # random inputs); unobserved_value_vars rewrites deterministics that way
        p_graph = next(v for v in model.unobserved_value_vars if v.name == "p")
        self.p_fn = model.compile_fn(
            p_graph, inputs=model.value_vars, on_unused_input="ignore", point_fn=True
        )

    def solve(
        self, n: np.ndarray, k: np.ndarray, restarts: int = 0, jitter: float = 0.0, rng=None
    ) -> dict[str, np.ndarray]:
        """The MAP (a point: value variable name -> value) from the model's initial
        point and from ``restarts`` random starts (each coordinate of the initial point
        plus Normal(0, ``jitter``) noise); the start that reaches the highest log
        density wins.  A non-convex model needs restarts: a ReLU network started
        with every weight 0 sits on a stationary point (no unit is active, so no
        gradient reaches any weight)."""
        import pymc as pm
        from pymc.blocking import DictToArrayBijection, RaveledVars

        with self.model:
            pm.set_data({"n": n, "k": k})
        info = self.info

        def cost(x):
            lp, grad = self.logp_dlogp(RaveledVars(x, info))
            return -float(lp), -np.asarray(grad, dtype=float)

        starts = [self.x0.copy()]
        if restarts:
            rng = np.random.default_rng(rng)
            starts += [self.x0 + rng.normal(0.0, jitter, self.x0.shape) for _ in range(restarts)]
        best = min((_minimize(cost, x) for x in starts), key=lambda r: r.fun)
        return DictToArrayBijection.rmap(RaveledVars(best.x, info), self.start)

    def p(self, point: dict[str, np.ndarray]) -> np.ndarray:
        """P(y=1|s) at ``point``."""
        return np.asarray(self.p_fn(point), dtype=float)

    def constrained(self, point: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``point`` as the free variables' own values (name -> value), the form
        ``pymc.fit(start=...)`` takes: it transforms them itself, and fails on some
        transformed values given directly (a zero-sum vector's, in PyMC 5)."""
        if not hasattr(self, "_constrained_fn"):
            graphs = {v.name: v for v in self.model.unobserved_value_vars}
            self._names = [rv.name for rv in self.model.free_RVs]
            self._constrained_fn = self.model.compile_fn(
                [graphs[n] for n in self._names],
                inputs=self.model.value_vars,
                on_unused_input="ignore",
                point_fn=True,
            )
        return dict(zip(self._names, self._constrained_fn(point), strict=True))
