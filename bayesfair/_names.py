"""Names of model variables and dimensions built from column names.

PyMC refuses a variable name containing ``/`` (and one ending in ``:``), and netCDF, which
ArviZ writes, refuses ``/`` in variable and dimension names.  A protected column may be
called ``race/ethnicity``; its variables are then named ``beta_race_ethnicity``.  Every
column keeps a distinct name (a numbered suffix where two would coincide), and the map is
deterministic, so the same columns always give the same variable names.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["safe_names"]


def _safe(name: str) -> str:
    out = str(name).replace("/", "_")
    return out + "_" if out.endswith(":") else out


def safe_names(names: Iterable[str]) -> dict[str, str]:
    """Column name -> a name that PyMC and netCDF accept, distinct for distinct columns.

    Parameters
    ----------
    names : iterable of str

    Returns
    -------
    dict

    Examples
    --------
    >>> from bayesfair._names import safe_names
    >>> safe_names(["race/ethnicity", "race_ethnicity", "sex"])
    {'race/ethnicity': 'race_ethnicity_2', 'race_ethnicity': 'race_ethnicity', 'sex': 'sex'}
    """
    names = list(names)
    taken = {n for n in names if _safe(n) == n}
    out: dict[str, str] = {}
    for name in names:
        safe = _safe(name)
        if safe != name:
            base, k = safe, 1
            while safe in taken:
                k += 1
                safe = f"{base}_{k}"
            taken.add(safe)
        out[name] = safe
    return out
