from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

from pytest_critic22.execution.ledger import Ledger


def _writer(path: str, worker: int, count: int) -> None:
    ledger = Ledger(Path(path), f"run-{worker}")
    for i in range(count):
        ledger.append("tick", {"worker": worker, "i": i, "pad": "x" * 5000})


def test_several_processes_append_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    context = multiprocessing.get_context("spawn")
    procs = [context.Process(target=_writer, args=(str(path), w, 50)) for w in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    lines = path.read_text().splitlines()
    assert len(lines) == 200
    seen = {(e["payload"]["worker"], e["payload"]["i"]) for e in map(json.loads, lines)}
    assert len(seen) == 200
