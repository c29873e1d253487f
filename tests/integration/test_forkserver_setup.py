"""Sessions that start from one configuration the fork-server prepared (forkserver_setup.py).

The integration tier: with real git and sandboxed child processes. The rest, and the whole story:
tests/unit/test_forkserver_setup.py.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from pytest_critic22.execution import forkserver as forkrun
from pytest_critic22.execution.forkserver import ForkRequest, run_forked
from pytest_critic22.execution.sandbox import probe_bwrap, resolve
from tests.unit.test_forkserver_setup import CONFTEST, _tree

needs_bwrap = pytest.mark.skipif(probe_bwrap() is not None, reason="needs bubblewrap")


def _run(tree: Path, prepare: bool, monkeypatch: pytest.MonkeyPatch, timeout: float = 60) -> list:
    monkeypatch.setattr(forkrun, "PREPARE", prepare)
    requests = [ForkRequest(("tests/test_a.py",), 1, 2), ForkRequest(("tests/test_b.py",), 1, 1)]
    return run_forked(tree, requests, timeout=timeout, pythonpath=[tree], sandbox=resolve("bwrap"))


def _plain(text: str) -> str:
    text = re.sub(r" in [0-9.]+s", "", text)
    text = re.sub(r" at 0x[0-9a-f]+", " at 0x...", text)
    return re.sub(r"conftest imported by \d+", "conftest imported by N", text)


def _said(result: tuple) -> tuple:
    run, cases = result
    cases = [(case.key, case.status, case.attempts, _plain(case.text)) for case in cases]
    # the output's lines sorted: with -s, what a conftest printed on import leaves Python's
    # buffer at the session's start here, later in a separate child
    output = sorted(_plain(run.output).splitlines())
    return run.status, run.exit_code, dict(run.tests), dict(run.attempts), output, cases


@needs_bwrap
@pytest.mark.parametrize("capture", ["", "-s", "--capture=sys"])
def test_a_session_from_the_prepared_configuration_says_what_a_whole_session_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capture: str
) -> None:
    tree = _tree(tmp_path, ini=f"[pytest]\naddopts = {capture}\n" if capture else "")
    shared = _run(tree, True, monkeypatch)
    whole = _run(tree, False, monkeypatch)
    assert None not in shared and None not in whole
    assert [_said(r) for r in shared] == [_said(r) for r in whole]
    a, b = (r[0] for r in shared)
    assert a.tests["tests.test_a::test_prints_and_fails"] == "failed"
    assert set(a.tests.values()) == {"passed", "failed"}, a.output
    assert a.attempts["tests.test_a::test_flaky_in_its_session"] == ("failed", "passed")
    if not capture:
        assert "Captured stdout call" in a.output and "fd-level write" in a.output
    elif capture == "-s":  # printed on the conftest's import, as a separate child prints it
        assert "conftest says hello on import" in a.output

    assert b.tests["tests.test_b::test_flaky_in_its_session"] == "failed"  # one attempt
    # the proof that it was shared: the conftest was imported once, by the zygote (PID 1)
    assert "conftest imported by 1 " in a.output and "conftest imported by 1 " in b.output
    assert "conftest imported by 1 " not in whole[0][0].output


UNFAITHFUL = {  # what the conftest does on import: why the zygote gives up (None: it ends)
    "thread": (
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n",
        "threads",
    ),
    "process": ("import subprocess\nKEPT = subprocess.Popen(['sleep', '60'])\n", "processes"),
    "tmp-file": ("open('/tmp/made-by-conftest', 'w').write('x')\n", "files"),
    "descriptor": ("import os\nKEPT = os.open('/dev/null', os.O_RDONLY)\n", "descriptors"),
    "lock": ("import multiprocessing\nLOCK = multiprocessing.Lock()\n", "shared memory"),
    "mmap": ("import mmap\nSHARED = mmap.mmap(-1, 4096)\n", "shared memory"),
    "signal": (
        "import signal\nsignal.signal(signal.SIGUSR1, lambda *a: None)\n",
        "signal handlers",
    ),
    "import-error": ("import no_such_module_anywhere\n", "(ModuleNotFoundError)"),
    "hangs": ("import time\nwhile True:\n    time.sleep(1)\n", None),  # a session's limit: 3 s
}


@needs_bwrap
@pytest.mark.parametrize("case", sorted(UNFAITHFUL))
def test_a_configuration_a_fork_cannot_copy_is_not_shared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """The zygote restarts without it (a fresh process image, the sandbox swept again) and
    runs whole sessions; one that hangs ends the zygote, and children of their own decide."""
    code, why = UNFAITHFUL[case]
    tree = _tree(tmp_path, code + textwrap.dedent(CONFTEST))
    said: list[str] = []
    in_order = forkrun._in_order

    def reading(lines: list[str], runs: list[int]) -> object:
        said.extend(lines)
        return in_order(lines, runs)

    monkeypatch.setattr(forkrun, "_in_order", reading)
    timeout = 3 if case == "hangs" else 60
    results = _run(tree, True, monkeypatch, timeout)
    if why is None:  # the zygote ended at the session's limit, without a result
        assert results == [None, None]
        assert not [line for line in said if line.startswith('{"job"')], said
        return
    assert said[:3] == ['{"ready": true}', said[1], '{"ready": true}'], said[:3]
    assert '"restarted"' in said[1] and why in said[1], said[1]
    if case == "import-error":  # an error with plugins blocked: a child of its own, whole
        assert results == [None, None]
        return
    for result in results:
        assert result is not None
        run = result[0]  # whole sessions: each imported the conftest itself
        assert run.status == "failed" and "conftest imported by 1 " not in run.output


@needs_bwrap
def test_sessions_confirmed_by_fresh_forks_do_not_share_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A random generator made on a conftest's import would be the same in every fork."""
    tree = _tree(tmp_path)
    requests = [ForkRequest(("tests/test_a.py",), 2, 1)]
    run = run_forked(tree, requests, timeout=60, pythonpath=[tree], sandbox=resolve("bwrap"))
    assert run[0] is not None and "conftest imported by 1 " not in run[0][0].output


REGISTRY_CONFTEST = """
    import pytest
    import _pytest.monkeypatch
    import _pytest.terminal

    IMPORTED_BY = __import__("os").getpid()

    @pytest.fixture
    def configured():
        return "conftest"

    def pytest_configure(config):
        # after the fork: pytest's own module changed, which its recorded scan must notice
        @pytest.fixture
        def monkeypatch():
            yield "replaced in pytest_configure"

        _pytest.monkeypatch.monkeypatch = monkeypatch

        # and a class of pytest's whose instance each session registers
        @pytest.fixture
        def reported(self):
            return f"by the {type(self).__name__}"

        _pytest.terminal.TerminalReporter.reported = reported
"""


REGISTRY_PLUGIN = """
    import pytest

    @pytest.fixture(autouse=True)
    def plugged():
        return "plugin"
"""


REGISTRY_MODULE = """
    import pytest

    from conftest import IMPORTED_BY

    def _name(value):
        if hasattr(value, "nodeid"):
            return "node:" + value.nodeid
        if hasattr(value, "__qualname__"):
            return f"{getattr(value, '__module__', '')}.{value.__qualname__}"
        return repr(value)

    def test_what_the_fixture_manager_holds(request, monkeypatch, tmpdir, plugged, reported):
        manager = request._fixturemanager
        lines = []
        for argname, by_node in manager._arg2node2fixturedefs.items():  # in their order
            for node, defs in by_node.items():
                for fixture in defs:
                    fields = sorted(vars(fixture).items())
                    said = [f"{k}={_name(v)}" for k, v in fields if k != "cached_result"]
                    lines.append(" ".join([argname, _name(node), *said]))
        for node, names in manager._node_autousenames.items():
            lines.append(f"autouse {_name(node)} {names}")
        lines.append(f"monkeypatch={monkeypatch} plugged={plugged} reported={reported}")
        lines.append(f"tmpdir={type(tmpdir)}")
        hook = type(manager).pytest_plugin_registered
        recorded = hasattr(hook, "__wrapped__")  # the zygote's recorded scan
        kind = "shared" if IMPORTED_BY == 1 else "whole"
        with open(f"registry-{kind}-{recorded}.txt", "w") as handle:
            handle.write("\\n".join(lines))
"""


@needs_bwrap
def test_a_session_from_the_prepared_configuration_registers_the_fixtures_a_whole_one_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest's scan of its own plugins, recorded once by the zygote, registers in each
    session exactly what a whole session's scan does: every fixture, with its function,
    scope, params, ids and node, in the same order; the autouse ones; the project's own
    plugin and conftest; and what a ``pytest_configure`` changed in pytest's own plugins."""
    tree = tmp_path / "tree"
    (tree / "tests").mkdir(parents=True)
    (tree / "tests" / "conftest.py").write_text(textwrap.dedent(REGISTRY_CONFTEST))
    (tree / "tests" / "test_registry.py").write_text(textwrap.dedent(REGISTRY_MODULE))
    (tree / "plug.py").write_text(textwrap.dedent(REGISTRY_PLUGIN))
    (tree / "pytest.ini").write_text("[pytest]\naddopts = -p plug\nusefixtures = configured\n")
    for prepare in (True, False):
        monkeypatch.setattr(forkrun, "PREPARE", prepare)
        # three sessions: the zygote records the scan for more than two only
        requests = [ForkRequest(("tests/test_registry.py",), 1, 1)] * 3
        results = run_forked(
            tree, requests, timeout=60, pythonpath=[tree], sandbox=resolve("bwrap")
        )
        for result in results:
            assert result is not None and result[0].status == "passed", result
    shared = (tree / "registry-shared-True.txt").read_text()
    whole = (tree / "registry-whole-False.txt").read_text()
    assert _plain(shared) == _plain(whole)
    assert "monkeypatch=replaced in pytest_configure plugged=plugin" in shared
    assert "reported=by the TerminalReporter" in shared
    assert "tmp_path node: " in shared and "plugged node: " in shared
    assert "['configured', 'plugged']" in shared  # ini's usefixtures, the plugin's autouse
