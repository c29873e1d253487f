"""Descriptive statistics over plain lists of numbers."""

from __future__ import annotations

from collections import Counter


def mean(values):
    if not values:
        raise ValueError("mean of empty data")
    return sum(values) / len(values)


def median(values):
    if not values:
        raise ValueError("median of empty data")

    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid]


def mode(values):
    if not values:
        raise ValueError("mode of empty data")
    counts = Counter(values)
    best = max(counts.values())
    return min(v for v, c in counts.items() if c == best)


def clamp(value, low, high):
    if low > high:
        raise ValueError("low must not exceed high")
    return max(low, min(value, high))
