"""Parsing with a guard."""

from __future__ import annotations

import json


def parse(text):
    if text is None:
        raise ValueError("nothing to parse")
    return json.loads(text)
