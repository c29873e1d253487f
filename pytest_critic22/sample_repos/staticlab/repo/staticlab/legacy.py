"""Old entry points kept for callers."""

from __future__ import annotations


def legacy_total(values):
    return sum(values)


def modern_total(values):
    return sum(values)
