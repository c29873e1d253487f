"""URL slugs (a sample repository for pytest-critic22)."""

from slugkit.slug import slugify

__all__ = ["slugify"]
