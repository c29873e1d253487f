"""The in-child tracer (real pytest subprocesses) and the pure trace diff.

The integration tier: with real git and sandboxed child processes. The rest, and the whole story:
tests/unit/test_tracer.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import pytest_critic22
from pytest_critic22.verification.tracediff import (
    pick_passing,
    read_events,
    read_trace,
)

PACKAGE_ROOT = Path(pytest_critic22.__file__).resolve().parent.parent


HAS_MONITORING = sys.version_info >= (3, 12)


# Before 3.11 code objects have no co_qualname: the tracer falls back to co_name.
ADD, INIT = (
    ("Counter.add", "Counter.__init__") if sys.version_info >= (3, 11) else ("add", "__init__")
)


MODULE = """\
import threading


class Counter:
    def __init__(self):
        self.n = 0

    def add(self):
        self.n += 1


def boom():
    raise ValueError("boom")


def add_in_thread(counter):
    worker = threading.Thread(target=counter.add)
    worker.start()
    worker.join()


def route(flag):
    return _left() if flag else _right()


def _left():
    return 1


def _right():
    return 2
"""


BACKENDS = [
    "settrace",
    pytest.param(
        "monitoring",
        marks=pytest.mark.skipif(not HAS_MONITORING, reason="sys.monitoring needs Python 3.12"),
    ),
]


@dataclass(frozen=True, slots=True)
class Child:
    returncode: int
    output: str
    trace: Path


def run_child(
    folder: Path,
    test_body: str,
    *,
    traced: tuple[str, ...] = ("counter.py",),
    out: bool = True,
    env: Mapping[str, str] | None = None,
    files: Mapping[str, str] | None = None,
) -> Child:
    """Run pytest with the tracer on ``test_probe.py`` (``test_body``) next to counter.py."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pytest.ini").write_text("[pytest]\n")  # the child's rootdir: no outer config
    (folder / "counter.py").write_text(MODULE)
    (folder / "test_probe.py").write_text(test_body)
    for name, text in (files or {}).items():
        (folder / name).write_text(text)
    trace = folder / "trace.jsonl"
    child_env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CRITIC22_", "PYTEST_", "COV_CORE_", "COVERAGE_"))
    }
    child_env["PYTHONPATH"] = str(PACKAGE_ROOT)
    child_env["PYTHONDONTWRITEBYTECODE"] = "1"  # as in runner.py; keeps the folder listable
    # Installed plugins cost about a second a run and are not what is tested here.
    child_env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    child_env["CRITIC22_TRACE_FILES"] = os.pathsep.join(str(folder / f) for f in traced)
    if out:
        child_env["CRITIC22_TRACE_OUT"] = str(trace)
    child_env.update(env or {})
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "pytest_critic22.child.tracer",
            "-p",
            "no:critic22",
            "-p",
            "no:cacheprovider",
            "-q",
            "test_probe.py",
        ],
        cwd=folder,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return Child(proc.returncode, proc.stdout + proc.stderr, trace)


def calls_of(events: list[dict[str, Any]], name: str) -> list[str]:
    return [e["e"] for e in events if e["f"] == name]


def outcome_of(trace: Path) -> dict[str, Any]:
    last: dict[str, Any] = json.loads(trace.read_text().splitlines()[-1])
    assert last["e"] == "outcome"
    return last


@pytest.mark.parametrize("backend", BACKENDS)
def test_calls_and_returns_are_recorded_for_functions_of_the_traced_file_only(
    tmp_path: Path, backend: str
) -> None:
    child = run_child(
        tmp_path,
        "from counter import Counter\n\n"
        "def helper(c):\n    c.add()\n\n"
        "def test_adds():\n    c = Counter()\n    helper(c)\n    assert c.n == 1\n",
        env={"CRITIC22_TRACE_BACKEND": backend},
    )
    assert child.returncode == 0, child.output
    events, failed = read_events(child.trace)
    assert failed is False
    assert {e["file"] for e in events} == {"counter.py"}
    assert calls_of(events, ADD) == ["call", "return"]
    assert calls_of(events, INIT) == ["call", "return"]
    assert calls_of(events, "helper") == []
    add = next(e for e in events if e["f"] == ADD)
    assert add == {"e": "call", "f": ADD, "file": "counter.py", "line": 8, "t": 0}
    assert outcome_of(child.trace)["backend"] == backend


def test_the_test_file_is_traced_when_it_is_listed(tmp_path: Path) -> None:
    child = run_child(
        tmp_path,
        "from counter import Counter\n\ndef test_adds():\n    Counter().add()\n",
        traced=("counter.py", "test_probe.py"),
    )
    assert child.returncode == 0, child.output
    events, _ = read_events(child.trace)
    assert calls_of(events, "test_adds") == ["call", "return"]
    assert {e["file"] for e in events} == {"counter.py", "test_probe.py"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_raised_exception_is_recorded_as_a_raise_event(tmp_path: Path, backend: str) -> None:
    child = run_child(
        tmp_path,
        "import pytest\nfrom counter import boom\n\n"
        "def test_boom():\n    with pytest.raises(ValueError):\n        boom()\n",
        env={"CRITIC22_TRACE_BACKEND": backend},
    )
    assert child.returncode == 0, child.output
    events, _ = read_events(child.trace)
    # Both backends also report the exit by the exception as a return, like settrace does.
    assert calls_of(events, "boom") == ["call", "raise", "return"]


@pytest.mark.parametrize(("expected", "failed"), [("0", False), ("1", True)])
def test_the_outcome_line_says_whether_the_test_failed(
    tmp_path: Path, expected: str, failed: bool
) -> None:
    child = run_child(
        tmp_path,
        f"from counter import Counter\n\ndef test_n():\n    assert Counter().n == {expected}\n",
    )
    assert child.returncode == int(failed), child.output
    events, read_failed = read_events(child.trace)
    assert read_failed is failed
    assert calls_of(events, INIT) == ["call", "return"]
    outcome = outcome_of(child.trace)
    assert outcome["tests"] == {"test_probe.py::test_n": "failed" if failed else "passed"}
    assert outcome["truncated"] is False


@pytest.mark.parametrize("backend", BACKENDS)
def test_events_from_a_worker_thread_carry_their_own_thread_index(
    tmp_path: Path, backend: str
) -> None:
    child = run_child(
        tmp_path,
        "from counter import Counter, add_in_thread\n\n"
        "def test_threaded():\n    c = Counter()\n    add_in_thread(c)\n    assert c.n == 1\n",
        env={"CRITIC22_TRACE_BACKEND": backend},
    )
    assert child.returncode == 0, child.output
    events, _ = read_events(child.trace)
    main = {e["t"] for e in events if e["f"] == "add_in_thread"}
    worker = {e["t"] for e in events if e["f"] == ADD}
    assert main == {0}
    assert worker == {1}


STATE_PROBE = """\
import json, sys, threading

def state():
    monitoring = getattr(sys, "monitoring", None)
    return {
        "trace": repr(sys.gettrace()),
        "thread_trace": repr(threading.gettrace()),
        "tools": [monitoring.get_tool(i) for i in range(6)] if monitoring else [],
        "interval": sys.getswitchinterval(),
    }
"""


def test_without_an_output_path_nothing_is_written_and_nothing_is_hooked(
    tmp_path: Path,
) -> None:
    child = run_child(
        tmp_path,
        "import json\nfrom probe import state\nfrom counter import Counter\n\n"
        "def test_state():\n    Counter().add()\n"
        "    with open('state.json', 'w') as f:\n        json.dump(state(), f)\n",
        out=False,
        env={"CRITIC22_SWITCH_INTERVAL": "0.0003"},
        files={"probe.py": STATE_PROBE},
    )
    assert child.returncode == 0, child.output
    state = json.loads((tmp_path / "state.json").read_text())
    assert state == {
        "trace": "None",
        "thread_trace": "None",
        "tools": [None] * 6 if HAS_MONITORING else [],
        "interval": pytest.approx(0.005),
    }
    assert [p.name for p in tmp_path.iterdir() if p.suffix not in (".py", ".ini")] == ["state.json"]


def test_tracing_stops_and_the_previous_state_returns_when_pytest_unconfigures(
    tmp_path: Path,
) -> None:
    conftest = (
        "import json, pytest\nfrom probe import state\n\n"
        "@pytest.hookimpl(trylast=True)\n"
        "def pytest_unconfigure(config):\n"
        "    with open('after.json', 'w') as f:\n        json.dump(state(), f)\n"
    )
    child = run_child(
        tmp_path,
        "from counter import Counter\n\ndef test_adds():\n    Counter().add()\n",
        files={"probe.py": STATE_PROBE, "conftest.py": conftest},
    )
    assert child.returncode == 0, child.output
    after = json.loads((tmp_path / "after.json").read_text())
    assert after["trace"] == "None"
    assert after["thread_trace"] == "None"
    assert after["tools"] == ([None] * 6 if HAS_MONITORING else [])
    assert after["interval"] == pytest.approx(0.005)


@pytest.mark.parametrize(("setting", "applied"), [(None, 1e-6), ("0.0003", 0.0003)])
def test_the_switch_interval_is_applied_while_the_test_runs(
    tmp_path: Path, setting: str | None, applied: float
) -> None:
    child = run_child(
        tmp_path,
        "import sys\n\ndef test_interval():\n"
        "    with open('interval.txt', 'w') as f:\n"
        "        f.write(repr(sys.getswitchinterval()))\n",
        env={} if setting is None else {"CRITIC22_SWITCH_INTERVAL": setting},
    )
    assert child.returncode == 0, child.output
    assert float((tmp_path / "interval.txt").read_text()) == pytest.approx(applied)


def test_a_bad_switch_interval_stops_the_run_as_a_usage_error(tmp_path: Path) -> None:
    child = run_child(
        tmp_path, "def test_x():\n    pass\n", env={"CRITIC22_SWITCH_INTERVAL": "soon"}
    )
    assert child.returncode == 4
    assert "CRITIC22_SWITCH_INTERVAL" in child.output


def test_the_tracer_prefers_sys_monitoring_where_python_has_it(tmp_path: Path) -> None:
    child = run_child(tmp_path, "from counter import Counter\n\ndef test_x():\n    Counter()\n")
    assert child.returncode == 0, child.output
    assert outcome_of(child.trace)["backend"] == ("monitoring" if HAS_MONITORING else "settrace")


def test_events_past_the_cap_are_counted_and_the_trace_says_it_was_truncated(
    tmp_path: Path,
) -> None:
    child = run_child(
        tmp_path,
        "from counter import Counter\n\n"
        "def test_many():\n    c = Counter()\n    for _ in range(10):\n        c.add()\n",
        env={"CRITIC22_TRACE_LIMIT": "5"},
    )
    assert child.returncode == 0, child.output
    trace = read_trace(child.trace)
    assert len(trace.events) == 5
    assert trace.truncated is True
    assert outcome_of(child.trace)["dropped"] > 0


def test_a_failing_and_a_passing_replay_part_where_the_code_took_another_path(
    tmp_path: Path,
) -> None:
    body = (
        "import os\nfrom counter import Counter, route\n\n"
        "def test_route():\n    Counter()\n"
        "    assert route(os.environ['ROUTE'] == 'left') == 2\n"
    )
    failing = run_child(tmp_path / "failing", body, env={"ROUTE": "left"})
    passing = run_child(tmp_path / "passing", body, env={"ROUTE": "right"})
    runs = [read_events(passing.trace), read_events(failing.trace)]
    assert [failed for _, failed in runs] == [False, True]
    pairing = pick_passing([(events, bool(failed)) for events, failed in runs])
    assert pairing is not None and pairing.divergence is not None
    assert (pairing.failing_run, pairing.passing_run) == (1, 0)
    divergence = pairing.divergence
    assert divergence.failing is not None and divergence.failing["f"] == "_left"
    assert divergence.passing is not None and divergence.passing["f"] == "_right"
    assert divergence.context[-1]["f"] == "route"


@pytest.mark.skipif(not HAS_MONITORING, reason="sys.monitoring needs Python 3.12")
def test_a_replayed_test_can_still_use_cprofile(tmp_path: Path) -> None:
    child = run_child(
        tmp_path,
        "import cProfile\nfrom counter import Counter\n\n"
        "def test_profiles():\n    profile = cProfile.Profile()\n"
        "    profile.enable()\n    Counter().add()\n    profile.disable()\n",
    )
    assert child.returncode == 0, child.output
    assert outcome_of(child.trace)["backend"] == "monitoring"
