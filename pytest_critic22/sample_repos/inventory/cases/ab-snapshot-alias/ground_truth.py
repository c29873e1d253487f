from inventory import Inventory


def test_hidden_snapshot_is_a_copy():
    inv = Inventory()
    inv.add("apple", 3)
    snap = inv.snapshot()
    snap["apple"] = 99
    assert inv.count("apple") == 3
    assert snap == {"apple": 99}
