from __future__ import annotations

from datetime import datetime

import pytest


@pytest.fixture
def stamp() -> datetime:
    """A fixed timestamp: 2024-01-01 12:00:00."""
    return datetime(2024, 1, 1, 12, 0, 0)
