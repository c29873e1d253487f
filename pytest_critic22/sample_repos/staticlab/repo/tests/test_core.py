import pytest

from staticlab.buckets import collect
from staticlab.counting import count
from staticlab.describing import describe
from staticlab.guards import parse
from staticlab.ratios import ratio
from staticlab.scaling import scale


def test_parse():
    assert parse("[1, 2]") == [1, 2]


def test_parse_none():
    with pytest.raises(ValueError):
        parse(None)


def test_scale():
    assert scale(3) == 6


def test_count():
    assert count("abc") == 3


def test_collect():
    assert collect(1) == [1]


def test_ratio():
    assert ratio(6, 3) == 2


def test_describe():
    assert describe(1) == "int: 1"
