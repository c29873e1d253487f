"""Moving stock around, through the store's public API."""

from __future__ import annotations

import inventory.store as store_mod
from inventory.store import Inventory as Stock


def transfer(source: Stock, target: Stock, item: str, qty: int) -> None:
    source.remove(item, qty)
    target.add(item, qty)


def clear(item: str) -> store_mod.Inventory:
    inv = store_mod.Inventory()
    inv.add(item)
    inv.remove(item)
    return inv


def fresh() -> Stock:
    return Stock()
