"""The contract every public result honours.

``summary()`` returns a DataFrame (with the sampler diagnostics where sampling was involved),
``to_frame()`` the result's tidy table, and a notebook displays the summary as a table
(``_repr_html_``), with a warning line when a sampler's diagnostics call for one and the
result's ``notes`` (what its numbers do not hold, what was left out) where it has them.
"""

from __future__ import annotations

import html

import pandas as pd

__all__ = ["DIAGNOSTIC_COLUMNS", "ResultMixin", "diagnostics_warning", "worst_diagnostics"]

#: the sampler diagnostics a summary carries: the worst over its parameters and chains
DIAGNOSTIC_COLUMNS = ("r_hat_max", "ess_bulk_min", "ess_tail_min", "divergences")
#: thresholds above or below which a diagnostic is a warning (Vehtari et al. 2021)
R_HAT_LIMIT, ESS_LIMIT = 1.01, 400


def diagnostics_warning(frame: pd.DataFrame) -> str | None:
    """Words for the worst sampler diagnostics in ``frame`` (its diagnostic columns), or
    None when they are fine: R-hat above 1.01, a bulk or tail ESS below 400, divergences.

    Parameters
    ----------
    frame : pandas.DataFrame

    Returns
    -------
    str or None
    """
    problems = []
    if "r_hat_max" in frame and (frame["r_hat_max"] > R_HAT_LIMIT).any():
        problems.append(f"R-hat up to {frame['r_hat_max'].max():.3f} (above {R_HAT_LIMIT})")
    for col in ("ess_bulk_min", "ess_tail_min"):
        if col in frame and (frame[col] < ESS_LIMIT).any():
            problems.append(f"{col} down to {frame[col].min():.0f} (below {ESS_LIMIT})")
    if "divergences" in frame and (frame["divergences"] > 0).any():
        problems.append(f"{frame['divergences'].max():.0f} divergent transitions")
    if not problems:
        return None
    return "sampler diagnostics: " + "; ".join(problems) + "; the posterior may be unreliable"


def worst_diagnostics(diagnostics) -> dict[str, float]:
    """The worst of several fits' diagnostics (dicts as ``diagnostics_``): largest R-hat,
    smallest ESS, total divergences; empty when there is none (exact draws).

    Parameters
    ----------
    diagnostics : iterable of dict

    Returns
    -------
    dict
    """
    diagnostics = [d for d in diagnostics if d]
    if not diagnostics:
        return {}
    out = {}
    for col, reduce in (
        ("r_hat_max", max),
        ("ess_bulk_min", min),
        ("ess_tail_min", min),
        ("divergences", sum),
    ):
        values = [float(d[col]) for d in diagnostics if col in d]
        if values:
            out[col] = reduce(values)
    return out


class ResultMixin:
    """``to_frame()`` and notebook display for a result that has ``summary()``."""

    def to_frame(self) -> pd.DataFrame:
        """The result's tidy table (its summary, unless the result has a finer table).

        Returns
        -------
        pandas.DataFrame
        """
        return self.summary()

    def _repr_html_(self) -> str:
        summary = self.summary()
        warning = diagnostics_warning(summary)
        head = f"<p><b>{html.escape(type(self).__name__)}</b></p>"
        if warning:
            head += f'<p style="color:#a00">{html.escape(warning)}</p>'
        for note in getattr(self, "notes", None) or []:
            head += f'<p style="font-size:90%">{html.escape(str(note))}</p>'
        return head + summary.to_html(max_rows=60, index=False, border=0)
