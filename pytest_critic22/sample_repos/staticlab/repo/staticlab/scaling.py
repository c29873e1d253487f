"""Scaling values."""

from __future__ import annotations


def scale(value, factor=2):
    return value * factor
