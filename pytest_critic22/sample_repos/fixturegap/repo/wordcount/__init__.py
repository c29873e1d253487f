"""Counting words (a sample repository for pytest-critic22 whose benchmark test needs an
uninstalled plugin)."""

from wordcount.words import count_words, longest_word

__all__ = ["count_words", "longest_word"]
