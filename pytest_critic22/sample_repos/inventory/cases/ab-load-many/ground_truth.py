import pytest

from inventory import Inventory


def test_hidden_invalid_quantity_raises():
    with pytest.raises(ValueError):
        Inventory().load({"apple": 0})


def test_hidden_load_adds_everything():
    inv = Inventory()
    inv.load({"apple": 2, "pear": 1})
    assert (inv.count("apple"), inv.count("pear")) == (2, 1)
