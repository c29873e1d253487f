"""Splitting a sequence into numbered pages."""

from __future__ import annotations


def page_count(total, per_page):
    """How many pages hold ``total`` items, ``per_page`` to a page."""
    if per_page <= 0:
        raise ValueError("per_page must be positive")
    return (total + per_page - 1) // per_page


def page(items, number, per_page):
    """The items on page ``number`` (numbered from 1)."""
    if number < 1:
        raise ValueError("pages are numbered from 1")
    start = (number - 1) * per_page
    return list(items[start : start + per_page])
