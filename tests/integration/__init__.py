"""Tests of the integration tier (tests/README.md)."""
