"""Release notes."""

from __future__ import annotations


def latest():
    return "0.0.1: first release"
