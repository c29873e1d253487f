"""Where the work of ``critic22 ab`` and ``critic22 mine`` runs: one interface, three engines.

The work is one function applied to many items (an ab unit, a mined commit);
:meth:`Engine.map_unordered` yields each item's result, or a :class:`Failed` when the engine
lost it (a worker died past the retries, the connection broke): a result, never a loss.

- :class:`Inline`: ``--jobs 1``, in this process (today's path, and the one tests drive).
- :class:`LocalPool`: a spawn process pool of ``--jobs`` workers, when the ``distributed``
  extra is not installed.
- :class:`DaskEngine`: Dask ``distributed``, a ``LocalCluster`` sized by ``--jobs`` or any
  running cluster by address (``--scheduler tcp://HOST:8786``). Imported only when used.

What a remote worker needs travels with the task: each git repository on the client's disk
the item names is bundled once, scattered to every worker, and unbundled into the worker's
own scratch (:class:`Shipping`). The client writes every cache file: a worker's disk is not
the client's.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.util
import os
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

__all__ = [
    "ENV_SCHEDULER",
    "DaskEngine",
    "Engine",
    "Failed",
    "Inline",
    "LocalPool",
    "Shipping",
    "add_scheduler_option",
    "have_distributed",
    "open_engine",
    "relocate",
]

T = TypeVar("T")
R = TypeVar("R")

#: The scheduler's address when ``--scheduler`` is not given.
ENV_SCHEDULER = "CRITIC22_SCHEDULER"
#: ``--scheduler pool``: today's process pool even where the extra is installed.
POOL = "pool"
#: How many times a task whose worker died is tried again elsewhere (the scheduler's
#: allowed-failures bounds it too); then it is a :class:`Failed`.
RETRIES = 2


@dataclass(frozen=True, slots=True)
class Failed:
    """The engine lost the task (not the work's own error): an infrastructure error."""

    reason: str


def _no_files(item: Any) -> Sequence[Path]:
    return ()


@dataclass(frozen=True, slots=True)
class Shipping(Generic[T]):
    """What an item needs on a worker without the client's file system.

    ``repos`` names the git repositories on the client's disk (each goes as a bundle),
    ``files`` the other files the item reads (each goes as its bytes, into one worker folder
    per client folder, names kept); ``localize`` gives the item with its paths moved to the worker's
    copies (:func:`relocate`). The package's own folder (its samples) maps to the worker's
    installed package. All three must be module-level functions (they are pickled).
    """

    repos: Callable[[T], Sequence[Path]]
    localize: Callable[[T, Mapping[Path, Path]], T]
    files: Callable[[T], Sequence[Path]] = _no_files


def relocate(path: Path, copies: Mapping[Path, Path]) -> Path:
    """``path`` on the worker: its copy, or under the copy of the deepest folder holding it."""
    if path in copies:
        return copies[path]
    for source in sorted(copies, key=lambda p: len(p.parts), reverse=True):
        if path.is_relative_to(source):
            return copies[source] / path.relative_to(source)
    return path


class Engine(Protocol):
    def map_unordered(
        self,
        fn: Callable[[T], R],
        items: Sequence[T],
        *,
        shipping: Shipping[T] | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> Iterator[tuple[int, R | Failed]]:
        """(index in ``items``, result) as each finishes. With ``stop``, only as many items
        are in flight as the engine has slots, and none is started once ``stop()`` holds."""
        ...

    def status(self) -> str:
        """Per-worker progress for the one progress line ('' when there is nothing to say)."""
        ...

    def close(self) -> None: ...


def add_scheduler_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run on the Dask cluster whose scheduler is at ADDRESS (tcp://HOST:8786; default "
        f"${ENV_SCHEDULER}); without one, a local cluster of --jobs workers (the "
        "pytest-critic22[distributed] extra) or a process pool; 'pool': the process pool",
    )


def have_distributed() -> bool:
    return importlib.util.find_spec("distributed") is not None


@contextlib.contextmanager
def open_engine(jobs: int, scheduler: str | None = None) -> Iterator[Engine]:
    """The engine for ``--jobs`` and ``--scheduler`` (else ``$CRITIC22_SCHEDULER``)."""
    address = scheduler or os.environ.get(ENV_SCHEDULER) or None
    engine: Engine
    if address == POOL:
        engine = Inline() if jobs <= 1 else LocalPool(jobs)
    elif address is not None:
        engine = DaskEngine(address=address)
    elif jobs <= 1:
        engine = Inline()
    elif have_distributed():
        engine = DaskEngine(jobs=jobs)
    else:
        engine = LocalPool(jobs)
    try:
        yield engine
    finally:
        engine.close()


# -- this process ------------------------------------------------------------------------------


class Inline:
    def map_unordered(
        self,
        fn: Callable[[T], R],
        items: Sequence[T],
        *,
        shipping: Shipping[T] | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> Iterator[tuple[int, R | Failed]]:
        for index, item in enumerate(items):
            if stop is not None and stop():
                return
            yield index, fn(item)

    def status(self) -> str:
        return ""

    def close(self) -> None:
        pass


# -- the process pool (no extra) ---------------------------------------------------------------


def _stop_worker(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def worker_init() -> None:
    """Pool workers leave Ctrl-C to the driver, which stops them with SIGTERM."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop_worker)


class LocalPool:
    """A spawn process pool: no fork of a process that may hold threads."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs

    def map_unordered(
        self,
        fn: Callable[[T], R],
        items: Sequence[T],
        *,
        shipping: Shipping[T] | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> Iterator[tuple[int, R | Failed]]:
        import multiprocessing
        from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

        context = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(
            max_workers=self.jobs, mp_context=context, initializer=worker_init
        )
        pending: dict[Future[R], int] = {}
        queue = list(range(len(items)))
        window = self.jobs if stop is not None else len(items)
        try:
            while True:
                while queue and len(pending) < window and not (stop is not None and stop()):
                    index = queue.pop(0)
                    pending[pool.submit(fn, items[index])] = index
                if not pending:
                    break
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: pending[f]):
                    yield pending.pop(future), future.result()
        except BaseException:
            for future in pending:
                future.cancel()
            for pid in list(getattr(pool, "_processes", None) or {}):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGTERM)
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)

    def status(self) -> str:
        return ""

    def close(self) -> None:
        pass


# -- Dask distributed --------------------------------------------------------------------------


def bundle_bytes(repo: Path) -> bytes:
    """Every ref of ``repo`` (and HEAD) as one git bundle."""
    with tempfile.TemporaryDirectory(prefix="critic22-bundle-") as folder:
        path = Path(folder) / "repo.bundle"
        subprocess.run(
            ["git", "bundle", "create", "-q", str(path), "--all"],
            cwd=repo,
            check=True,
            capture_output=True,
        )
        return path.read_bytes()


def _scratch_root() -> Path:
    """The worker's own local directory (removed with the worker), else the temp folder."""
    try:
        from distributed import get_worker

        return Path(get_worker().local_directory)
    except (ImportError, ValueError):
        return Path(tempfile.gettempdir())


def unbundle(data: bytes, root: Path) -> Path:
    """The bundle as a repository under ``root``, made once per bundle (concurrent tasks of one
    machine wait for the first)."""
    import fcntl

    digest = hashlib.sha256(data).hexdigest()[:16]
    dest = root / f"critic22-repo-{digest}"
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / f"critic22-repo-{digest}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if not (dest / ".git").exists():
            bundle = root / f"critic22-repo-{digest}.bundle"
            bundle.write_bytes(data)
            subprocess.run(
                ["git", "clone", "-q", "--no-checkout", str(bundle), str(dest)],
                check=True,
                capture_output=True,
            )
            bundle.unlink()
    finally:
        os.close(fd)
    return dest


def place(path: Path, data: bytes, root: Path) -> Path:
    """A client's file on the worker, in a folder per client folder (names kept)."""
    folder = root / f"critic22-files-{hashlib.sha256(str(path.parent).encode()).hexdigest()[:16]}"
    dest = folder / path.name
    if not dest.is_file() or dest.read_bytes() != data:
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f".{path.name}.{os.getpid()}.part"
        partial.write_bytes(data)
        partial.replace(dest)
    return dest


def _on_worker(
    fn: Callable[[T], R],
    item: T,
    localize: Callable[[T, Mapping[Path, Path]], T] | None,
    repos: Sequence[str],
    files: Sequence[str],
    package: str,
    *payloads: bytes,
) -> tuple[str, R]:
    """Runs on a worker: put what the item needs on this disk, run, say where it ran."""
    from distributed import get_worker

    if localize is not None:
        root = _scratch_root()
        copies: dict[Path, Path] = {Path(package): Path(__file__).resolve().parents[1]}
        bundles, contents = payloads[: len(repos)], payloads[len(repos) :]
        for repo, bundle in zip(repos, bundles, strict=True):
            copies[Path(repo)] = unbundle(bundle, root)
        for file, content in zip(files, contents, strict=True):
            copies[Path(file)] = place(Path(file), content, root)
        item = localize(item, copies)
    return get_worker().address, fn(item)


def _distributed() -> Any:
    """The ``distributed`` module, imported only when a Dask engine is used (untyped calls)."""
    import importlib

    return importlib.import_module("distributed")


class DaskEngine:
    """Dask ``distributed``: a ``LocalCluster`` of ``jobs`` one-thread workers, or the cluster
    at ``address``."""

    def __init__(self, *, jobs: int = 1, address: str | None = None) -> None:
        import logging

        distributed = _distributed()
        self.remote = address is not None
        self.cluster: Any = None
        if address is None:
            self.cluster = distributed.LocalCluster(
                n_workers=jobs,
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",  # a free port: never a clash
                silence_logs=logging.ERROR,
            )
            self.client: Any = distributed.Client(self.cluster)
        else:
            self.client = distributed.Client(address, timeout="30s")
        self.done: dict[str, int] = {}
        self.failed = 0
        self.bundles: dict[Path, Any] = {}
        self.files: dict[Path, Any] = {}

    def _bundle(self, repo: Path) -> Any:
        if repo not in self.bundles:
            self.bundles[repo] = self.client.scatter(bundle_bytes(repo), broadcast=True, hash=False)
        return self.bundles[repo]

    def _file(self, path: Path) -> Any:
        if path not in self.files:
            self.files[path] = self.client.scatter(path.read_bytes(), broadcast=True, hash=False)
        return self.files[path]

    def map_unordered(
        self,
        fn: Callable[[T], R],
        items: Sequence[T],
        *,
        shipping: Shipping[T] | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> Iterator[tuple[int, R | Failed]]:
        ship = shipping if self.remote else None  # a LocalCluster shares this disk
        window = len(items)
        if stop is not None:
            window = max(1, sum(self.client.nthreads().values()))
        queue = list(range(len(items)))
        pending: dict[Any, int] = {}
        flow = _distributed().as_completed()

        def submit() -> None:
            while queue and len(pending) < window and not (stop is not None and stop()):
                index = queue.pop(0)
                item = items[index]
                repos = [Path(r) for r in ship.repos(item)] if ship is not None else []
                files = [Path(f) for f in ship.files(item)] if ship is not None else []
                future = self.client.submit(
                    _on_worker,
                    fn,
                    item,
                    ship.localize if ship is not None else None,
                    [str(r) for r in repos],
                    [str(f) for f in files],
                    str(Path(__file__).resolve().parents[1]),
                    *[self._bundle(r) for r in repos],
                    *[self._file(f) for f in files],
                    pure=False,
                    retries=RETRIES,
                )
                pending[future] = index
                flow.add(future)

        try:
            submit()
            while pending:
                future = next(flow)
                index = pending.pop(future)
                if future.status == "finished":
                    worker, result = future.result()
                    self.done[worker] = self.done.get(worker, 0) + 1
                    yield index, result
                else:
                    self.failed += 1
                    yield index, Failed(_why(future))
                submit()
        finally:
            for future in pending:
                future.cancel()

    def status(self) -> str:
        try:
            running = {w: len(keys) for w, keys in self.client.processing().items()}
        except Exception:  # the scheduler went away: the line is only progress
            running = {}
        parts = []
        for worker in sorted(set(running) | set(self.done)):
            name = worker.removeprefix("tcp://")
            parts.append(f"{name} {self.done.get(worker, 0)} done {running.get(worker, 0)} running")
        line = f"workers [{', '.join(parts)}], {self.failed} failed"
        link = getattr(self.client, "dashboard_link", None) if self.cluster is None else None
        if self.cluster is not None and self.cluster.dashboard_link:
            link = self.cluster.dashboard_link
        return f"{line}, dashboard {link}" if link and _has_dashboard(self.client) else line

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.close()


def _has_dashboard(client: Any) -> bool:
    try:
        return "dashboard" in client.scheduler_info().get("services", {})
    except Exception:
        return False


def _why(future: Any) -> str:
    try:
        exc = future.exception()
    except Exception as lost:  # cancelled: the scheduler forgot it
        return f"the cluster lost the task: {type(lost).__name__}: {lost}"
    return f"the cluster lost the task: {type(exc).__name__}: {exc}"
