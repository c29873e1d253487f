import pytest

from tally import Registry


def test_same_name_same_counter():
    r = Registry()
    assert r.counter("hits") is r.counter("hits")


def test_snapshot():
    r = Registry()
    r.counter("hits").inc(2)
    r.counter("misses")
    assert r.snapshot() == {"hits": 2, "misses": 0}


def test_render():
    r = Registry()
    r.counter("hits").inc(3)
    assert r.render() == "hits 3\n"


def test_bad_name():
    with pytest.raises(ValueError):
        Registry().counter("not a name")
