import pytest

from textstats import clamp


def test_hidden_crossed_bounds_still_raise():
    with pytest.raises(ValueError):
        clamp(1, 3, 0)


def test_hidden_one_sided_bounds():
    assert clamp(5, None, 3) == 3
    assert clamp(-1, 0, None) == 0
