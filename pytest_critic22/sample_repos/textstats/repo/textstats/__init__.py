"""Small statistics helpers (a sample repository for pytest-critic22)."""

from textstats.stats import clamp, mean, median, mode

__all__ = ["clamp", "mean", "median", "mode"]
