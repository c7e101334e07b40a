"""Reproductions of the source papers' experiments, shared by notebooks, specs and tests."""

from . import boxer, foulds, herlihy

__all__ = ["boxer", "foulds", "herlihy"]
