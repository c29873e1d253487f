"""The sandboxed pytest subprocess: timeouts kill the group, secrets never reach it."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from pytest_critic22.runner import clean_env, detect_pythonpath, is_secret_name, run_pytest

SECRETS = {
    "OPENAI_API_KEY": "sk-planted",
    "ANTHROPIC_API_KEY": "planted",
    "MY_SERVICE_TOKEN": "planted",
    "DB_PASSWORD": "planted",
    "AWS_SECRET_ACCESS_KEY": "planted",
    "GITHUB_TOKEN": "planted",
    "CRITIC22_MODEL": "openai/x",
}


def write_test(tree: Path, body: str) -> None:
    (tree / "test_probe.py").write_text(body)


def test_a_passing_and_a_failing_run_are_read_from_the_junit_report(tmp_path: Path) -> None:
    write_test(tmp_path, "def test_a():\n    assert True\n\ndef test_b():\n    assert False\n")
    result = run_pytest(tmp_path, ["test_probe.py"], timeout=60, pythonpath=[tmp_path])
    assert result.status == "failed"
    assert result.tests == {"test_probe::test_a": "passed", "test_probe::test_b": "failed"}
    passing = run_pytest(tmp_path, ["test_probe.py::test_a"], timeout=60, pythonpath=[tmp_path])
    assert passing.status == "passed" and passing.exit_code == 0


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


def test_a_hung_test_and_its_stubborn_child_are_killed_at_the_timeout(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    write_test(
        tmp_path,
        "import subprocess, sys, time\n"
        "STUBBORN = ('import signal, time; '\n"
        "            'signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)')\n"
        "def test_hang():\n"
        "    child = subprocess.Popen([sys.executable, '-c', STUBBORN])\n"
        f"    open({str(pidfile)!r}, 'w').write(str(child.pid))\n"
        "    time.sleep(600)\n",
    )
    start = time.monotonic()
    result = run_pytest(tmp_path, ["test_probe.py"], timeout=4, pythonpath=[tmp_path])
    elapsed = time.monotonic() - start
    assert result.status == "error" and result.reason == "timed out after 4s"
    assert elapsed < 60  # a hang bound, not a speed claim: the test itself sleeps 600 s
    assert _gone(int(pidfile.read_text()))


def _gone(pid: int) -> bool:
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def test_the_child_sees_no_secret_and_the_tree_first_on_its_path(tmp_path: Path) -> None:
    out = tmp_path / "env.json"
    write_test(
        tmp_path,
        "import json, os, sys\n"
        "def test_env():\n"
        f"    with open({str(out)!r}, 'w') as fh:\n"
        "        json.dump({'env': dict(os.environ), 'path': sys.path}, fh)\n",
    )
    planted = {**os.environ, **SECRETS, "PYTEST_ADDOPTS": "-x", "PYTHONPATH": "/elsewhere"}
    result = run_pytest(tmp_path, ["test_probe.py"], timeout=60, pythonpath=[tmp_path], env=planted)
    assert result.status == "passed"
    seen = json.loads(out.read_text())
    for name in SECRETS:
        assert name not in seen["env"]
    assert not any("planted" in value for value in seen["env"].values())
    assert "PYTEST_ADDOPTS" not in seen["env"]
    assert seen["env"]["PYTHONPATH"] == str(tmp_path)
    assert seen["env"]["PYTHONDONTWRITEBYTECODE"] == "1"


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("OPENAI_API_KEY", True),
        ("HF_TOKEN", True),
        ("npm_config_password", True),
        ("AZURE_OPENAI_ENDPOINT", True),
        ("PATH", False),
        ("HOME", False),
        ("LANG", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_clean_env_and_pythonpath_detection(tmp_path: Path) -> None:
    assert detect_pythonpath(tmp_path) == [tmp_path]
    (tmp_path / "src").mkdir()
    assert detect_pythonpath(tmp_path) == [tmp_path / "src", tmp_path]
    assert detect_pythonpath(tmp_path, ["lib"]) == [tmp_path / "lib"]
    env = clean_env(
        {"PATH": "/bin", "PYTEST_XDIST_WORKER": "gw0", "COV_CORE_SOURCE": "x"}, [tmp_path]
    )
    assert (
        env["PATH"] == "/bin" and "PYTEST_XDIST_WORKER" not in env and "COV_CORE_SOURCE" not in env
    )
