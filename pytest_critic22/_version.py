"""The plugin's version: one place, read by the package, the SARIF driver and ``critic22 ab``."""

from __future__ import annotations

__version__ = "0.1.0"
