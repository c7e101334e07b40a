"""Sphinx configuration of the bayesfair documentation (``make docs``)."""

from __future__ import annotations

import bayesfair

project = "bayesfair"
author = "bayesfair developers"
copyright = "2026, bayesfair developers"
release = bayesfair.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
]
autosummary_generate = True
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_title = f"bayesfair {release}"

# Every public docstring is checked (the build runs with -W in the test suite): parameters
# documented and none that do not exist, a Returns section, no public object without a
# docstring.  Result classes, whose fields are documented under Attributes, opt out of
# PR01 on their class line (``# numpydoc ignore=PR01``).
numpydoc_validation_checks = {"PR01", "PR02", "RT01", "GL08"}
numpydoc_validation_exclude = {r"\.__init__$"}
