"""Reproductions of the source papers' experiments, shared by notebooks, specs and tests."""

from . import boxer, foulds, herlihy, intervals

__all__ = ["boxer", "foulds", "herlihy", "intervals"]
