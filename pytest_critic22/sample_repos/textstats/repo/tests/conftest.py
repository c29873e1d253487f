import pytest


@pytest.fixture
def even_values():
    """Four unordered values whose median (and mean) is 2.5."""
    return [4, 1, 3, 2]


@pytest.fixture(scope="session", name="empty")
def _empty_values():
    """An empty sample: every statistic of it raises ValueError."""
    return []
