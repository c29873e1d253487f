"""Sessions that start from one configuration the fork-server prepared (presession.py).

Real runs under bubblewrap: what a session says must be what a fresh fork running all of
pytest says, and a configuration a fork could not copy faithfully is never shared (the
requests go to children of their own instead).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from pytest_critic22 import forkrun
from pytest_critic22.forkrun import ForkRequest, run_forked
from pytest_critic22.presession import _names_capture
from pytest_critic22.sandbox import probe_bwrap, resolve

needs_bwrap = pytest.mark.skipif(probe_bwrap() is not None, reason="needs bubblewrap")

CONFTEST = """
    import os
    import pytest

    IMPORTED_BY = os.getpid()
    CONFIGURED = []

    def pytest_configure(config):
        CONFIGURED.append(1)

    @pytest.fixture
    def configured():
        return list(CONFIGURED)
"""

MODULE = """
    import os, sys
    import pytest

    from conftest import IMPORTED_BY

    def test_prints_and_fails():
        print("conftest imported by", IMPORTED_BY, "this module is NAME")
        os.write(1, b"fd-level write\\n")
        assert False

    def test_capfd(capfd):
        os.write(1, b"xyz")
        assert capfd.readouterr().out == "xyz"

    def test_stdin_is_not_readable():
        with pytest.raises(OSError):
            input()

    def test_configured_in_this_session_only(configured):
        assert configured == [1]

    def test_its_own_arguments(request):
        assert request.config.args == ["tests/NAME.py"]
        assert "tests/NAME.py" in request.config.invocation_params.args
        assert sys.argv[0].endswith("__main__.py") and sys.argv[-1] == "tests/NAME.py"
        assert request.config.option.capture == "fd"
        assert request.config.getoption("critic22_attempts") == ATTEMPTS
        assert not [m for m in sys.modules if m.startswith("test_") and m != "NAME"]

    def test_flaky_in_its_session():
        os.environ["SEEN"] = os.environ.get("SEEN", "") + "x"
        assert os.environ["SEEN"] == "xx"
"""


def _tree(tmp_path: Path, conftest: str = CONFTEST, ini: str = "") -> Path:
    tree = tmp_path / "tree"
    (tree / "tests").mkdir(parents=True)
    (tree / "tests" / "conftest.py").write_text(textwrap.dedent(conftest))
    for name, attempts in (("test_a", 2), ("test_b", 1)):
        text = MODULE.replace("NAME", name).replace("ATTEMPTS", str(attempts))
        (tree / "tests" / f"{name}.py").write_text(textwrap.dedent(text))
    if ini:
        (tree / "pytest.ini").write_text(ini)
    return tree


def _run(tree: Path, prepare: bool, monkeypatch: pytest.MonkeyPatch, timeout: float = 60) -> list:
    monkeypatch.setattr(forkrun, "PREPARE", prepare)
    requests = [ForkRequest(("tests/test_a.py",), 2, 2), ForkRequest(("tests/test_b.py",), 1, 1)]
    return run_forked(tree, requests, timeout=timeout, pythonpath=[tree], sandbox=resolve("bwrap"))


def _said(result: tuple) -> tuple:
    run, cases = result
    output = re.sub(r" in [0-9.]+s", "", run.output)
    output = re.sub(r"conftest imported by \d+", "conftest imported by N", output)
    then = [(again.status, dict(again.tests)) for again in run.then]
    return run.status, run.exit_code, dict(run.tests), dict(run.attempts), then, output, cases


@needs_bwrap
def test_a_session_from_the_prepared_configuration_says_what_a_whole_session_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path)
    shared = _run(tree, True, monkeypatch)
    whole = _run(tree, False, monkeypatch)
    assert None not in shared and None not in whole
    assert [_said(r) for r in shared] == [_said(r) for r in whole]
    a, b = (r[0] for r in shared)
    assert a.tests["tests.test_a::test_prints_and_fails"] == "failed"
    assert set(a.tests.values()) == {"passed", "failed"}, a.output
    assert a.attempts["tests.test_a::test_flaky_in_its_session"] == ("failed", "passed")
    assert [again.status for again in a.then] == ["failed"]  # the fresh fork starts clean
    assert "Captured stdout call" in a.output and "fd-level write" in a.output
    assert b.tests["tests.test_b::test_flaky_in_its_session"] == "failed"  # one attempt
    # the proof that it was shared: the conftest was imported once, by the zygote (PID 1)
    assert "conftest imported by 1 " in a.output and "conftest imported by 1 " in b.output
    assert "conftest imported by 1 " not in whole[0][0].output


UNFAITHFUL = {  # what the conftest does on import: why the zygote gives up
    "thread": (
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n",
        "started a thread",
    ),
    "process": ("import subprocess\nKEPT = subprocess.Popen(['sleep', '60'])\n", "a process"),
    "tmp-file": ("open('/tmp/made-by-conftest', 'w').write('x')\n", "left files"),
    "descriptor": ("import os\nKEPT = os.open('/dev/null', os.O_RDONLY)\n", "descriptor"),
    "import-error": ("import no_such_module_anywhere\n", "(ModuleNotFoundError)"),
    # endless, against a session's limit of 5 s
    "hangs": (
        "import time\nwhile True:\n    time.sleep(1)\n",
        "failed here: ConftestImportFailure (TimeoutError)",
    ),
}


@needs_bwrap
@pytest.mark.parametrize("case", sorted(UNFAITHFUL))
def test_a_configuration_a_fork_cannot_copy_is_not_shared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    code, why = UNFAITHFUL[case]
    tree = _tree(tmp_path, code + textwrap.dedent(CONFTEST))
    said: list[str] = []
    in_order = forkrun._in_order

    def reading(lines: list[str], runs: list[int]) -> object:
        said.extend(lines)
        return in_order(lines, runs)

    monkeypatch.setattr(forkrun, "_in_order", reading)
    timeout = 5 if case == "hangs" else 60
    assert _run(tree, True, monkeypatch, timeout) == [None, None]  # children of their own decide
    assert '"broken"' in said[1] and why in said[1], said[:2]


@needs_bwrap
def test_a_configuration_that_chooses_its_capture_is_not_shared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path, ini="[pytest]\naddopts = -vs\n")
    assert _run(tree, True, monkeypatch) == [None, None]


def test_capture_options_are_read_from_short_option_clusters() -> None:
    assert _names_capture(["-s"]) and _names_capture(["-vs"]) and _names_capture(["--capture=sys"])
    assert not _names_capture(["-rs", "-q", "-p", "no:cacheprovider", "-k", "s"])


def test_only_sessions_of_one_folder_share_a_configuration() -> None:
    one = forkrun._one_configuration
    assert one([ForkRequest(("tests/test_a.py",)), ForkRequest(("tests/test_b.py::test_x",))])
    assert not one([ForkRequest(("tests/test_a.py",)), ForkRequest(("other/test_b.py",))])
    assert not one([ForkRequest(("tests/test_a.py", "-k", "x"))])
