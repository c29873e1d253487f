"""Cutting impact evidence to the packet's size budget, deterministically (pure)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

__all__ = ["bound_evidence"]


def bound_evidence(evidence: Mapping[str, Any], budget: int) -> tuple[dict[str, Any], str]:
    """Shrink evidence to ``budget`` characters of canonical JSON, deterministically.

    What is cut, in this fixed order (the first cut first). Each step applies on top of the
    ones before it, and the first result that fits — its note included — is returned, so the
    same evidence and budget always give the same cut:

    1. callers and tests per symbol, and the preservation tests: at most 20, then 10, then 5;
    2. ``usage_examples``: one at a time, the last first;
    3. the docstrings of the ``fixtures``, then those of the ``callees``;
    4. ``callees``: one at a time, the last first;
    5. callers and tests per symbol, and the preservation tests: at most 2, then none;
    6. the fixture list (the test folder, the test file's name and the builtin note stay);
    7. ``touched_source``: one symbol's source at a time, the last first (its name, file and
       lines stay);
    8. everything but the blast radius.

    Returns the evidence and a note of what was cut ("" when nothing was); the note is also the
    cut evidence's ``truncated`` value.
    """
    if _size(evidence) <= budget:
        return dict(evidence), ""
    for candidate, note in _cuts(evidence):
        cut = {**candidate, "truncated": note}
        if _size(cut) <= budget:
            return cut, note
    slim = {
        "blast_radius": evidence.get("blast_radius", {}),
        "truncated": "per-edit detail dropped to fit the packet size limit",
    }
    return slim, slim["truncated"]


def _size(value: Mapping[str, Any]) -> int:
    import json

    return len(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


_Step = tuple[dict[str, Any], str]
_Drop = Callable[[list[Any], int], list[Any]]


def _cuts(evidence: Mapping[str, Any]) -> Iterable[_Step]:
    """Every step of the cut, in order: (the evidence so far, the note of what is cut)."""
    current = dict(evidence)
    notes: dict[str, str] = {}

    def step(changed: dict[str, Any], slot: str, note: str) -> _Step | None:
        nonlocal current
        if changed == current:
            return None  # nothing to cut here: no step, no note
        current = changed
        notes[slot] = note
        return dict(current), "; ".join(notes.values())

    def caps(values: Sequence[int]) -> Iterable[_Step]:
        for cap in values:
            note = f"callers and tests cut to at most {cap} per symbol"
            done = step(_cap_lists(current, cap), "callers", note)
            if done:
                yield done

    def one_by_one(key: str, label: str, name: str, drop: _Drop) -> Iterable[_Step]:
        items = list(current.get(key) or [])
        total = len(items)
        dropped: list[str] = []
        for index in range(total - 1, -1, -1):
            shorter = drop(items, index)
            if shorter == items:
                continue
            dropped.insert(0, str(items[index].get(name, index)))
            items = shorter
            note = f"{label} dropped ({len(dropped)} of {total}): {_names(dropped)}"
            done = step({**current, key: items}, key, note)
            if done:
                yield done

    def remove(items: list[Any], index: int) -> list[Any]:
        return items[:index]

    def without_source(items: list[Any], index: int) -> list[Any]:
        return [
            {k: v for k, v in item.items() if k != "source"} if i == index else item
            for i, item in enumerate(items)
        ]

    def without_key(records: Any, key: str) -> list[Any]:
        return [{k: v for k, v in r.items() if k != key} for r in records]

    yield from caps((20, 10, 5))
    yield from one_by_one("usage_examples", "usage examples", "test", remove)
    fixtures = current.get("fixtures")
    if isinstance(fixtures, Mapping) and fixtures.get("available"):
        plain = {**fixtures, "available": without_key(fixtures["available"], "doc")}
        done = step({**current, "fixtures": plain}, "fixture-docs", "fixture docstrings dropped")
        if done:
            yield done
    if current.get("callees"):
        plain_callees = without_key(current["callees"], "docstring")
        done = step(
            {**current, "callees": plain_callees}, "callee-docs", "callee docstrings dropped"
        )
        if done:
            yield done
    yield from one_by_one("callees", "callees", "name", remove)
    yield from caps((2, 0))
    fixtures = current.get("fixtures")
    if isinstance(fixtures, Mapping) and fixtures.get("available"):
        count = len(fixtures["available"])
        kept = {k: v for k, v in fixtures.items() if k != "available"}
        done = step(
            {**current, "fixtures": kept}, "fixture-list", f"fixture list dropped ({count})"
        )
        if done:
            yield done
    yield from one_by_one("touched_source", "touched source", "symbol", without_source)


def _names(names: Sequence[str], shown: int = 5) -> str:
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def _cap_lists(evidence: Mapping[str, Any], cap: int) -> dict[str, Any]:
    out = dict(evidence)
    edits = {}
    for edit_id, detail in evidence.get("edits", {}).items():
        symbols = []
        for symbol in detail.get("symbols", []):
            trimmed = dict(symbol)
            for key in ("callers", "tests"):
                items = list(symbol.get(key, []))
                if len(items) > cap:
                    trimmed[key] = items[:cap]
                    omitted = int(symbol.get(f"{key}_omitted", 0))
                    trimmed[f"{key}_omitted"] = omitted + len(items) - cap
            symbols.append(trimmed)
        edits[edit_id] = {**detail, "symbols": symbols}
    if "edits" in evidence:
        out["edits"] = edits
    tests = list(evidence.get("preservation_tests", []))
    if len(tests) > cap:
        out["preservation_tests"] = tests[:cap]
        if "preservation_found_by" in evidence:
            found_by = evidence["preservation_found_by"]
            out["preservation_found_by"] = {t: found_by[t] for t in tests[:cap] if t in found_by}
    return out
