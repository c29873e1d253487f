"""A call/return/raise recorder loaded inside the child pytest: ``-p pytest_critic22.child.tracer``.

It replays one test under a tiny thread switch interval and writes what the functions of
the traced files did, in order, from every thread, so that a failing replay can be set
against a passing one (``tracediff``). Configured only through the environment, because the
child's command line belongs to the test being replayed:

    CRITIC22_TRACE_OUT        JSONL file to write; when unset this plugin does nothing at all
    CRITIC22_TRACE_FILES      os.pathsep-separated absolute paths of the files to trace
    CRITIC22_SWITCH_INTERVAL  seconds for sys.setswitchinterval (default 1e-6)
    CRITIC22_TRACE_LIMIT      events kept before the rest are only counted (default 200000)
    CRITIC22_TRACE_BACKEND    auto (default), monitoring or settrace

One JSON object a line: ``{"e": "call"|"return"|"raise", "f": qualname, "file": basename,
"line": first line, "t": thread index}``, then ``{"e": "outcome", "failed": bool, ...}``.
The thread index counts threads in the order their first event was recorded, so that two
runs can be compared even though OS thread ids differ between them.

This module is imported by every traced child: the standard library and pytest only.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable, Iterable
from types import CodeType, FrameType
from typing import Any, Final

import pytest

__all__ = [
    "DEFAULT_LIMIT",
    "DEFAULT_SWITCH_INTERVAL",
    "ENV_BACKEND",
    "ENV_FILES",
    "ENV_LIMIT",
    "ENV_OUT",
    "ENV_SWITCH_INTERVAL",
]

ENV_OUT: Final = "CRITIC22_TRACE_OUT"
ENV_FILES: Final = "CRITIC22_TRACE_FILES"
ENV_SWITCH_INTERVAL: Final = "CRITIC22_SWITCH_INTERVAL"
ENV_LIMIT: Final = "CRITIC22_TRACE_LIMIT"
ENV_BACKEND: Final = "CRITIC22_TRACE_BACKEND"
DEFAULT_SWITCH_INTERVAL: Final = 1e-6
DEFAULT_LIMIT: Final = 200_000
_TOOL_NAME: Final = "critic22-tracer"

_TraceFunc = Callable[[FrameType, str, Any], Any]


class _Recorder:
    """The event buffer. Recording is on the hot path of every traced call: keep it lean."""

    __slots__ = ("_files", "_known", "_lock", "_next_thread", "_tls", "dropped", "events", "limit")

    def __init__(self, files: Iterable[str], limit: int) -> None:
        self._files = frozenset(os.path.realpath(f) for f in files)
        # co_filename -> traced?; realpath is too slow to call for every event
        self._known: dict[str, bool] = {}
        self._lock = threading.Lock()
        self._tls = threading.local()
        self._next_thread = 0
        self.limit = limit
        self.dropped = 0
        # (kind, code, thread index); code objects are turned into names only when writing
        self.events: list[tuple[str, CodeType, int]] = []

    def traced(self, code: CodeType) -> bool:
        filename = code.co_filename
        known = self._known.get(filename)
        if known is None:
            known = os.path.realpath(filename) in self._files
            self._known[filename] = known
        return known

    def record(self, kind: str, code: CodeType) -> None:
        events = self.events
        if len(events) >= self.limit:
            self.dropped += 1  # a lost increment under a race still leaves it non-zero
            return
        try:
            index: int = self._tls.index
        except AttributeError:
            # Numbering and first event under one lock: indices follow the order of the log.
            with self._lock:
                index = self._tls.index = self._next_thread
                self._next_thread += 1
                events.append((kind, code, index))
            return
        events.append((kind, code, index))  # atomic under the GIL and in free-threaded builds

    def lines(self) -> list[str]:
        # Hand-assembled JSON: json.dumps per event takes seconds at the cap, and only the
        # name and the file need escaping, once per code object.
        fields: dict[CodeType, str] = {}
        out = []
        for kind, code, index in list(self.events):
            middle = fields.get(code)
            if middle is None:
                qualname = str(getattr(code, "co_qualname", code.co_name))
                middle = fields[code] = (
                    f'"f":{json.dumps(qualname)},'
                    f'"file":{json.dumps(os.path.basename(code.co_filename))},'
                    f'"line":{code.co_firstlineno}'
                )
            out.append(f'{{"e":"{kind}",{middle},"t":{index}}}')
        return out


class _Backend:
    name = ""

    def start(self, recorder: _Recorder) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError


class _SettraceBackend(_Backend):
    """sys.settrace for the configuring thread and threading.settrace for threads it starts.

    Threads already running when the run is configured are not seen: pytest starts none.
    """

    name = "settrace"

    def __init__(self) -> None:
        # typeshed's trace function type is private: Any keeps mypy out of the way
        self._previous: tuple[Any, Any] = (None, None)
        self._active = False

    def start(self, recorder: _Recorder) -> None:
        traced = recorder.traced
        record = recorder.record

        def local(frame: FrameType, event: str, arg: Any) -> _TraceFunc | None:
            if self._active:
                if event == "return":
                    record("return", frame.f_code)
                elif event == "exception":
                    record("raise", frame.f_code)
            return local

        def on_call(frame: FrameType, event: str, arg: Any) -> _TraceFunc | None:
            # Only "call" reaches a global trace function; untraced frames get no local one.
            if not self._active or not traced(frame.f_code):
                return None
            frame.f_trace_lines = False  # line events would cost a call per line for nothing
            record("call", frame.f_code)
            return local

        self._previous = (sys.gettrace(), threading.gettrace())
        self._active = True
        threading.settrace(on_call)
        sys.settrace(on_call)

    def stop(self) -> None:
        # Threads still running keep our function until they end; the flag silences them.
        self._active = False
        sys.settrace(self._previous[0])
        threading.settrace(self._previous[1])


if sys.version_info >= (3, 12):

    class _MonitoringBackend(_Backend):
        """PEP 669 events: every thread, and untraced code is switched off after its first hit."""

        name = "monitoring"

        def __init__(self, tool: int) -> None:
            self._tool = tool
            self._events = 0

        @staticmethod
        def claim() -> _MonitoringBackend | None:
            mon = sys.monitoring
            # cProfile itself holds PROFILER_ID from 3.12 on: a replayed test that profiles
            # would fail on "another profiling tool is already active" if we took it first.
            for tool in (mon.OPTIMIZER_ID, mon.PROFILER_ID):
                if mon.get_tool(tool) is None:
                    try:
                        mon.use_tool_id(tool, _TOOL_NAME)
                    except ValueError:  # taken between the check and the claim
                        continue
                    return _MonitoringBackend(tool)
            return None

        def start(self, recorder: _Recorder) -> None:
            mon = sys.monitoring
            events = mon.events
            traced = recorder.traced
            record = recorder.record
            disable = mon.DISABLE

            # PY_START, PY_RESUME, PY_RETURN and PY_YIELD are local events, which may be
            # DISABLEd for the code that raised them; RAISE, PY_THROW and PY_UNWIND may not.
            def on_start(code: CodeType, offset: int) -> Any:
                if traced(code):
                    record("call", code)
                    return None
                return disable

            def on_return(code: CodeType, offset: int, value: object) -> Any:
                if traced(code):
                    record("return", code)
                    return None
                return disable

            def on_throw(code: CodeType, offset: int, exc: BaseException) -> None:
                if traced(code):
                    record("call", code)

            def on_unwind(code: CodeType, offset: int, exc: BaseException) -> None:
                if traced(code):
                    record("return", code)

            def on_raise(code: CodeType, offset: int, exc: BaseException) -> None:
                if traced(code):
                    record("raise", code)

            # Mapped onto settrace's vocabulary, so that both backends log the same story:
            # settrace says "call" on every generator resume and "return" on every yield
            # and on every exit by an exception.
            callbacks: dict[int, Callable[..., Any]] = {
                events.PY_START: on_start,
                events.PY_RESUME: on_start,
                events.PY_THROW: on_throw,
                events.PY_RETURN: on_return,
                events.PY_YIELD: on_return,
                events.PY_UNWIND: on_unwind,
                events.RAISE: on_raise,
            }
            for event, callback in callbacks.items():
                mon.register_callback(self._tool, event, callback)
                self._events |= event
            mon.set_events(self._tool, self._events)

        def stop(self) -> None:
            mon = sys.monitoring
            mon.set_events(self._tool, mon.events.NO_EVENTS)
            for event in _bits(self._events):
                mon.register_callback(self._tool, event, None)
            mon.free_tool_id(self._tool)


def _bits(mask: int) -> list[int]:
    return [1 << i for i in range(mask.bit_length()) if mask & (1 << i)]


def _choose_backend(requested: str) -> _Backend:
    if requested not in ("auto", "monitoring", "settrace"):
        raise pytest.UsageError(f"{ENV_BACKEND}: expected auto, monitoring or settrace")
    if requested != "settrace" and sys.version_info >= (3, 12):
        claimed = _MonitoringBackend.claim()
        if claimed is not None:
            return claimed
    if requested == "monitoring":
        raise pytest.UsageError(
            f"{ENV_BACKEND}=monitoring: sys.monitoring is missing or has no free tool id"
        )
    return _SettraceBackend()


def _number(name: str, default: float, convert: Callable[[str], float]) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = convert(raw)
    except ValueError:
        raise pytest.UsageError(f"{name}: not a number: {raw!r}") from None
    if not value > 0:  # also refuses nan
        raise pytest.UsageError(f"{name}: must be positive, got {raw!r}")
    return value


class _Session:
    __slots__ = ("backend", "exitstatus", "out", "previous_interval", "recorder", "tests")

    def __init__(self, out: str, recorder: _Recorder, backend: _Backend, interval: float) -> None:
        self.out = out
        self.recorder = recorder
        self.backend = backend
        self.previous_interval = interval
        self.tests: dict[str, str] = {}
        self.exitstatus: int | None = None


_session: _Session | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _session
    out = os.environ.get(ENV_OUT)
    if not out or _session is not None:
        return
    interval = _number(ENV_SWITCH_INTERVAL, DEFAULT_SWITCH_INTERVAL, float)
    limit = int(_number(ENV_LIMIT, DEFAULT_LIMIT, int))
    files = [f for f in os.environ.get(ENV_FILES, "").split(os.pathsep) if f]
    backend = _choose_backend(os.environ.get(ENV_BACKEND, "auto").strip().lower() or "auto")
    recorder = _Recorder(files, limit)
    _session = _Session(out, recorder, backend, sys.getswitchinterval())
    sys.setswitchinterval(interval)
    backend.start(recorder)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if _session is None:
        return
    tests = _session.tests
    if report.failed:
        tests[report.nodeid] = "failed"
    elif report.skipped:
        tests.setdefault(report.nodeid, "skipped")
    elif report.when == "call" and tests.get(report.nodeid) != "failed":
        tests[report.nodeid] = "passed"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int | pytest.ExitCode) -> None:
    if _session is not None:
        _session.exitstatus = int(exitstatus)


def pytest_unconfigure(config: pytest.Config) -> None:
    global _session
    current, _session = _session, None
    if current is None:
        return
    current.backend.stop()
    sys.setswitchinterval(current.previous_interval)
    recorder = current.recorder
    lines = recorder.lines()
    outcome = {
        "e": "outcome",
        "failed": any(v == "failed" for v in current.tests.values()),
        "tests": current.tests,
        "exitstatus": current.exitstatus,
        "backend": current.backend.name,
        "events": len(lines),
        "dropped": recorder.dropped,
        "truncated": recorder.dropped > 0,
    }
    lines.append(json.dumps(outcome, separators=(",", ":")))
    # One write: a reader that finds no outcome line knows the run did not finish.
    with open(current.out, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
