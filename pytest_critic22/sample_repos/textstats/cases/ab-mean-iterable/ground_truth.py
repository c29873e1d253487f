import pytest

from textstats import mean


def test_hidden_mean_of_an_empty_iterable_still_raises():
    with pytest.raises(ValueError):
        mean([])
    with pytest.raises(ValueError):
        mean(iter([]))


def test_hidden_mean_of_a_generator():
    assert mean(x for x in (1, 2, 3)) == 2
