"""Text from the data (group labels, column and metric names) drawn by matplotlib.

matplotlib reads text between two ``$`` as mathtext: an income band ``"$50K-$75K"`` would
be drawn as an italic ``50K-75K`` and ``"$x^$"`` would stop the figure with a parser error.
Every label that comes from the user's data passes through :func:`literal`, which escapes
``$`` so that it is drawn as it is written.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["literal", "literals"]


def literal(text: object) -> str:
    """``str(text)`` with every ``$`` escaped, so matplotlib draws it as written.

    Parameters
    ----------
    text : object

    Returns
    -------
    str

    Examples
    --------
    >>> from bayesfair._plotting import literal
    >>> literal("$50K-$75K")
    '\\\\$50K-\\\\$75K'
    """
    return str(text).replace("$", r"\$")


def literals(texts: Iterable[object]) -> list[str]:
    """:func:`literal` of every item.

    Parameters
    ----------
    texts : iterable

    Returns
    -------
    list of str
    """
    return [literal(t) for t in texts]
