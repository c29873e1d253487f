"""The engine interface as ``critic22 ab`` uses it: the client writes the cache, and a unit
the engine lost is an infrastructure error that excludes its case, never a verdict."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pytest_critic22.apps.ab.driver import _case_result
from pytest_critic22.apps.ab.pool import Progress, execute
from pytest_critic22.apps.ab.population import choose_critic, load_population
from pytest_critic22.apps.ab.runs import RunOptions, Unit, plan_units
from pytest_critic22.apps.cluster import Failed, Inline, Shipping
from tests.unit.test_ab import POPULATION

T = TypeVar("T")
R = TypeVar("R")


class Losing(Inline):
    """Runs in this process, but loses the items at ``lost`` as a dead worker would."""

    def __init__(self, lost: set[int]) -> None:
        self.lost = lost

    def map_unordered(
        self,
        fn: Callable[[T], R],
        items: Sequence[T],
        *,
        shipping: Shipping[T] | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> Iterator[tuple[int, R | Failed]]:
        for index, item in enumerate(items):
            yield index, Failed("KilledWorker: the worker died") if index in self.lost else fn(item)


def record_of(unit: Unit) -> dict[str, Any]:
    """What a run gives, without running anything."""
    return {"key": unit.key, "case": unit.case.id, "kind": unit.kind, "patched": "failed"}


def test_the_client_caches_what_came_back_and_not_what_the_engine_lost(tmp_path: Path) -> None:
    population = load_population(POPULATION)
    critic = choose_critic(population, "recorded:useful", None, None)
    case = population.held_out()[0]
    units = plan_units([case], critic, RunOptions(), tmp_path / "cache")
    lost = next(i for i, unit in enumerate(units) if unit.kind == "validator")
    records = execute(
        units, engine=Losing({lost}), fresh=False, progress=Progress(units, None), runner=record_of
    )
    assert len(records) == len(units)  # one record per unit: none dropped, none twice
    failed = records[(case.id, "validator")]
    assert failed["error"].startswith("infrastructure: KilledWorker")
    assert not units[lost].cache_file.exists()
    for index, unit in enumerate(units):
        if index != lost:
            assert json.loads(unit.cache_file.read_text())["key"] == unit.key
    result, why = _case_result(case, records)
    assert result is None and "the validator run gave no report: infrastructure" in why
