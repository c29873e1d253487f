"""Turning titles into URL slugs."""

import re


def slugify(text: str) -> str:
    """Lower-case ASCII words joined by single dashes: "Hello, World!" -> "hello-world".

    Anything that is not an ASCII letter or digit separates words.
    """
    words = re.findall(r"[a-z0-9]+", text.lower())
    return "-".join(words)
