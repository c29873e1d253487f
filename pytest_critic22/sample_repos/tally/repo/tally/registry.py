"""A registry of named counters, rendered one "name value" pair a line."""

from __future__ import annotations

from tally.counter import Counter


class Registry:
    def __init__(self) -> None:
        self._counters: dict[str, Counter] = {}

    def counter(self, name: str) -> Counter:
        if not name.isidentifier():
            raise ValueError(f"bad metric name {name!r}")
        if name not in self._counters:
            self._counters[name] = Counter(name)
        return self._counters[name]

    def snapshot(self) -> dict[str, int]:
        return {name: c.value for name, c in self._counters.items()}

    def render(self) -> str:
        return "".join(f"{name} {c.value}\n" for name, c in self._counters.items())
