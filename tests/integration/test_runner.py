"""The sandboxed pytest subprocess.

The integration tier: with real git and sandboxed child processes. The rest, and the whole story:
tests/unit/test_runner.py.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from pytest_critic22.execution.junit import Case
from pytest_critic22.execution.runner import run_cases, run_pytest
from pytest_critic22.execution.sandbox import Sandbox
from pytest_critic22.model.results import RunResult
from tests.sandboxes import bwrap_or_skip, pids_with
from tests.unit.test_runner import write_test

SECRETS = {
    "OPENAI_API_KEY": "sk-planted",
    "ANTHROPIC_API_KEY": "planted",
    "MY_SERVICE_TOKEN": "planted",
    "DB_PASSWORD": "planted",
    "AWS_SECRET_ACCESS_KEY": "planted",
    "GITHUB_TOKEN": "planted",
    "CRITIC22_MODEL": "openai/x",
}


def test_a_passing_and_a_failing_run_are_read_from_the_junit_report(tmp_path: Path) -> None:
    write_test(tmp_path, "def test_a():\n    assert True\n\ndef test_b():\n    assert False\n")
    result = run_pytest(tmp_path, ["test_probe.py"], timeout=60, pythonpath=[tmp_path])
    assert result.status == "failed"
    assert result.tests == {"test_probe::test_a": "passed", "test_probe::test_b": "failed"}
    passing = run_pytest(tmp_path, ["test_probe.py::test_a"], timeout=60, pythonpath=[tmp_path])
    assert passing.status == "passed" and passing.exit_code == 0


SHADOWS = """\
import pathlib
pathlib.Path(__file__).with_suffix(".imported").write_text("")
RLIMIT_CPU = RLIMIT_AS = RLIMIT_NPROC = 0
RLIM_INFINITY = -1
def getrlimit(limit):
    return (-1, -1)
def setrlimit(limit, values):
    pass
def CDLL(*args, **kwargs):
    raise OSError("no")
"""


# A test that reads its own limits, (soft, hard), from /proc (a line is the name in 26
# columns, then 21 for each value). The CPU limit is the child's timeout plus 5 (run_pytest's).
LIMITS_TEST = """\
from pathlib import Path

CPU, SPACE = 65, str(3 << 30)

def read():
    limits = Path('/proc/self/limits').read_text()
    print(limits)
    rows = {line[:26].strip(): (line[26:47].strip(), line[47:68].strip())
            for line in limits.splitlines()}
    return {'processes': rows['Max processes'], 'space': rows['Max address space'],
            'cpu': rows['Max cpu time']}

def test_limits():
"""


def test_a_tree_cannot_shadow_the_modules_that_set_its_limits(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    """A patch that adds ``resource.py`` (or ``ctypes.py``) at the repository's root: the
    launcher that sets the child's limits imported it from the tree (``python -c`` puts the
    working folder first on ``sys.path``) and the child ran without its process, memory and
    CPU limits. The limits are read from /proc, which no module of the tree can fake; hard
    ones too, or the test itself could raise them back."""
    for name in ("resource", "ctypes"):
        (tmp_path / f"{name}.py").write_text(SHADOWS)
    write_test(
        tmp_path,
        LIMITS_TEST + "    assert read() == {'processes': ('77', '77'), 'space': (SPACE, SPACE),"
        " 'cpu': (str(CPU), str(CPU + 5))}\n",
    )
    result = run_pytest(
        tmp_path,
        ["test_probe.py"],
        timeout=60,
        pythonpath=[tmp_path],
        memory_bytes=3 << 30,
        max_processes=77,
        sandbox=sandbox,
    )
    assert result.status == "passed", result.output
    assert not (tmp_path / "ctypes.imported").exists()


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["test_probe.py", "-k", "nothing_matches"], "no tests were collected"),
        (["no_such_file.py"], "usage error"),
        (["test_probe.py"], "errors during collection"),
    ],
)
def test_runs_that_say_nothing_about_the_claim_are_errors(
    tmp_path: Path, args: list[str], reason: str
) -> None:
    if reason.startswith("errors"):
        write_test(tmp_path, "import no_such_module\n\ndef test_a():\n    pass\n")
    else:
        write_test(tmp_path, "def test_a():\n    pass\n")
    result = run_pytest(tmp_path, args, timeout=60, pythonpath=[tmp_path])
    assert result.status == "error"
    assert reason in result.reason


def test_a_hung_test_and_its_stubborn_children_are_killed_at_the_timeout(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    marker = f"critic22-hung-{os.getpid()}-{sandbox.mode}"
    write_test(
        tmp_path,
        "import subprocess, sys, time\n"
        "STUBBORN = ('import signal, time; '\n"
        "            'signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)')\n"
        "def test_hang():\n"
        "    subprocess.Popen([sys.executable, '-c', STUBBORN])\n"
        "    time.sleep(600)\n",
    )
    start = time.monotonic()
    result = run_pytest(
        tmp_path,
        ["test_probe.py"],
        timeout=4,
        pythonpath=[tmp_path],
        sandbox=sandbox,
        extra_env={"PROBE_MARKER": marker},
    )
    elapsed = time.monotonic() - start
    assert result.status == "error" and result.reason == "timed out after 4s"
    assert elapsed < 60  # a hang bound, not a speed claim: the test itself sleeps 600 s
    assert _gone(marker)


def test_a_hang_in_a_tests_first_attempt_ends_the_child_at_one_attempts_limit(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    """Attempts in one child: each has the time a process of its own would have, so a hang
    is not waited out once per attempt. The child's own limit here is endless next to the
    attempt's 2 s: without the attempt's limit this test fails, and only after 600 s."""
    write_test(
        tmp_path,
        "import time\n\nimport pytest\n\ndef test_hang():\n    time.sleep(900)\n\n"
        "def test_fails():\n    assert False\n\n"
        "def test_exits():\n    pytest.exit('bye', returncode=124)\n",
    )

    def three_attempts(test: str) -> tuple[RunResult, list[Case]]:
        return run_cases(
            tmp_path,
            [f"test_probe.py::{test}"],
            timeout=600,
            pythonpath=[tmp_path],
            sandbox=sandbox,
            attempts=3,
            attempt_timeout=2,
        )

    failing, _ = three_attempts("test_fails")
    assert failing.status == "failed"  # every attempt well within its limit: no watchdog
    assert failing.attempts == {"test_probe::test_fails": ("failed", "failed", "failed")}
    # pytest's own exit status 124, with its report written: not the watchdog's
    exits, _ = three_attempts("test_exits")
    assert exits.status == "error" and "timed out" not in exits.reason, exits.reason
    hung, cases = three_attempts("test_hang")
    assert (hung.status, hung.reason, cases) == (
        "error",
        "timed out after 2s per run (3 in one child)",
        [],
    )


def _gone(marker: str) -> bool:
    for _ in range(50):
        if not pids_with(marker):
            return True
        time.sleep(0.1)
    return False


def test_the_child_sees_no_secret_and_the_tree_first_on_its_path(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    out = tmp_path / "env.json"
    write_test(
        tmp_path,
        "import json, os, sys\n"
        "def test_env():\n"
        f"    with open({str(out)!r}, 'w') as fh:\n"
        "        json.dump({'env': dict(os.environ), 'path': sys.path}, fh)\n",
    )
    planted = {**os.environ, **SECRETS, "PYTEST_ADDOPTS": "-x", "PYTHONPATH": "/elsewhere"}
    result = run_pytest(
        tmp_path, ["test_probe.py"], timeout=60, pythonpath=[tmp_path], env=planted, sandbox=sandbox
    )
    assert result.status == "passed", result.output
    seen = json.loads(out.read_text())
    for name in SECRETS:
        assert name not in seen["env"]
    assert not any("planted" in value for value in seen["env"].values())
    assert "PYTEST_ADDOPTS" not in seen["env"]
    assert seen["env"]["PYTHONPATH"] == str(tmp_path)
    assert seen["env"]["PYTHONDONTWRITEBYTECODE"] == "1"


def test_a_root_child_cannot_make_the_read_only_filesystem_writable(tmp_path: Path) -> None:
    """Running as root, a child kept every capability in its namespaces, and CAP_SYS_ADMIN
    remounted the read-only root read-write: every capability is dropped."""
    sandbox = bwrap_or_skip()
    outside = tmp_path.parent / f"critic22-remount-{os.getpid()}"
    tree = tmp_path / "tree"
    tree.mkdir()
    write_test(
        tree,
        "import subprocess\n"
        "def test_remount():\n"
        "    for target in ('/', '/tmp', '/usr'):\n"
        "        subprocess.run(['mount', '-o', 'remount,bind,rw', target], capture_output=True)\n"
        f"    try:\n        open({str(outside)!r}, 'w').write('x')\n"
        "    except OSError:\n        pass\n"
        "    status = open('/proc/self/status').read()\n"
        "    assert 'CapEff:\\t0000000000000000' in status, status\n",
    )
    try:
        result = run_pytest(tree, ["test_probe.py"], timeout=60, pythonpath=[tree], sandbox=sandbox)
        assert result.status == "passed", result.output
        assert not outside.exists()
    finally:
        outside.unlink(missing_ok=True)


def test_service_sockets_and_shared_temp_folders_are_out_of_reach(tmp_path: Path) -> None:
    """A network namespace does not stop a connection to a Unix socket on the filesystem
    (/run/docker.sock, /run/postgresql, ...): /run, /var/tmp and /tmp are hidden."""
    sandbox = bwrap_or_skip()
    folders = [Path(p) for p in ("/run", "/var/tmp") if os.access(p, os.W_OK)]
    if not folders:
        pytest.skip("neither /run nor /var/tmp is writable here")
    paths = [f / f"critic22-probe-{os.getpid()}-{id(f)}.sock" for f in folders]
    servers = []
    try:
        for path in paths:
            server = socket.socket(socket.AF_UNIX)
            server.bind(str(path))
            server.listen(1)
            servers.append(server)
        write_test(
            tmp_path,
            "import socket\n"
            f"PATHS = {[str(p) for p in paths]!r}\n"
            "def test_connect():\n"
            "    for path in PATHS:\n"
            "        client = socket.socket(socket.AF_UNIX)\n"
            "        try:\n"
            "            client.connect(path)\n"
            "        except OSError:\n"
            "            continue\n"
            "        raise AssertionError('connected to ' + path)\n",
        )
        result = run_pytest(
            tmp_path, ["test_probe.py"], timeout=60, pythonpath=[tmp_path], sandbox=sandbox
        )
        assert result.status == "passed", result.output
    finally:
        for server in servers:
            server.close()
        for path in paths:
            path.unlink(missing_ok=True)


def test_the_child_has_its_own_temp_folder_and_home_and_leaves_them_behind(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    tree, scratch = tmp_path / "tree", tmp_path / "scratch"
    tree.mkdir()
    out = tree / "seen.json"
    name = f"critic22-left-behind-{os.getpid()}-{sandbox.mode}"
    write_test(
        tree,
        "import json, os, tempfile\n"
        "def test_tmp(tmp_path):\n"
        "    (tmp_path / 'x').write_text('x')\n"
        f"    open(os.path.join(tempfile.gettempdir(), {name!r}), 'w').write('x')\n"
        "    json.dump({'tmp': tempfile.gettempdir(), 'home': os.environ['HOME']},\n"
        f"              open({str(out)!r}, 'w'))\n",
    )
    result = run_pytest(
        tree, ["test_probe.py"], timeout=60, pythonpath=[tree], sandbox=sandbox, scratch=scratch
    )
    assert result.status == "passed", result.output
    seen = json.loads(out.read_text())
    if sandbox.isolated:
        assert seen["tmp"] == "/tmp"  # the sandbox's private tmpfs
    else:
        assert Path(seen["tmp"]).is_relative_to(scratch) and Path(seen["home"]).is_relative_to(
            scratch
        )
    assert not (Path(tempfile.gettempdir()) / name).exists()
    assert list(scratch.iterdir()) == []  # the JUnit folder, home and temp folder: all gone


def test_a_run_whose_tests_pass_is_passed_whatever_the_exit_status_says(
    tmp_path: Path,
) -> None:
    # A plugin's session-finish hook (here: the project's conftest) turns a green run red,
    # as a coverage threshold or warnings-as-errors at exit do: the outcomes decide.
    (tmp_path / "conftest.py").write_text(
        "def pytest_sessionfinish(session, exitstatus):\n    session.exitstatus = 1\n"
    )
    write_test(tmp_path, "def test_a():\n    assert True\n")
    result = run_pytest(tmp_path, ["test_probe.py"], timeout=60, pythonpath=[tmp_path])
    assert (result.status, result.exit_code) == ("passed", 1)
    assert result.note == "exit status 1 ignored: the per-test outcomes decide (passed)"
    write_test(tmp_path, "def test_a():\n    assert False\n")
    failed = run_pytest(tmp_path, ["test_probe.py"], timeout=60, pythonpath=[tmp_path])
    assert (failed.status, failed.note) == ("failed", "")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to pin to one")
def test_the_cpus_a_run_uses_are_those_it_may_run_on_not_the_machines() -> None:
    """Pinned to one CPU (``taskset``, a cpuset), a review runs one child at a time."""
    one = min(os.sched_getaffinity(0))
    code = "from pytest_critic22.execution.runner import usable_cpus; print(usable_cpus())"
    pinned = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        preexec_fn=lambda: os.sched_setaffinity(0, {one}),
    )
    assert pinned.stdout.strip() == "1"
    free = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert free.stdout.strip() == str(len(os.sched_getaffinity(0)))
