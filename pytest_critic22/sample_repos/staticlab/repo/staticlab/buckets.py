"""Collecting items."""

from __future__ import annotations


def collect(item, bucket=None):
    bucket = [] if bucket is None else bucket
    bucket.append(item)
    return bucket
