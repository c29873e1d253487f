import pytest

from tally import Counter


def test_hidden_negative_amounts_are_refused():
    with pytest.raises(ValueError):
        Counter("t").inc(-1.5)


def test_hidden_float_amounts():
    c = Counter("t")
    c.inc(0.25)
    assert c.value == 0.25
