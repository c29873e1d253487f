"""Counting things in a running program (a sample repository for pytest-critic22)."""

from tally.counter import Counter, Histogram
from tally.parse import parse_line, parse_text
from tally.registry import Registry

__all__ = ["Counter", "Histogram", "Registry", "parse_line", "parse_text"]
