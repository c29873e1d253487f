"""A tiny clock library whose tests use a conftest fixture and a unittest base class."""
