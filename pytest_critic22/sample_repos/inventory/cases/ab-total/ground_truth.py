from inventory import Inventory


def test_hidden_total():
    inv = Inventory()
    assert inv.total() == 0
    inv.add("apple", 2)
    inv.add("pear")
    assert inv.total() == 3
