"""Ratios."""

from __future__ import annotations


def ratio(a, b):
    result = a / b
    return result
