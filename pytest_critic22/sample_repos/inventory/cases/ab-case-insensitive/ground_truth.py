from inventory import Inventory


def test_hidden_remove_is_case_insensitive():
    inv = Inventory()
    inv.add("Apple", 2)
    inv.remove("APPLE")
    assert inv.count("apple") == 1
