"""The sandboxed pytest subprocess: timeouts kill the group, secrets never reach it, no
capability, no service socket, no argument file, its own temp folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_critic22.execution.runner import clean_env, detect_pythonpath, run_pytest
from pytest_critic22.execution.sandbox import bwrap_argv
from pytest_critic22.model.scrub import is_secret_name


def write_test(tree: Path, body: str) -> None:
    (tree / "test_probe.py").write_text(body)


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


def test_an_argument_file_is_refused_before_anything_runs(tmp_path: Path) -> None:
    # pytest reads "@x.py" as a file of arguments ("x.py"): options smuggled past every check.
    outside = tmp_path / "smuggled.xml"
    (tmp_path / "x.py").write_text(f"--junitxml={outside}\n")
    (tmp_path / "@x.py").write_text(f"--junitxml={outside}\n")
    write_test(tmp_path, "def test_a():\n    pass\n")
    result = run_pytest(tmp_path, ["@x.py", "test_probe.py"], timeout=60, pythonpath=[tmp_path])
    assert result.status == "error" and "refused to run" in result.reason
    assert result.exit_code is None and not outside.exists()


def test_bwrap_argv_hides_what_holds_credentials_and_drops_every_capability(
    tmp_path: Path,
) -> None:
    argv = bwrap_argv(["true"], tree=tmp_path, writable=[])
    joined = " ".join(argv)
    assert "--cap-drop ALL" in joined
    for folder in ("/tmp", "/run"):
        if Path(folder).is_dir() and not Path(folder).is_symlink():
            assert f"--tmpfs {os.path.realpath(folder)}" in joined
    home = os.path.realpath(os.path.expanduser("~"))
    if home != "/" and Path(home).is_dir():
        assert any(
            argv[i] == "--tmpfs" and Path(home).is_relative_to(argv[i + 1])
            for i in range(len(argv) - 1)
        ), argv
    # The tree is bound last (it wins over every tmpfs), and the namespaces are all new.
    assert argv[argv.index("--unshare-all") - 3 :][:3] == ["--bind", str(tmp_path), str(tmp_path)]
    assert "--die-with-parent" in argv and "--new-session" in argv


def test_a_cpu_slot_given_back_in_the_process_wakes_its_waiter_without_polling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The waiter's condition here never times out: only the release's wake-up can get it
    the slot, and the slot is given back only once the waiter waits for it. Without the
    wake-up it waits forever, and this test fails at the join's bound."""
    import threading

    from pytest_critic22.execution import runner

    waiting = threading.Event()

    class NoPolling(threading.Condition):
        def wait(self, timeout: float | None = None) -> bool:
            waiting.set()  # still holding the condition's lock: no release can slip by
            return super().wait(None)

    monkeypatch.setattr(runner, "_GIVEN_BACK", NoPolling())
    held, got = threading.Event(), threading.Event()

    def second() -> None:
        held.wait()
        with runner.cpu_slot(tmp_path, 1):
            got.set()

    waiter = threading.Thread(target=second, daemon=True)
    waiter.start()
    with runner.cpu_slot(tmp_path, 1):
        held.set()
        assert waiting.wait(timeout=120)  # a hang bound: the waiter found the slot taken
    waiter.join(timeout=120)  # a hang bound, not a speed claim
    assert got.is_set()
