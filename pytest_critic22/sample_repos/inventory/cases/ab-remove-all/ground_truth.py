from inventory import Inventory


def test_hidden_remove_all():
    inv = Inventory()
    inv.add("apple", 3)
    inv.remove("apple", None)
    assert inv.count("apple") == 0
