"""Small text helpers (a sample repository for pytest-critic22's property: kind)."""

from propkit.codec import quote, unquote
from propkit.text import slugify

__all__ = ["quote", "slugify", "unquote"]
