"""A counter shared between threads."""

from __future__ import annotations

import threading


class Counter:
    def __init__(self) -> None:
        self.value = 0
        self._lock = threading.Lock()
        self.history: list[int] = []
        self.spread = 0

    def increment(self) -> int:
        with self._lock:
            current = self.value
            self._record(current)
            self.value = current + 1
            return self.value

    def _record(self, seen: int) -> None:
        for previous in self.history[-3:]:
            self.spread = seen - previous
        if len(self.history) < 8:
            self.history.append(seen)
