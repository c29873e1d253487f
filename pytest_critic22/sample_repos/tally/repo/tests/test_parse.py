import pytest

from tally import Registry, parse_text


def test_round_trip():
    r = Registry()
    r.counter("hits").inc(3)
    r.counter("misses").inc()
    assert parse_text(r.render()) == {"hits": 3, "misses": 1}


def test_blank_lines_are_skipped():
    assert parse_text("\nhits 1\n\n") == {"hits": 1}


def test_parse_rejects_garbage():
    with pytest.raises(ValueError, match="line 2"):
        parse_text("hits 1\nthis is not a metric\n")
