"""Paging helpers (a sample repository for pytest-critic22 with a generated _version.py)."""

from ._version import __version__
from .core import page, page_count

__all__ = ["__version__", "page", "page_count"]
