"""Reports: a self-contained HTML document of sections, and the plots that fill them."""

from .answers import add_answers_section, audit_answers
from .bayesian import add_bayesian_section
from .disaggregated import add_disaggregated_section
from .frequentist import add_frequentist_section, frequentist_tests
from .html import Figure, KeyValues, Report, Section, Table, Text
from .intervals import add_interval_section, interval_check_words
from .plots import plot_group_rates, plot_posterior_boxes, plot_posterior_rates
from .scan import add_scan_section, scan_audit_data, scans_table

__all__ = [
    "Figure",
    "KeyValues",
    "Report",
    "Section",
    "Table",
    "Text",
    "add_answers_section",
    "add_bayesian_section",
    "add_disaggregated_section",
    "add_frequentist_section",
    "add_interval_section",
    "add_scan_section",
    "audit_answers",
    "frequentist_tests",
    "interval_check_words",
    "plot_group_rates",
    "plot_posterior_boxes",
    "plot_posterior_rates",
    "scan_audit_data",
    "scans_table",
]
