"""Reading files."""

from __future__ import annotations


def load(path):
    with open(path) as handle:
        return handle.read()
