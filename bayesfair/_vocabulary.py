"""The package's one vocabulary: shared defaults, interval columns and renamed arguments.

Every public entry point takes its interval level, resample count, seed and Dirichlet
pseudo-count under the names and with the defaults below; ``tests/contracts/test_vocabulary.py``
checks every public signature against them, and ``docs/guide/concepts.rst`` explains
the choices.  An argument that was renamed raises a ``TypeError`` that names its new
name, so that no old call silently means something else.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TypeVar

__all__ = [
    "LEVEL",
    "N_REPLICATES",
    "N_RESAMPLES",
    "N_VARIANCE_RESAMPLES",
    "PSEUDO_COUNT",
    "ROLE_RENAMES",
    "interval_columns",
    "moved_options",
    "renamed_arguments",
]

#: Default probability of every interval (credible or confidence) in the package.
LEVEL = 0.90
#: Default number of resamples (permutations or bootstrap replicates) of every test or interval.
N_RESAMPLES = 999
#: Default number of inner bootstrap resamples behind a studentizing standard error.
N_VARIANCE_RESAMPLES = 200
#: Default number of replicate tables (each refitted) of an interval's coverage check.
N_REPLICATES = 200
#: Default Dirichlet pseudo-count added to each outcome of each intersection.
PSEUDO_COUNT = 0.5

#: The fairlearn-style role names the per-group estimates took, and the package's names.
ROLE_RENAMES = {
    "sensitive_features": "protected",
    "y_true": "outcome",
    "y_pred": "decision",
    "y_score": "score",
}

F = TypeVar("F", bound=Callable)


def renamed_arguments(**renames: str) -> Callable[[F], F]:
    """Make ``func`` refuse old argument names with a ``TypeError`` that names the new one.

    Python would refuse them anyway ("unexpected keyword argument"); the message says
    what the argument is now called, so that an old call fails in one clear line and
    never silently means something else.

    Parameters
    ----------
    **renames : str
        ``old_name="new_name"`` for each renamed argument.

    Returns
    -------
    callable
        A decorator.

    Examples
    --------
    >>> @renamed_arguments(prob="level")
    ... def f(*, level=0.9):
    ...     return level
    >>> f(prob=0.5)
    Traceback (most recent call last):
    ...
    TypeError: f() got `prob=`, which is now called `level=` (docs: Concepts, vocabulary)
    """

    return _refusing(
        {
            old: f"is now called `{new}=` (docs: Concepts, vocabulary)"
            for old, new in renames.items()
        }
    )


def moved_options(moves: dict[str, str], into: str | None = None) -> Callable[[F], F]:
    """Make ``func`` refuse options that moved into option objects, with a ``TypeError``
    that shows how each is given now.

    Parameters
    ----------
    moves : dict
        ``{old_name: "Object(option=...)"}`` with ``into``, the argument that takes a list
        of such objects; without it ``{old_name: "argument=Object(option=...)"}``.
    into : str, optional
        The argument taking a list of objects (``estimators``).

    Returns
    -------
    callable
        A decorator.

    Examples
    --------
    >>> @moved_options({"hb_draws": "HierarchicalBayes(draws=...)"}, into="estimators")
    ... def f(*, estimators=()):
    ...     return estimators
    >>> f(hb_draws=10)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: f() got `hb_draws=`, ...: `estimators=[..., HierarchicalBayes(draws=...)]`
    >>> @moved_options({"penalty": "search=SubsetSearch(penalty=...)"})
    ... def g(*, search=None):
    ...     return search
    >>> g(penalty=2)
    Traceback (most recent call last):
    ...
    TypeError: g() got `penalty=`, which is now given as `search=SubsetSearch(penalty=...)`
    """
    if into is None:
        return _refusing({old: f"is now given as `{new}`" for old, new in moves.items()})
    return _refusing(
        {
            old: f"is now an option of its estimator: `{into}=[..., {new}]`"
            for old, new in moves.items()
        }
    )


def _refusing(said: dict[str, str]) -> Callable[[F], F]:
    """A decorator refusing each keyword ``old`` of ``said`` with the one-line TypeError
    "f() got `old=`, which <said[old]>"; refused at decoration if ``func`` still takes it."""

    def decorate(func: F) -> F:
        clash = [old for old in said if old in inspect.signature(func).parameters]
        if clash:
            raise ValueError(f"{func.__qualname__} still takes {clash}")

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            for old, what in said.items():
                if old in kwargs:
                    raise TypeError(f"{func.__qualname__}() got `{old}=`, which {what}")
            return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def interval_columns(lower, upper, level: float) -> dict[str, object]:
    """The columns of an interval in a table: ``lower``, ``upper`` and ``level``.

    Parameters
    ----------
    lower, upper : scalar or array-like
        The interval's ends.
    level : float
        Its probability (credible mass or confidence level).

    Returns
    -------
    dict
        ``{"lower": lower, "upper": upper, "level": level}``, to splat into a table's row.
    """
    return {"lower": lower, "upper": upper, "level": float(level)}
