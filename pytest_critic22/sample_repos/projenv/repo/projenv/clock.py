"""Durations between timestamps."""

from __future__ import annotations

from datetime import datetime


def elapsed_seconds(start: datetime, end: datetime) -> float:
    """Seconds from ``start`` to ``end``; negative when ``end`` is earlier."""
    return (end - start).total_seconds()


def describe(start: datetime, end: datetime) -> str:
    """``"3.0 s later"`` or ``"3.0 s earlier"``."""
    seconds = elapsed_seconds(start, end)
    direction = "later" if seconds >= 0 else "earlier"
    return f"{abs(seconds):.1f} s {direction}"
