"""A thread-safe counter (a sample repository for pytest-critic22's trace replay)."""

from counterkit.counter import Counter

__all__ = ["Counter"]
