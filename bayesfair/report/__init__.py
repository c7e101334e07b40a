"""Reports: a self-contained HTML document of sections, and the plots that fill them."""

from .html import Figure, KeyValues, Report, Section, Table, Text
from .plots import jeffreys_interval, plot_group_rates

__all__ = [
    "Figure",
    "KeyValues",
    "Report",
    "Section",
    "Table",
    "Text",
    "jeffreys_interval",
    "plot_group_rates",
]
