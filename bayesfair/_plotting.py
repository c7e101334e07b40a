"""Text from the data (group labels, column and metric names) drawn by matplotlib.

matplotlib reads text between two ``$`` as mathtext: an income band ``"$50K-$75K"`` would
be drawn as an italic ``50K-75K`` and ``"$x^$"`` would stop the figure with a parser error.
Every label that comes from the user's data passes through :func:`literal`, which escapes
``$`` so that it is drawn as it is written.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["dot_plot", "literal", "literals", "new_axes"]


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


def new_axes(ax: object, *, figsize: tuple[float, float], count: int = 1, argument: str = "ax"):
    """The Axes a result's ``plot(ax=None)`` draws into: ``ax`` when given (checked), else a
    new pyplot figure's (so that a notebook shows it).  Every result's ``plot`` returns
    what this returns: one Axes, or with ``count`` > 1 an array of them.

    Parameters
    ----------
    ax : matplotlib.axes.Axes, sequence of them, or None
    figsize : (float, float)
        Size of a new figure.
    count : int, default 1
        Number of panels.
    argument : str, default "ax"
        The argument's name, for messages.

    Returns
    -------
    matplotlib.axes.Axes or numpy.ndarray of them
    """
    import numpy as np

    from ._validation import check_axes

    check_axes(ax, argument, count)
    if ax is not None:
        return ax if count == 1 else np.ravel(np.asarray(ax, dtype=object))
    import matplotlib.pyplot as plt

    _, axes = plt.subplots(1, count, figsize=figsize, squeeze=False)
    return axes[0, 0] if count == 1 else axes[0]


def dot_plot(ax, labels, values, lower=None, upper=None, *, label=None, color="C0", offset=0.0):
    """Horizontal dots (with interval bars when ``lower``/``upper`` are given), one row per
    label, top to bottom; the shared look of the per-group plots of the results.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    labels : sequence of str
    values, lower, upper : array-like
        NaN values are left out of the drawing (not of the axis).
    label : str, optional
        Legend entry.
    color : str, default "C0"
    offset : float, default 0
        Vertical shift, to draw two series side by side.

    Returns
    -------
    matplotlib.axes.Axes
    """
    import numpy as np

    y = np.arange(len(labels))[::-1] + offset
    v = np.asarray(values, float)
    if lower is not None and upper is not None:
        lo, hi = np.asarray(lower, float), np.asarray(upper, float)
        ok = np.isfinite(lo) & np.isfinite(hi) & np.isfinite(v)
        ax.errorbar(
            v[ok], y[ok], xerr=[v[ok] - lo[ok], hi[ok] - v[ok]], fmt="none", ecolor=color, lw=1
        )
    ok = np.isfinite(v)
    ax.plot(v[ok], y[ok], "o", color=color, ms=4, label=label)
    ax.set_yticks(np.arange(len(labels))[::-1], literals(labels), fontsize=7)
    ax.grid(axis="x", alpha=0.3)
    return ax
