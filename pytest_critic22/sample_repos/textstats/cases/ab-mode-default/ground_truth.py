import pytest

from textstats import mode


def test_hidden_default_for_empty_input():
    assert mode([], default=None) is None
    with pytest.raises(ValueError):
        mode([])
