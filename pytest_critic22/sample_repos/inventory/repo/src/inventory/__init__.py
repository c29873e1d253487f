"""A tiny stock keeper (a sample repository for pytest-critic22, src layout)."""

from inventory.store import Inventory

__all__ = ["Inventory"]
