"""Tests of the unit tier (tests/README.md)."""
