"""``python -m pytest_critic22.apps.ab POPULATION ...``: the same as ``critic22 ab``."""

from __future__ import annotations

import sys

from pytest_critic22.apps.ab.cli import main

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
