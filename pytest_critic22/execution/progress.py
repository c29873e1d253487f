"""Live progress: what the review is doing while it runs, and that it is alive.

A progress sink is any callable ``(text) -> None`` (:data:`Progress`); one may say it is
``live`` (a terminal line updated in place, where every counter and tick is welcome) — else
it is a log, where each step is one line and the model call ticks every ten seconds. The
text is always OUR text, built from finding ids, kinds, tree names and counters: never a
child's output nor the critic's text. Every line is cleaned once more before it is shown.

- :class:`TerminalProgress`: the controller's display (a pytest plugin: it steps aside
  before pytest writes an item's outcome);
- :class:`FileProgress`: an xdist worker's sink, one appended line per step in the run's
  scratch folder, which the controller's :class:`Tailer` reads and shows;
- :func:`ticking`, :class:`Counter`, :func:`labelled`: what the producers use.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "PREFIX",
    "Counter",
    "FileProgress",
    "Progress",
    "Tailer",
    "TerminalProgress",
    "Tick",
    "clean",
    "controller_display",
    "folder_of",
    "is_live",
    "labelled",
    "step",
    "ticking",
    "worker_progress",
]

Progress = Callable[[str], None]
_Wrapper = Generator[None, object, object]  # a pytest hook wrapper
PREFIX = "critic22: "
MODE_KEY = "critic22_progress"  # the workerinput key: "live" or "plain" (absent: quiet)
ELLIPSIS = " …"
_MAX_TEXT = 200
_WORKER = re.compile(r"^gw\d{1,4}$")
_CLEAR = "\x1b[K"  # erase to the end of the line


def clean(text: str) -> str:
    """One printable line of at most ``_MAX_TEXT`` characters: control characters (escape
    sequences, carriage returns, newlines) never reach the terminal, whoever wrote them."""
    printable = "".join(c if c.isprintable() else " " for c in text)
    line = " ".join(printable.split())
    return line if len(line) <= _MAX_TEXT else line[: _MAX_TEXT - 1] + "…"


def is_live(progress: Progress | None) -> bool:
    """Does this sink show a line updated in place (counters and ticks welcome)?"""
    return bool(getattr(progress, "live", False))


def step(progress: Progress | None, text: str) -> None:
    """One step of a procedure: ``text …``."""
    if progress is not None:
        progress(text + ELLIPSIS)


class _Labelled:
    def __init__(self, progress: Progress, label: str) -> None:
        self._progress = progress
        self.label = label
        self.live = is_live(progress)

    def __call__(self, text: str) -> None:
        self._progress(f"{self.label}: {text}")


def labelled(progress: Progress | None, label: str) -> Progress | None:
    """The sink with every line prefixed by ``label: `` (an item's id, its kind)."""
    return None if progress is None else _Labelled(progress, label)


class Counter:
    """``text 0/N suffix …`` at once; each step after it (``text 14/N suffix …``) only on a
    live display: a log gets one line per step, not one per replay. Thread-safe."""

    def __init__(self, progress: Progress | None, text: str, total: int, suffix: str = "") -> None:
        self._progress = progress
        self._text = text
        self._total = total
        self._suffix = suffix
        self._done = 0
        self._lock = threading.Lock()
        self._say(0)

    def _say(self, done: int) -> None:
        step(self._progress, f"{self._text} {done}/{self._total}{self._suffix}")

    def __call__(self) -> None:
        with self._lock:
            self._done += 1
            done = self._done
        if is_live(self._progress):
            self._say(done)


class Tick:
    """What a :func:`ticking` block ended with: its caller may say (``answered``)."""

    def __init__(self) -> None:
        self.outcome = "done"


@contextlib.contextmanager
def ticking(progress: Progress | None, text: str) -> Iterator[Tick]:
    """``text …``, then ``text … 12 s`` every second on a live display (every ten seconds
    in a log) while the block runs, and ``text … answered after 3 s`` when it ends."""
    tick = Tick()
    if progress is None:
        yield tick
        return
    sink = progress
    interval = 1.0 if is_live(sink) else 10.0
    start = time.monotonic()
    stop = threading.Event()
    sink(text + ELLIPSIS)

    def run() -> None:
        beats = 1
        while not stop.wait(max(0.0, start + beats * interval - time.monotonic())):
            with contextlib.suppress(Exception):  # a display that fails stops nothing
                sink(f"{text}{ELLIPSIS} {int(time.monotonic() - start)} s")
            beats += 1

    thread = threading.Thread(target=run, name="critic22-ticker", daemon=True)
    thread.start()
    try:
        yield tick
    except BaseException:
        tick.outcome = "failed"
        raise
    finally:
        stop.set()
        thread.join()
        with contextlib.suppress(Exception):
            sink(f"{text}{ELLIPSIS} {tick.outcome} after {int(time.monotonic() - start)} s")


# -- the controller's display --------------------------------------------------------------


class TerminalProgress:
    """Progress on pytest's terminal, registered as a plugin on the controller.

    On a terminal (``live``) one line below pytest's current line is rewritten in place
    (``\\r`` + text + erase); before pytest writes again it is erased and the cursor goes
    back to where pytest left it, so pytest's own output is untouched. In a log, each
    progress text is a plain line, and pytest's next outcome starts a line of its own.
    """

    def __init__(
        self,
        reporter: Any,
        *,
        live: bool,
        capture: Any = None,
        xdist: bool = False,
        verbose: bool = False,
    ) -> None:
        self.live = live
        self._reporter = reporter  # pytest's TerminalReporter
        self._capture = capture  # pytest's CaptureManager: an item's run is captured
        self._xdist = xdist  # the items' outcomes arrive from workers
        self._verbose = verbose  # -v: pytest writes an item's location first
        self._lock = threading.RLock()
        self._pending = False  # our text is on the terminal's current line
        self._column = 0  # live: where pytest's line ended when we went below it (-1: unknown)
        self._tailer: Tailer | None = None

    @property
    def mode(self) -> str:
        return "live" if self.live else "plain"

    def __call__(self, text: str) -> None:
        line = PREFIX + clean(text)
        with self._lock, self._uncaptured():
            if self.live:
                self._show_live(line)
            else:
                self._show_plain(line)

    def _show_live(self, line: str) -> None:
        width = max(20, int(getattr(self._tw, "fullwidth", 80)) - 1)
        if len(line) > width:
            line = line[: width - 1] + "…"
        lead = ""
        if not self._pending:
            self._column = self._current_column()
            lead = "\n" if self._column else ""  # below pytest's line, never over it
        self._tw.write_raw(f"{lead}\r{line}{_CLEAR}", flush=True)
        self._pending = True

    def _show_plain(self, line: str) -> None:
        if self._pending or self._current_column():
            self._tw.write("\n")
        self._tw.write(line, flush=True)
        self._pending = True

    def settle(self, nodeid: str | None = None) -> None:
        """Make way for pytest's output: erase the live line (the cursor back at the end
        of pytest's line), or end our plain line so that pytest's next one stands alone."""
        with self._lock, self._uncaptured():
            if not self._pending:
                return
            self._pending = False
            if self.live:
                back = f"\x1b[A\x1b[{self._column + 1}G" if self._column > 0 else ""
                self._tw.write_raw(f"\r{_CLEAR}{back}", flush=True)
                return
            reporter = self._reporter
            serial = nodeid is not None and not self._xdist
            if serial and not self._verbose and reporter.showfspath:
                reporter.currentfspath = None  # a new line that starts with the item's file
                reporter.write_fspath_result(nodeid, "")
            elif serial and self._verbose:
                reporter.currentfspath = None  # pytest starts a line with the item itself
            else:
                self._tw.write("\n", flush=True)
                reporter.currentfspath = None

    @property
    def _tw(self) -> Any:
        return self._reporter._tw

    def _current_column(self) -> int:
        width = getattr(self._tw, "width_of_current_line", -1)
        return width if isinstance(width, int) and width >= 0 else -1

    def _uncaptured(self) -> contextlib.AbstractContextManager[Any]:
        disabled = getattr(self._capture, "global_and_fixture_disabled", None)
        return disabled() if disabled is not None else contextlib.nullcontext()

    # -- xdist workers' lines, read from the run's scratch folder ------------------------
    def follow(self, folder: Path) -> None:
        """Show what the workers append under ``folder`` until :meth:`stop`."""
        if self._tailer is None:
            self._tailer = Tailer(folder, self)
            self._tailer.start()

    def stop(self) -> None:
        tailer, self._tailer = self._tailer, None
        if tailer is not None:
            tailer.stop()
        self.settle()

    # -- pytest writes: the display steps aside first, and waits ---------------------------
    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_logstart(self, nodeid: str) -> _Wrapper:
        with self._lock:
            self.settle(nodeid)
            return (yield)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> _Wrapper:
        with self._lock:
            self.settle(report.nodeid)
            return (yield)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_logfinish(self, nodeid: str) -> _Wrapper:
        with self._lock:
            self.settle(nodeid)
            return (yield)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self) -> _Wrapper:
        self.stop()
        return (yield)

    def pytest_unconfigure(self) -> None:
        self.stop()


def controller_display(config: pytest.Config) -> TerminalProgress | None:
    """The controller's display, registered as a plugin; None when quiet (``-q``) or when
    there is no terminal reporter."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or config.option.verbose < 0:
        return None
    isatty = reporter.isatty  # a method, or (before pytest 8.1) a bool
    display = TerminalProgress(
        reporter,
        live=bool(isatty() if callable(isatty) else isatty),
        capture=config.pluginmanager.get_plugin("capturemanager"),
        xdist=config.pluginmanager.has_plugin("dsession"),
        verbose=config.option.verbose > 0,
    )
    config.pluginmanager.register(display, "critic22-progress")
    return display


# -- xdist workers: a line per step appended to a file the controller follows ----------------


class FileProgress:
    """A worker's sink: each line one ``write`` to its own file, opened for appending."""

    def __init__(self, path: Path, *, live: bool) -> None:
        self.path = path
        self.live = live

    def __call__(self, text: str) -> None:
        data = (clean(text) + "\n").encode("utf-8", "replace")
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
        with contextlib.suppress(OSError):  # progress never breaks a run
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, flags | getattr(os, "O_CLOEXEC", 0), 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)


def folder_of(scratch: Path) -> Path:
    """Where a run's workers write their progress: in its scratch folder, shared by all."""
    return scratch / "progress"


def worker_progress(workerinput: dict[str, Any], folder: Path) -> FileProgress | None:
    """The sink of the worker the controller gave ``workerinput`` (None: the controller is
    quiet)."""
    mode = workerinput.get(MODE_KEY)
    if mode not in ("live", "plain"):
        return None
    worker = str(workerinput.get("workerid", ""))
    name = worker if _WORKER.match(worker) else "worker"
    return FileProgress(folder / f"{name}.log", live=mode == "live")


class Tailer:
    """Reads the lines appended to ``folder/gwN.log`` and shows each once, in order, as
    ``[gwN] text``. The files are read as untrusted: regular files only, never through a
    link, every line cleaned before it is shown."""

    def __init__(self, folder: Path, show: Progress, interval: float = 0.25) -> None:
        self.folder = folder
        self._show = show
        self._interval = interval
        self._offsets: dict[str, int] = {}
        self._partial: dict[str, bytes] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll(self) -> int:
        """Show what was appended since the last poll; the number of lines shown."""
        try:
            names = sorted(p.name for p in self.folder.iterdir())
        except OSError:
            return 0
        shown = 0
        for name in names:
            worker = name[: -len(".log")]
            if not name.endswith(".log") or not _WORKER.match(worker):
                continue
            data = self._read(self.folder / name, self._offsets.get(name, 0))
            if not data:
                continue
            self._offsets[name] = self._offsets.get(name, 0) + len(data)
            *lines, rest = (self._partial.pop(name, b"") + data).split(b"\n")
            if rest:
                self._partial[name] = rest[-4096:]
            for raw in lines:
                text = clean(raw.decode("utf-8", "replace"))
                if text:
                    self._show(f"[{worker}] {text}")
                    shown += 1
        return shown

    @staticmethod
    def _read(path: Path, offset: int, limit: int = 1 << 16) -> bytes:
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(path, flags)
        except OSError:
            return b""
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return b""
            os.lseek(fd, offset, os.SEEK_SET)
            return os.read(fd, limit)
        except OSError:
            return b""
        finally:
            os.close(fd)

    def start(self) -> None:
        def run() -> None:
            while not self._stop.wait(self._interval):
                with contextlib.suppress(Exception):  # a display that fails stops nothing
                    self.poll()

        self._thread = threading.Thread(target=run, name="critic22-progress", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
