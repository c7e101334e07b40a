"""The one place that touches ArviZ, so that a move to ArviZ 1 (DataTree) stays local.

The package sets its own interval defaults rather than inheriting ArviZ's.
"""

from __future__ import annotations

import numpy as np

__all__ = ["CI_PROB", "hdi"]

#: Default probability mass of credible intervals in bayesfair (ArviZ's default is 0.94).
CI_PROB = 0.90


def hdi(draws: np.ndarray, prob: float = CI_PROB) -> np.ndarray:
    """Highest-density interval over the leading (sample) axis of ``draws``: shape (2, ...)."""
    import arviz as az

    draws = np.asarray(draws, dtype=float)
    # ArviZ 0.2x reads arrays as (chain, draw, *shape); one chain of all samples.
    out = az.hdi(draws.reshape(1, draws.shape[0], *draws.shape[1:]), hdi_prob=prob)
    return np.moveaxis(np.asarray(out), -1, 0)
