import pytest

from textstats import mean


def test_hidden_exact_for_floats():
    assert mean([0.1] * 10) == 0.1


def test_hidden_empty_still_raises():
    with pytest.raises(ValueError):
        mean([])
