import pytest

from inventory import Inventory


def test_add_and_count():
    inv = Inventory()
    inv.add("apple", 3)
    inv.add("apple")
    assert inv.count("apple") == 4


def test_remove_unknown_item():
    with pytest.raises(KeyError):
        Inventory().remove("pear")


def test_add_rejects_non_positive():
    with pytest.raises(ValueError):
        Inventory().add("apple", 0)
