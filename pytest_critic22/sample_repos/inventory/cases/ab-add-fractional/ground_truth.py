import pytest

from inventory import Inventory


def test_hidden_zero_is_still_refused():
    with pytest.raises(ValueError):
        Inventory().add("apple", 0)


def test_hidden_fractions():
    inv = Inventory()
    inv.add("flour", 0.5)
    assert inv.count("flour") == 0.5
