"""Counting characters."""

from __future__ import annotations


def count(text: str) -> int:
    return len(text)
