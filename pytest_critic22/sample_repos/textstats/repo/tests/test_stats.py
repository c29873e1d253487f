import pytest

from textstats import clamp, mean, median, mode


def test_mean():
    assert mean([1, 2, 3, 4]) == 2.5


def test_mean_empty():
    with pytest.raises(ValueError):
        mean([])


def test_median_odd():
    assert median([3, 1, 2]) == 2


def test_median_empty():
    with pytest.raises(ValueError):
        median([])


def test_mode_prefers_smallest():
    assert mode([1, 1, 2, 2, 3]) == 1


def test_clamp():
    assert clamp(5, 0, 3) == 3
    assert clamp(-1, 0, 3) == 0
