"""Reproductions of the source papers' experiments, shared by notebooks, specs and tests."""

from . import foulds

__all__ = ["foulds"]
