"""A self-contained HTML report: escaped text, tables and embedded PNG figures.

Later capabilities extend a report by adding sections; nothing in a report
refers to the network.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import io
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure as _MplFigure

from .._output import (
    GENERATOR_MARK,
    MANIFEST,
    MANIFEST_COLUMNS,
    atomic_write_text,
    check_output_file,
    neutralise_formulas,
    replace_folder,
)

__all__ = ["Figure", "KeyValues", "Report", "Section", "Table", "Text"]

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;
margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{border-bottom:2px solid #335;padding-bottom:.2em}
h2{margin-top:2em;color:#335}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
.scroll{overflow-x:auto;max-width:100%}
th,td{border:1px solid #ccd;padding:.25em .6em;text-align:right}
td{white-space:nowrap}
table.wrap td{white-space:normal;min-width:6em;max-width:34em;text-align:left}
table.wrap th{text-align:left}
ol.toc{columns:3;column-gap:2em;font-size:.9em;margin:.5em 0}
th{background:#eef}
td:first-child,th:first-child{text-align:left}
caption{caption-side:bottom;font-size:.85em;color:#555;text-align:left;padding-top:.3em}
figure{margin:1em 0}figcaption{font-size:.85em;color:#555}
img{max-width:100%}
.meta{color:#666;font-size:.85em}
dl.kv{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}
dl.kv dt{font-weight:600}dl.kv dd{margin:0}
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


@dataclass
class Text:
    """A paragraph of plain text (escaped).

    Parameters
    ----------
    text : str
    """

    text: str

    def to_html(self) -> str:
        """The escaped paragraph.

        Returns
        -------
        str
        """
        return f"<p>{_e(self.text)}</p>"


@dataclass
class Table:
    """A DataFrame rendered as an HTML table; every cell and label is escaped.

    A meaningful index (named, labels, or several levels: group labels, a pivot's rows) is
    shown, and saved, as the first column(s); an unnamed integer one (row numbers, also
    after filtering) is left out.

    Parameters
    ----------
    frame : pandas.DataFrame
    caption : str, optional
    float_format : str, default "{:.4g}"
        Format of floating-point cells.
    max_rows : int, default 200
        Rows shown (the caption says how many were left out).
    wrap : bool, default False
        Let text cells wrap (for sentences), instead of keeping each on one line.
    """

    frame: pd.DataFrame
    caption: str | None = None
    float_format: str = "{:.4g}"
    max_rows: int = 200
    wrap: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.frame, pd.Series):
            self.frame = self.frame.to_frame()
        if not isinstance(self.frame, pd.DataFrame):
            raise TypeError(f"`frame` must be a pandas DataFrame, got {type(self.frame).__name__}")
        if (
            isinstance(self.max_rows, bool)
            or not isinstance(self.max_rows, int)
            or self.max_rows < 1
        ):
            raise ValueError(f"`max_rows` must be a positive integer, got {self.max_rows!r}")
        try:
            self.float_format.format(1.5)
        except (AttributeError, ValueError, IndexError, KeyError, TypeError) as err:
            raise ValueError(
                f"`float_format` must be a format string such as '{{:.4g}}', got "
                f"{self.float_format!r} ({err})"
            ) from None

    @property
    def shown(self) -> pd.DataFrame:
        """``frame`` with a meaningful index moved into columns."""
        df = self.frame
        numbers = df.index.nlevels == 1 and pd.api.types.is_integer_dtype(df.index.dtype)
        return df if numbers and df.index.name is None else df.reset_index()

    def to_html(self) -> str:
        """The table, at most ``max_rows`` rows (the caption says when rows were cut).

        Returns
        -------
        str
        """
        df = self.shown
        if not isinstance(df.columns, pd.MultiIndex) and df.columns.name is not None:
            # a pivot's column-axis name: with index=False pandas still renders it, as the
            # header of an extra, empty first column
            df = df.rename_axis(columns=None)
        note = ""
        if len(df) > self.max_rows:
            note = (
                f" (first {self.max_rows} of {len(df)} rows; Report.save_tables or the "
                "command line's --tables writes them all)"
            )
            df = df.head(self.max_rows)
        body = df.to_html(
            index=False,
            escape=True,
            border=0,
            na_rep="—",
            float_format=lambda v: self.float_format.format(v),
            classes="wrap" if self.wrap else None,
        )
        if self.caption or note:
            cap = f"<caption>{_e((self.caption or '') + note)}</caption>"
            body = body.replace(">", ">" + cap, 1) if body.startswith("<table") else body
        # a wide table scrolls inside the page instead of running off its right edge
        return f'<div class="scroll">{body}</div>'


#: diagnostics that are counts or sample sizes
DIAGNOSTIC_COUNTS = ("divergences", "ess_bulk_min", "ess_tail_min")


def whole_numbers(frame: pd.DataFrame, columns=DIAGNOSTIC_COUNTS) -> pd.DataFrame:
    """A copy of ``frame`` whose ``columns`` (those present) show as whole numbers -- counts
    and effective sample sizes -- instead of through a table's float format (which shows an
    ESS of 1498 as 1.5e+03 or 1498.000); missing values stay missing."""
    out = frame.copy()
    for c in columns:
        if c in out:
            v = pd.to_numeric(out[c], errors="coerce").astype(float)
            out[c] = [f"{x:.0f}" if math.isfinite(x) else None for x in v]
    return out


@dataclass
class Figure:
    """A matplotlib figure embedded as a base64 PNG.

    Parameters
    ----------
    figure : matplotlib.figure.Figure
    caption : str, optional
    dpi : int, default 110
    """

    figure: _MplFigure
    caption: str | None = None
    dpi: int = 110

    def __post_init__(self) -> None:
        if not isinstance(self.figure, _MplFigure):
            raise TypeError(
                f"`figure` must be a matplotlib Figure, got {type(self.figure).__name__}"
            )

    def to_html(self) -> str:
        """The figure as an embedded PNG.

        Returns
        -------
        str
        """
        buf = io.BytesIO()
        self.figure.savefig(buf, format="png", dpi=self.dpi, bbox_inches="tight")
        data = base64.b64encode(buf.getvalue()).decode("ascii")
        alt = _e(self.caption or "figure")
        cap = f"<figcaption>{_e(self.caption)}</figcaption>" if self.caption else ""
        return f'<figure><img alt="{alt}" src="data:image/png;base64,{data}"/>{cap}</figure>'


@dataclass
class KeyValues:
    """A definition list of labelled values.

    Parameters
    ----------
    items : mapping
        Label -> value (both shown as escaped text).
    """

    items: Mapping[str, object]

    def __post_init__(self) -> None:
        if not isinstance(self.items, Mapping):
            raise TypeError(
                f"`items` must be a mapping of label -> value, got {type(self.items).__name__}"
            )

    def to_html(self) -> str:
        """The escaped definition list.

        Returns
        -------
        str
        """
        rows = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in self.items.items())
        return f'<dl class="kv">{rows}</dl>'


Block = Text | Table | Figure | KeyValues


@dataclass
class Section:
    """A titled list of blocks.

    Parameters
    ----------
    title : str
    blocks : list, optional
        Blocks to start with (:meth:`add` appends more).
    """

    title: str
    blocks: list[Block] = field(default_factory=list)

    def add(self, block: Block) -> Section:
        """Append a block (anything with ``to_html()``).

        Parameters
        ----------
        block : Text, Table, Figure or KeyValues

        Returns
        -------
        Section
            ``self``, so that calls chain.
        """
        if not hasattr(block, "to_html"):
            raise TypeError(f"a report block needs to_html(), got {type(block).__name__}")
        self.blocks.append(block)
        return self

    def to_html(self, anchor: str | None = None) -> str:
        """The section's heading and blocks.

        Parameters
        ----------
        anchor : str, optional
            ``id`` of the section, for links from the table of contents.

        Returns
        -------
        str
        """
        inner = "\n".join(b.to_html() for b in self.blocks)
        ident = f' id="{_e(anchor)}"' if anchor else ""
        return f"<section{ident}><h2>{_e(self.title)}</h2>\n{inner}\n</section>"


class Report:
    """An HTML audit report built from sections.

    Parameters
    ----------
    title : str
    subtitle : str, optional

    Examples
    --------
    >>> import pandas as pd
    >>> from bayesfair.report import Report, Table, Text
    >>> rep = Report("Audit <draft>")
    >>> _ = rep.section("Data").add(Text("a & b")).add(Table(pd.DataFrame({"x": [1]})))
    >>> "Audit &lt;draft&gt;" in rep.to_html() and "a &amp; b" in rep.to_html()
    True
    """

    def __init__(self, title: str, subtitle: str | None = None) -> None:
        self.title = title
        self.subtitle = subtitle
        self.sections: list[Section] = []

    def section(self, title: str) -> Section:
        """Append a new section and return it.

        Parameters
        ----------
        title : str

        Returns
        -------
        Section
        """
        sec = Section(title)
        self.sections.append(sec)
        return sec

    def to_html(self, buf: None = None) -> str:
        """The whole self-contained HTML document.

        Parameters
        ----------
        buf : None
            Not taken: a file is written by :meth:`save` (atomically, never over a file
            it did not write unless told), so a path here is refused with that advice
            rather than written as ``DataFrame.to_html(buf)`` would.

        Returns
        -------
        str
        """
        if buf is not None:
            raise TypeError(
                "Report.to_html() returns the document as a string; to write it to a file, "
                f"use report.save({buf!r}) (overwrite=True to replace a file)"
            )
        from .. import __version__

        stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        sub = f"<p>{_e(self.subtitle)}</p>" if self.subtitle else ""
        # numbered anchors: section titles may repeat, and need not make valid ids
        toc = "".join(
            f'<li><a href="#section-{i}">{_e(s.title)}</a></li>'
            for i, s in enumerate(self.sections, 1)
        )
        body = "\n".join(s.to_html(f"section-{i}") for i, s in enumerate(self.sections, 1))
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"/>'
            f'{GENERATOR_MARK} {_e(__version__)}"/>'
            f"<title>{_e(self.title)}</title><style>{_CSS}</style></head><body>"
            f"<h1>{_e(self.title)}</h1>{sub}"
            f'<p class="meta">bayesfair {_e(__version__)} · generated {_e(stamp)}</p>'
            f'<nav><ol class="toc">{toc}</ol></nav>\n{body}\n</body></html>\n'
        )

    def save(self, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
        """Write the report atomically and return its absolute path.

        The document goes to a temporary file in the same folder, which is renamed over
        ``path`` once complete: a write that fails (a full disk, an interrupt) leaves the
        previous file intact.  An existing file is replaced when it is a previous
        bayesfair report, or when ``overwrite`` is True.

        Parameters
        ----------
        path : str or os.PathLike
            A file path; missing folders are created.
        overwrite : bool, default False
            Replace an existing file that is not a bayesfair report.

        Returns
        -------
        pathlib.Path

        Raises
        ------
        ValueError
            When ``path`` is a folder, lies under a file, is a device, or is another
            existing file and ``overwrite`` is False.
        """
        path = check_output_file(path, overwrite=overwrite, argument="path")
        text = self.to_html()
        path.parent.mkdir(parents=True, exist_ok=True)
        return atomic_write_text(path, text)

    def save_tables(self, folder: str | os.PathLike) -> Path:
        """Write every table of the report in full as a CSV file, with an index.

        The HTML shows at most ``max_rows`` rows of a table; the CSV files hold every row,
        unrounded, for an auditor's own analysis.  Files are named
        ``<section>-<table>_<section title>.csv`` (numbers as in the report's table of
        contents) and listed in ``index.csv`` with their section, caption and row count.
        The folder holds one audit: it is built beside ``folder`` and swapped in whole,
        replacing a previous set of tables (never a folder holding other files, which is
        refused). Text cells that a spreadsheet would run as a formula (``=``, ``+``,
        ``-``, ``@``) are prefixed with ``'``.

        Parameters
        ----------
        folder : str or os.PathLike
            Absent, empty, or a previous set of tables (created if missing).

        Returns
        -------
        pathlib.Path
            The absolute path of ``index.csv``.

        Examples
        --------
        >>> import tempfile
        >>> import pandas as pd
        >>> from bayesfair.report import Report, Table
        >>> rep = Report("Audit")
        >>> _ = rep.section("Rates by group").add(Table(pd.DataFrame({"x": range(500)})))
        >>> index = pd.read_csv(rep.save_tables(tempfile.mkdtemp()))
        >>> index[["file", "rows"]].values.tolist()
        [['01-1_rates-by-group.csv', 500]]
        """
        listed = []

        def write(tmp: Path) -> None:
            for i, sec in enumerate(self.sections, 1):
                tables = [b for b in sec.blocks if isinstance(b, Table)]
                slug = re.sub(r"[^a-z0-9]+", "-", sec.title.lower()).strip("-")[:60] or "section"
                for j, table in enumerate(tables, 1):
                    name = f"{i:02d}-{j}_{slug}.csv"
                    neutralise_formulas(table.shown).to_csv(tmp / name, index=False)
                    listed.append(
                        {
                            "file": name,
                            "section": sec.title,
                            "caption": table.caption,
                            "rows": len(table.frame),
                        }
                    )
            index = pd.DataFrame(listed, columns=MANIFEST_COLUMNS)
            neutralise_formulas(index).to_csv(tmp / MANIFEST, index=False)

        return replace_folder(folder, write) / MANIFEST
