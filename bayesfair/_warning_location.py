"""Where the package's warnings point: at the user's line, whichever public function and how
many of the package's layers (argument-renaming wrappers, the audit calling the tests) the
call went through."""

from __future__ import annotations

import inspect
import os

__all__ = ["user_stacklevel"]

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn`` called by this function's caller that names
    the first frame outside the package: the line of the user's code that called it.

    A fixed ``stacklevel`` counts the frames of one path; the same warning reached through
    a decorator or through :func:`bayesfair.audit` then points inside the package, and an
    editor or ``python -W error`` shows the package's line instead of the user's (pandas
    finds the level the same way, ``find_stack_level``).

    Returns
    -------
    int

    Examples
    --------
    >>> import warnings
    >>> from bayesfair._warning_location import user_stacklevel
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("from here", UserWarning, stacklevel=user_stacklevel())
    >>> caught[0].filename.startswith("<doctest")
    True
    """
    frame = inspect.currentframe()
    frame = frame.f_back if frame is not None else None  # the caller, which warns
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    return level
