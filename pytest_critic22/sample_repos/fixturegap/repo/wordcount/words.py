"""Words of a plain text."""

from __future__ import annotations


def count_words(text):
    """How many words ``text`` holds."""
    return len(text.split(" "))


def longest_word(text):
    """The longest word of ``text`` (the first of equally long ones); "" for no words."""
    best = ""
    for word in text.split():
        if len(word) > len(best):
            best = word
    return best
