"""The NUTS back-end every Bayesian fit of the package goes through (the models of P(y|s),
hierarchical Bayes of the per-group estimates, the posterior bias scan): nutpie when
installed, on the package's compiled densities where they exist, else PyMC's sampler; and
the warnings a fit raises."""

from __future__ import annotations

import functools
import logging
import warnings
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

from ._warning_location import user_stacklevel

__all__ = ["SamplerWarning", "quiet_pytensor", "sample_nuts"]


class SamplerWarning(UserWarning):
    """Divergences, R-hat above 1.01 or low ESS in a fit; or nutpie sampling the
    compiled PyMC model because it does not take the package's compiled densities."""


@functools.cache
def _warn_once(message: str) -> None:
    """A :class:`SamplerWarning` once per process and message."""
    warnings.warn(message, SamplerWarning, stacklevel=user_stacklevel())


def _have_nutpie() -> bool:
    try:
        import nutpie  # noqa: F401
    except ImportError:
        return False
    return True


def sample_nuts(
    pymc_model: Callable[[], Any],
    closed_form: Callable[[], Any] | None = None,
    *,
    draws: int,
    tune: int,
    chains: int,
    seed: int,
    target_accept: float = 0.8,
    use_nutpie: bool | None = None,
    compile_nutpie: Callable[[], Any] | None = None,
):
    """NUTS draws of a model, with the fastest backend at hand.

    With nutpie (``use_nutpie`` None: when installed): on ``closed_form()``, a model
    from the package's compiled densities (:mod:`bayesfair._nutpie`), when given,
    not None, and the installed nutpie takes it; otherwise on ``compile_nutpie()`` (default:
    ``nutpie.compile_pymc_model(pymc_model())``).  Without: PyMC's sampler on
    ``pymc_model()``.  Returns the ``arviz.InferenceData``.
    """
    import pymc as pm

    if use_nutpie is None:
        use_nutpie = _have_nutpie()
    if use_nutpie:
        import nutpie

        from ._nutpie import available, unavailable_reason

        if closed_form is not None and not available():
            _warn_once(
                "bayesfair's compiled densities are off: "
                f"{unavailable_reason()}; compiling the PyMC model instead, which is "
                "slower to start (same posterior)"
            )
        compiled = closed_form() if closed_form is not None and available() else None
        closed = compiled is not None
        if compiled is None:
            if compile_nutpie is not None:
                compiled = compile_nutpie()
            else:
                compiled = nutpie.compile_pymc_model(pymc_model())
        return nutpie.sample(
            compiled,
            draws=draws,
            tune=tune,
            chains=chains,
            seed=seed,
            target_accept=target_accept,
            progress_bar=False,
            # the closed-form densities run in Python callbacks, which take the GIL on
            # every call: chains in parallel threads only wait for each other
            cores=1 if closed else chains,
            # as PyMC's sampler (discard_tuned_samples): the tuning draws are not posterior
            # draws, and kept they stored every variable (every group's rate) twice
            save_warmup=False,
        )
    with pymc_model():
        return pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=1,
            random_seed=seed,
            target_accept=target_accept,
            progressbar=False,
            compute_convergence_checks=False,
        )


@contextmanager
def quiet_pytensor():
    """PyMC's FutureWarnings and PyTensor's notes that its C backend links no BLAS, which
    the package's C-compiled functions (MAP and ADVI objectives) do not need: they
    multiply matrices of one row per intersection, and NUTS compiles through numba.  The
    notes are a UserWarning and, for a graph with a general matrix product (the neural
    network's layers), a log record of the ``pytensor.tensor.blas`` logger at WARNING
    level, which the logger's level hides here and only here."""
    blas_log = logging.getLogger("pytensor.tensor.blas")
    level = blas_log.level
    blas_log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            warnings.filterwarnings("ignore", "PyTensor could not link to a BLAS", UserWarning)
            yield
    finally:
        blas_log.setLevel(level)
