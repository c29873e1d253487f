"""Shared fixtures for the whole suite (root conftest, so benchmarks can use them too)."""

from __future__ import annotations

import contextlib
import importlib.abc
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

MODEL_CLIENTS = ("litellm", "openai", "anthropic")
_BYTECODE = "pytest-critic22-bytecode-"
_bytecode: list[Path] = []
_prefix: list[str | None] = []


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C reaches the processes the tests start; their bytecode in a folder of its own.

    Bytecode is never written next to a source: the end-to-end tests check, with
    ``git status``, that a review leaves the user's checkout as it was, and a sample's own
    tests imported in the test's process (the user's pytest, not the plugin's doing) would
    otherwise leave ``__pycache__`` folders there. With ``PYTHONDONTWRITEBYTECODE`` set (as
    on our CI machines), every process the tests start — hundreds of ``pytest --critic22``
    runs — would compile the package afresh and have pytest rewrite its asserts: about 2
    CPU-seconds each, a good part of the suite. So they share one bytecode cache, in a
    folder of this run's (``PYTHONPYCACHEPREFIX``), removed at the end (a killed run's, by
    the next). No outcome the tests check depends on it: the plugin's own
    children get their environment from the runner, which forbids bytecode itself, and the
    review's pytest that ``review()`` starts forbids it too (``test_api.py`` checks that
    without this folder).
    """
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # Started in the background by a shell without job control (`cmd &` in a script),
        # which ignores SIGINT, as every child would then: the tests that stop a run with
        # Ctrl-C would see it ignored. Python's own handler, as in a terminal.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if hasattr(config, "workerinput"):
        return  # a worker inherits the folder from its controller's environment
    from pytest_critic22.execution.child_files import prune_orphans

    prune_orphans(_BYTECODE)
    folder = Path(tempfile.mkdtemp(prefix=f"{_BYTECODE}{os.getpid()}-"))
    _bytecode.append(folder)
    _seed_bytecode(folder)
    os.environ["PYTHONPYCACHEPREFIX"] = str(folder)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    # This process too (a serial run's in-process pytester runs): Python and pytest's
    # assertion rewriter read the prefix at each write. Given back at unconfigure.
    _prefix.append(sys.pycache_prefix)
    sys.pycache_prefix = str(folder)


def _seed_bytecode(folder: Path) -> None:
    """Link the bytecode already compiled for the interpreter's and the virtualenv's modules
    into the cache ``folder``: with ``PYTHONPYCACHEPREFIX`` set, Python reads bytecode only
    from there, so each fresh cache had the first processes compile the standard library,
    pytest and litellm again (litellm alone about 6 CPU-seconds, the suite's workers and
    first reviews each at once). Links, not copies: Python replaces a file it rewrites (a new
    file renamed over the link), so the linked one is never written through. About 18,000
    links, about a second."""
    tag = f".{sys.implementation.cache_tag}.pyc"  # not -O's .opt-N.pyc
    unused = {"test", "tests", "idlelib", "tkinter", "turtledemo", "lib2to3"}
    here = os.path.dirname(os.path.abspath(__file__))  # the project's sources: none compiled
    for top in {os.path.abspath(p) for p in sys.path if os.path.isdir(p)} - {here}:
        for root, dirs, files in os.walk(top):
            if os.path.basename(root) != "__pycache__":
                dirs[:] = [d for d in dirs if d not in unused]
                continue
            dirs.clear()
            compiled = [f for f in files if f.endswith(tag)]
            if not compiled:
                continue
            into = folder / os.path.dirname(root).lstrip(os.sep)
            into.mkdir(parents=True, exist_ok=True)
            for name in compiled:
                _link(os.path.join(root, name), into / name)


def _link(source: str, link: Path) -> None:
    """A hard link where the file system allows one (no new inode: on some disks creating
    an inode costs a millisecond, and 18,000 symbolic links took 21 s there, the hard links
    under one), else a symbolic link (another device; a file protected_hardlinks keeps)."""
    with contextlib.suppress(FileExistsError):
        try:
            os.link(source, link)
        except OSError:
            os.symlink(source, link)


def pytest_unconfigure(config: pytest.Config) -> None:
    from pytest_critic22.execution.child_files import remove_tree

    while _prefix:
        sys.pycache_prefix = _prefix.pop()
    while _bytecode:
        remove_tree(_bytecode.pop())


class _ModelImportGuard(importlib.abc.MetaPathFinder):
    def __init__(self) -> None:
        self.attempts: list[str] = []

    def find_spec(self, fullname, path, target=None):  # type: ignore[no-untyped-def]
        if fullname.split(".")[0] in MODEL_CLIENTS:
            self.attempts.append(fullname)
            raise ImportError(f"model client {fullname!r} must not be imported here")
        return None


@pytest.fixture
def no_model_client() -> Iterator[None]:
    """Fail the test if anything imports (and so could call) a model client during it.

    A client this process imported earlier (another test's, :func:`litellm_loaded`) is put
    aside for the test, so that importing it goes through the guard again."""
    aside = {m: sys.modules.pop(m) for m in list(sys.modules) if m.split(".")[0] in MODEL_CLIENTS}
    guard = _ModelImportGuard()
    sys.meta_path.insert(0, guard)
    try:
        yield
    finally:
        sys.meta_path.remove(guard)
        after = {m for m in sys.modules if m.split(".")[0] in MODEL_CLIENTS}
        sys.modules.update(aside)
    assert not guard.attempts, f"a model client was imported: {guard.attempts}"
    assert not after, f"a model client was loaded: {sorted(after)}"


@pytest.fixture(scope="session")
def litellm_loaded() -> None:
    """litellm imported in this process (once per worker), as the plugin imports it, for the
    reviews the tests run in-process (``pytester.runpytest_inprocess``): each would otherwise
    import it again, about 8 CPU-seconds here. Session-scoped, so it comes before pytester's
    snapshot of ``sys.modules``, which would drop it after each run."""
    from pytest_critic22.critic.critic import CriticSettings, litellm_completion

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # as the plugin sets it
        litellm_completion(CriticSettings(model="openai/critic-test"))


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """An empty git repository in tmp_path (real git, no mocks)."""
    from pytest_critic22.execution.git import git

    repo = tmp_path / "repo"
    repo.mkdir()
    git(["init", "-q", "-b", "main"], repo)
    return repo


@pytest.fixture(params=["bwrap", "rlimits"])
def sandbox(request: pytest.FixtureRequest) -> object:
    """Each sandbox mode in turn (bubblewrap is required in CI, skipped elsewhere without it)."""
    from pytest_critic22.execution.sandbox import resolve
    from tests.sandboxes import bwrap_or_skip

    if request.param == "bwrap":
        return bwrap_or_skip()
    return resolve("rlimits")


@pytest.fixture(autouse=True)
def _no_ci_environment_leaks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite may itself run on GitHub Actions: no child review of a test may print
    annotations into that job or append to its summary."""
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


#: The pytest processes the tests start (reviews, the loop's and the miners' runs) load every
#: installed plugin but hypothesis' and anyio's: hypothesis' terminal summary imports all of
#: hypothesis, about 0.7 CPU-seconds in every process, which was a fifth of the suite's CPU;
#: anyio's plugin imports anyio, about 0.3 more (no sample has an async test). The plugin's own
#: children decide for themselves (``childplugins``: the sandbox passes no PYTEST_ADDOPTS).
#: Tests marked ``all_plugins`` start theirs as a user's shell would, with every plugin.
LEAN_ADDOPTS = "-p no:hypothesispytest -p no:anyio"


@pytest.fixture(autouse=True)
def _lean_pytest_processes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("all_plugins") is None:
        if "pytester" in request.fixturenames:
            request.getfixturevalue("pytester")  # which clears PYTEST_ADDOPTS: ours after it
        mine = os.environ.get("PYTEST_ADDOPTS", "")
        monkeypatch.setenv("PYTEST_ADDOPTS", f"{mine} {LEAN_ADDOPTS}".strip())


def _sigint_state_of_the_os() -> tuple[bool, bool]:
    """SIGINT in this process's ignored and blocked sets, as the kernel sees them (C code and
    other threads may change them; both survive exec into every child started later)."""
    bit = 1 << (2 - 1)
    found = {"SigIgn:": False, "SigBlk:": False}
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                key = line.split(":", 1)[0] + ":"
                if key in found:
                    found[key] = bool(int(line.split()[1], 16) & bit)
    except OSError:
        pass
    return found["SigIgn:"], found["SigBlk:"]


@pytest.fixture(autouse=True)
def _sigint_stays_interruptible() -> Iterator[None]:
    """A test that leaves SIGINT ignored in this process makes every child it starts later
    ignore Ctrl-C too (an ignored signal survives exec): the test that did it fails here."""
    import signal

    before = (signal.getsignal(signal.SIGINT), _sigint_state_of_the_os())
    yield
    after = (signal.getsignal(signal.SIGINT), _sigint_state_of_the_os())
    if after != before:
        signal.signal(signal.SIGINT, before[0])
        pytest.fail(f"this test left SIGINT as {after!r} (was {before!r})")


@pytest.fixture(autouse=True)
def _temp_folder_keeps_its_mode() -> Iterator[None]:
    """No test may change the system temp folder's mode: as root, removing a folder another
    remover had taken first once made /tmp 0700, and every later user of it that is not root
    failed (apt on CI: "Couldn't create temporary file /tmp/apt.conf..."). The test during
    which it changed fails here (under xdist, possibly one beside the culprit), and the mode
    is put back for the tests after it."""
    import stat

    temp = tempfile.gettempdir()
    before = os.stat(temp).st_mode
    yield
    after = os.stat(temp).st_mode
    if after != before:
        os.chmod(temp, stat.S_IMODE(before))
        pytest.fail(f"{temp}'s mode changed during this test: {oct(before)} -> {oct(after)}")
