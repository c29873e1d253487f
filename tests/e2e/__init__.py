"""Tests of the e2e tier (tests/README.md)."""
