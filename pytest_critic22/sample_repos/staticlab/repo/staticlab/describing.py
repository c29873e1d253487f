"""Describing values."""

from __future__ import annotations


def describe(value):
    kind = type(value).__name__
    return f"{kind}: {value!r}"
