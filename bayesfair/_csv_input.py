"""Reading an audit's CSV file, alike from the command line and from an audit spec: its text
encoding, field separator and decimal mark, the errors that say which option to set, and
categories spelt like pandas' missing-value markers kept as categories."""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable, Sequence

import pandas as pd

__all__ = ["read_csv"]


def read_csv(
    source: str | os.PathLike,
    *,
    encoding: str = "utf-8",
    sep: str = ",",
    decimal: str = ".",
    protected: Sequence[str] = (),
    how: Callable[[str, str], str],
) -> pd.DataFrame:
    """Read the CSV file ``source``; in the ``protected`` columns only an empty cell is
    missing, so that categories spelt like pandas' missing-value markers ("NA" for North
    America, "None", "null", "N/A") stay categories.

    ``how(option, value)`` says how the caller sets an option (``--sep ';'`` on the command
    line, ``[data] sep = ";"`` in a spec): the errors name it. A tab is given as ``"\\t"``
    or ``"tab"``.

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from bayesfair._csv_input import read_csv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "d.csv"
    >>> _ = path.write_text("region;y\\nNA;1\\nEU;0\\n")
    >>> read_csv(path, sep=";", protected=["region"], how=lambda o, v: o)["region"].tolist()
    ['NA', 'EU']
    """
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise ValueError(
            f"{encoding!r} is not a known text encoding: give one such as "
            f"{how('encoding', 'latin-1')} (or utf-8, cp1252)"
        ) from None
    sep = {"\\t": "\t", "tab": "\t"}.get(sep, sep)
    options = {"encoding": encoding, "sep": sep, "decimal": decimal}
    try:
        frame = pd.read_csv(source, **options)
    except UnicodeDecodeError as err:
        raise ValueError(
            f"{source} is not valid {encoding} text ({err.reason} at byte {err.start}); give "
            f"the file's encoding, for example {how('encoding', 'latin-1')}"
        ) from None
    except pd.errors.EmptyDataError:
        raise ValueError(f"{source} is empty; expected a CSV file with a header row") from None
    except pd.errors.ParserError as err:
        raise ValueError(f"{source} is not a readable CSV file ({err})") from None
    _check_separator(source, frame, sep, how)
    cols = [c for c in protected if c in frame.columns]
    if cols:
        raw = pd.read_csv(source, **options, usecols=cols, dtype=str, keep_default_na=False)
        for c in cols:
            literal = frame[c].isna().to_numpy() & (raw[c] != "").to_numpy()
            if literal.any():  # "NA" and the like are values here, not missing ones
                frame[c] = raw[c].where(raw[c] != "", None)
    return frame


def _check_separator(source, frame: pd.DataFrame, sep: str, how) -> None:
    """Refuse a file read as one column whose header holds another separator (a file
    separated by semicolons, as spreadsheets write them where the decimal mark is a comma,
    or by tabs), naming the option that reads it."""
    if frame.shape[1] != 1:
        return
    header = str(frame.columns[0])
    found = [(c, shown) for c, shown in ((";", ";"), ("\t", "\\t"), ("|", "|")) if c in header]
    if found and found[0][0] != sep:
        shown = found[0][1]
        raise ValueError(
            f"{source} was read as one column, {header!r}: its fields look separated by "
            f"'{shown}'; pass {how('sep', shown)}"
            + (
                f" (and {how('decimal', ',')} if its numbers have decimal commas)"
                if shown == ";"
                else ""
            )
        )
