"""Counts of items in stock."""

from __future__ import annotations


class Inventory:
    def __init__(self) -> None:
        self._items: dict[str, int] = {}

    def add(self, item: str, qty: int = 1) -> None:
        if qty <= 0:
            raise ValueError("quantity must be positive")
        self._items[item] = self._items.get(item, 0) + qty

    def count(self, item: str) -> int:
        return self._items.get(item, 0)

    def remove(self, item: str, qty: int = 1) -> None:
        if item not in self._items:
            raise KeyError(item)
        self._items[item] -= qty
        if self._items[item] == 0:
            del self._items[item]
