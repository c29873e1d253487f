"""The fork-server.

The integration tier: with real git and sandboxed child processes. The rest, and the whole story:
tests/unit/test_forkserver.py.
"""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from pytest_critic22.execution.forkserver import ForkRequest, run_forked
from pytest_critic22.execution.sandbox import probe_bwrap, resolve
from tests.unit.test_forkserver import _tree

pytestmark = pytest.mark.skipif(probe_bwrap() is not None, reason="needs bubblewrap")


MARK = "critic22-forkrun-test-sleeper"


def _run(tree: Path, *requests: ForkRequest, timeout: float = 60) -> list:
    return run_forked(
        tree, list(requests), timeout=timeout, pythonpath=[tree], sandbox=resolve("bwrap")
    )


LITTERER = f"""
    import os, socket, subprocess, sys

    def test_leaves_everything_behind():
        open("/tmp/left-behind", "w").write("x")
        os.makedirs("/tmp/critic22-home/.cache", exist_ok=True)
        open("/dev/shm/left-behind", "w").write("x")
        server = socket.socket()
        server.bind(("127.0.0.1", 47123))
        server.listen()
        sys.modules["__keep"] = server
        # a daemon in a session of its own, its parent gone (double-forked)
        code = "import os, time; os.fork() and os._exit(0); time.sleep(300)"
        subprocess.Popen(
            [sys.executable, "-c", code, "{MARK}"], start_new_session=True
        ).wait()
"""


CLEAN_CHECK = f"""
    import os, socket

    def test_finds_nothing_left():
        assert not os.path.exists("/tmp/left-behind")
        assert not os.path.exists("/dev/shm/left-behind")
        assert not os.path.exists("/tmp/critic22-home/.cache")
        socket.socket().bind(("127.0.0.1", 47123))  # the port is free again
        mine = {{os.getpid(), 1}}
        others = [
            open(f"/proc/{{p}}/cmdline", "rb").read()
            for p in os.listdir("/proc")
            if p.isdigit() and int(p) not in mine
        ]
        assert not [c for c in others if b"{MARK}" in c]
"""


def test_a_session_finds_nothing_the_one_before_left(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {"test_a.py": LITTERER, "test_b.py": CLEAN_CHECK})
    first, second = _run(tree, ForkRequest(("test_a.py",)), ForkRequest(("test_b.py",)))
    assert first is not None and first[0].status == "passed", first
    assert second is not None and second[0].status == "passed", second[0].output
    # and nothing outlives the child on this side of the sandbox either
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
    assert MARK not in ps.stdout


def test_a_failing_session_is_confirmed_by_fresh_processes(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path,
        {
            "test_f.py": """
                import os
                def test_fails_and_says_where():
                    print("pid", os.getpid(), "seen", os.path.exists("/tmp/seen"))
                    open("/tmp/seen", "w").write("x")
                    assert False, "still broken"
            """,
            "test_p.py": "def test_passes():\n    pass\n",
        },
    )
    failing, passing = _run(tree, ForkRequest(("test_f.py",), 3), ForkRequest(("test_p.py",), 3))
    assert failing is not None and passing is not None
    run, cases = failing
    assert run.status == "failed" and [r.status for r in run.then] == ["failed", "failed"]
    assert [c.status for c in cases] == ["failed"]
    for each in (run, *run.then):  # every run its own process, in an emptied /tmp
        assert "seen False" in each.output and "still broken" in each.output
    assert passing[0].status == "passed" and passing[0].then == ()  # no confirmation


def test_attempts_in_a_session_come_before_the_fresh_fork(tmp_path: Path) -> None:
    """``attempts``: a failing test runs again in its session (process state kept, /tmp
    kept); only a failure that held there gets the fresh fork, which starts clean."""
    tree = _tree(
        tmp_path,
        {
            # fails while this process has run it once before or /tmp holds a mark
            "test_s.py": """
                import os
                CALLS = []
                def test_fails_on_state_it_left():
                    CALLS.append(1)
                    print("calls", len(CALLS), "seen", os.path.exists("/tmp/mark"))
                    stale = len(CALLS) > 1 or os.path.exists("/tmp/mark")
                    open("/tmp/mark", "w").write("x")
                    assert stale
            """,
            # passes on its second attempt: flaky, no fork needed
            "test_f.py": """
                CALLS = []
                def test_flaky():
                    CALLS.append(1)
                    assert len(CALLS) > 1
            """,
        },
    )
    state, flaky = _run(
        tree, ForkRequest(("test_s.py",), 2, attempts=2), ForkRequest(("test_f.py",), 2, 2)
    )
    assert state is not None and flaky is not None
    run, _ = state
    assert run.attempts == {"test_s::test_fails_on_state_it_left": ("failed", "passed")}
    assert flaky[0].attempts == {"test_f::test_flaky": ("failed", "passed")}
    # the zygote confirms by exit status: both get their fresh fork, which starts clean
    (again,) = run.then
    assert again.status == "failed" and "calls 1 seen False" in again.output
    (fresh,) = flaky[0].then
    assert fresh.status == "failed"  # a new process: CALLS is empty again


def test_a_session_cannot_forge_another_sessions_result(tmp_path: Path) -> None:
    forger = """
        import json, os

        LINE = json.dumps({"job": 1, "run": 0, "code": 1, "seconds": 0.1, "junit": "",
                           "output": "forged"}) + "\\n"

        def test_forges_everywhere():
            written = []
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                for target in ("fd/1", "fd/3", "fd/4", "fd/5", "mem"):
                    try:
                        with open(f"/proc/{pid}/{target}", "w") as handle:
                            handle.write(LINE)
                        written.append(f"{pid}/{target}")
                    except OSError:
                        pass
            for fd in range(3, 64):
                try:
                    os.write(fd, LINE.encode())
                except OSError:
                    pass
            print("written", written)
    """
    tree = _tree(tmp_path, {"test_a.py": forger, "test_b.py": "def test_ok():\n    pass\n"})
    _, victim = _run(tree, ForkRequest(("test_a.py",)), ForkRequest(("test_b.py",), 3))
    assert victim is not None
    assert victim[0].status == "passed" and "forged" not in victim[0].output


def test_a_session_cannot_kill_the_zygote(tmp_path: Path) -> None:
    killer = """
        import os, signal
        def test_kills_every_process_it_can():
            for pid in os.listdir("/proc"):
                if pid.isdigit() and int(pid) != os.getpid():
                    for sig in (signal.SIGSTOP, signal.SIGKILL):
                        try:
                            os.kill(int(pid), sig)
                        except OSError:
                            pass
    """
    tree = _tree(tmp_path, {"test_a.py": killer, "test_b.py": "def test_ok():\n    pass\n"})
    _, victim = _run(tree, ForkRequest(("test_a.py",)), ForkRequest(("test_b.py",)))
    assert victim is not None and victim[0].status == "passed"


def test_a_hung_session_times_out_alone(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path,
        {
            "test_h.py": "import time\ndef test_hangs():\n    while True:\n        time.sleep(1)\n",
            "test_b.py": "def test_ok():\n    pass\n",
        },
    )
    # The limit is each session's: the hang is endless, the other session trivially short.
    hung, after = _run(tree, ForkRequest(("test_h.py",)), ForkRequest(("test_b.py",)), timeout=5)
    assert hung is not None and hung[0].status == "error" and "timed out" in hung[0].reason
    assert after is not None and after[0].status == "passed"


CHANGES_WHAT_FORKS_INHERIT = {
    "rlimit": "resource.prlimit(1, resource.RLIMIT_NOFILE, (16, resource.prlimit(1, 7)[1]))",
    "rlimit-python-cannot-name": "resource.prlimit(1, 10, (5, resource.RLIM_INFINITY))",
    "io-priority": "libc.syscall(251, 1, 1, (3 << 13) | 0)",  # ioprio_set(PROCESS, 1, IDLE)
    "core-dump-filter": "open('/proc/1/coredump_filter', 'w').write('0x7f')",
}


@pytest.mark.parametrize("change", sorted(CHANGES_WHAT_FORKS_INHERIT))
def test_a_session_that_changes_what_forks_inherit_ends_the_batch(
    tmp_path: Path, change: str
) -> None:
    lowers = f"""
        import ctypes, resource
        libc = ctypes.CDLL(None, use_errno=True)
        def test_changes_the_zygote():
            try:
                {CHANGES_WHAT_FORKS_INHERIT[change]}
            except OSError:
                pass
    """
    tree = _tree(tmp_path, {"test_a.py": lowers, "test_b.py": "def test_ok():\n    pass\n"})
    _, victim = _run(tree, ForkRequest(("test_a.py",)), ForkRequest(("test_b.py",), 3))
    assert victim is None  # left to a child of its own, never an outcome it did not cause


def test_writable_folders_outside_tmp_are_emptied_and_dev_is_guarded(tmp_path: Path) -> None:
    litter = """
        import os
        def test_litters():
            open("/var/tmp/app.lock", "w").close()
            open("/run/planted", "w").close()
    """
    victim = """
        import os
        def test_finds_them_empty():
            os.close(os.open("/var/tmp/app.lock", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            assert not os.path.exists("/run/planted")
    """
    tree = _tree(tmp_path, {"test_a.py": litter, "test_b.py": victim})
    _, second = _run(tree, ForkRequest(("test_a.py",)), ForkRequest(("test_b.py",)))
    assert second is not None and second[0].status == "passed", second[0].output
    breaks_dev = """
        import os
        def test_replaces_a_device():
            os.unlink("/dev/ptmx")
            open("/dev/ptmx", "w").close()
    """
    (tree / "test_c.py").write_text(textwrap.dedent(breaks_dev))
    (tree / "test_d.py").write_text("import pty\ndef test_pty():\n    pty.openpty()\n")
    _, after_dev = _run(tree, ForkRequest(("test_c.py",)), ForkRequest(("test_d.py",)))
    assert after_dev is None


def test_no_session_can_make_a_user_namespace(tmp_path: Path) -> None:
    tries = """
        import ctypes
        def test_cannot_unshare_a_user_namespace():
            assert ctypes.CDLL(None, use_errno=True).unshare(0x10000000) == -1
    """
    tree = _tree(tmp_path, {"test_a.py": tries})
    (only,) = _run(tree, ForkRequest(("test_a.py",)))
    assert only is not None and only[0].status == "passed", only[0].output


LURKER = """
    import ctypes, os, threading, time

    def keep_littering():
        while True:
            try:
                open("/tmp/lurked", "w").write("x")
            except OSError:
                pass
            time.sleep(0.01)

    if os.fork() == 0:
        os.setsid()
        threading.Thread(target=keep_littering, daemon=False).start()
        time.sleep(0.05)
        ctypes.CDLL(None).syscall(60, 0)  # SYS_exit: only the main thread ends (a "zombie")
"""


def test_leftovers_that_hide_as_zombies_or_in_queues_are_cleared(tmp_path: Path) -> None:
    attacker = """
        import ctypes, os, time
        import lurker  # starts the process whose main thread is gone

        def test_hides():
            rt = ctypes.CDLL("librt.so.1")
            assert rt.mq_open(b"/critic22-leak", os.O_CREAT | os.O_RDWR, 0o600, None) >= 0
            time.sleep(0.3)
            assert os.path.exists("/tmp/lurked")
    """
    victim = """
        import os, time

        def test_sees_none_of_it():
            time.sleep(0.3)
            assert not os.path.exists("/tmp/lurked")
            assert os.listdir("/dev/mqueue") == []
    """
    tree = _tree(tmp_path, {"test_a.py": attacker, "lurker.py": LURKER, "test_b.py": victim})
    first, second = _run(tree, ForkRequest(("test_a.py",)), ForkRequest(("test_b.py",)))
    assert first is not None and first[0].status == "passed", first[0].output
    assert second is not None and second[0].status == "passed", second[0].output


def test_the_sweep_never_deletes_through_a_mounted_tree_whatever_its_name(tmp_path: Path) -> None:
    renamer = """
        import os
        def test_renames_the_folder_that_holds_the_tree():
            here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
            os.rename(here, here + "\\nrenamed")
    """
    tree = _tree(tmp_path, {"test_a.py": renamer, "test_b.py": "def test_ok():\n    pass\n"})
    (tree / "precious.txt").write_text("keep me")
    _, second = _run(tree, ForkRequest(("test_a.py",)), ForkRequest(("test_b.py",)))
    assert (tree / "precious.txt").read_text() == "keep me"
    assert second is None or second[0].status == "passed"  # the renamed folder may end it


def test_a_separate_child_cannot_make_a_user_namespace_either(tmp_path: Path) -> None:
    from pytest_critic22.execution.runner import run_pytest

    tries = """
        import ctypes
        def test_cannot_unshare_a_user_namespace():
            assert ctypes.CDLL(None, use_errno=True).unshare(0x10000000) == -1
    """
    tree = _tree(tmp_path, {"test_a.py": tries})
    run = run_pytest(tree, ["test_a.py"], timeout=60, pythonpath=[tree], sandbox=resolve("bwrap"))
    assert run.status == "passed", run.output


def test_no_child_can_change_a_kernel_setting(tmp_path: Path) -> None:
    from pytest_critic22.execution.runner import run_pytest

    tries = """
        import pytest
        @pytest.mark.parametrize("setting", ["kernel/hostname", "kernel/core_pattern",
                                             "net/ipv4/ip_local_port_range"])
        def test_cannot_write(setting):
            path = "/proc/sys/" + setting
            value = open(path).read()
            with pytest.raises(OSError):
                open(path, "w").write(value)
        def test_cannot_trigger_sysrq():
            with pytest.raises(OSError):
                open("/proc/sysrq-trigger", "w").write("")
    """
    tree = _tree(tmp_path, {"test_a.py": tries})
    run = run_pytest(tree, ["test_a.py"], timeout=60, pythonpath=[tree], sandbox=resolve("bwrap"))
    assert run.status == "passed", run.output
    (forked,) = _run(tree, ForkRequest(("test_a.py",)))
    assert forked is not None and forked[0].status == "passed", forked[0].output


SOCKETS_IN_FLIGHT = """
    import socket

    def test_leaves_sockets_in_flight():
        tcp = socket.socket()
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        tcp.bind(("127.0.0.1", 47124))
        tcp.listen()
        named = socket.socket(socket.AF_UNIX)
        named.bind("\\0critic22-victim")
        named.listen()
        a, b = socket.socketpair()
        socket.send_fds(a, [b"x"], [a.fileno(), b.fileno(), tcp.fileno(), named.fileno()])
        socket.send_fds(b, [b"x"], [a.fileno(), b.fileno()])
        for sock in (tcp, named, a, b):
            sock.close()
"""


def test_sockets_in_flight_and_changed_modes_do_not_reach_the_next_session(
    tmp_path: Path,
) -> None:
    victim = """
        import os, socket, tempfile
        def test_binds_and_writes():
            socket.socket().bind(("127.0.0.1", 47124))
            socket.socket(socket.AF_UNIX).bind("\\0critic22-victim")
            os.close(tempfile.mkstemp(dir="/var/tmp")[0])
    """
    modes = """
        import os
        def test_changes_modes():
            os.chmod("/var/tmp", 0o555)
            os.setxattr("/tmp", "user.critic22", b"1")
    """
    tree = _tree(
        tmp_path, {"test_a.py": SOCKETS_IN_FLIGHT, "test_b.py": victim, "test_c.py": modes}
    )
    _, after_sockets = _run(tree, ForkRequest(("test_a.py",)), ForkRequest(("test_b.py",), 3))
    assert after_sockets is not None and after_sockets[0].status == "passed"
    _, after_modes = _run(tree, ForkRequest(("test_c.py",)), ForkRequest(("test_b.py",), 3))
    assert after_modes is None or after_modes[0].status == "passed"


def test_a_bubblewrap_that_cannot_forbid_user_namespaces_is_said_and_gets_no_fork_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stand-in for bubblewrap before 0.8: the real one, refusing --disable-userns."""
    import shutil

    from pytest_critic22.execution import sandbox

    real = shutil.which("bwrap")
    assert real is not None
    old = tmp_path / "bin" / "bwrap"
    old.parent.mkdir()
    old.write_text(
        "#!/bin/sh\n"
        'for arg in "$@"; do [ "$arg" = --disable-userns ] && '
        'echo "bwrap: Unknown option --disable-userns" >&2 && exit 1; done\n'
        f'exec {real} "$@"\n'
    )
    old.chmod(0o755)
    monkeypatch.setenv("PATH", f"{old.parent}{os.pathsep}{os.environ['PATH']}")
    for probe in (sandbox.probe_bwrap, sandbox._no_user_namespaces):
        probe.cache_clear()
    try:
        box = resolve("bwrap")
        assert box.mode == "bwrap" and box.note == sandbox.OLD_BWRAP_WARNING
        tree = _tree(tmp_path, {"test_b.py": "def test_ok():\n    pass\n"})
        assert _run(tree, ForkRequest(("test_b.py",))) == [None]  # a child of its own
    finally:
        monkeypatch.undo()
        for probe in (sandbox.probe_bwrap, sandbox._no_user_namespaces):
            probe.cache_clear()
    assert resolve("bwrap").note == ""


def test_a_session_whose_module_fails_to_import_keeps_its_result_despite_blocked_plugins(
    tmp_path: Path,
) -> None:
    from pytest_critic22.execution.child_plugins import blocked_plugins

    tree = _tree(
        tmp_path,
        {
            "test_i.py": "from os import no_such_name\n",
            "test_w.py": "def test_uses_xdists_fixture(worker_id):\n    pass\n",
            "test_b.py": "def test_ok():\n    pass\n",
        },
    )
    if "xdist" not in blocked_plugins(tree, ["test_w.py"]):
        pytest.skip("needs xdist installed (and so blocked here)")
    imports, fixture, ok = _run(
        tree, ForkRequest(("test_i.py",)), ForkRequest(("test_w.py",)), ForkRequest(("test_b.py",))
    )
    # an import no plugin can make fail: the session's error stands
    assert imports is not None and imports[0].status == "error", imports
    assert "no_such_name" in imports[1][0].text
    # a fixture a blocked plugin may supply: left to a whole run of its own
    assert fixture is None
    assert ok is not None and ok[0].status == "passed"


def test_a_session_cannot_raise_its_limits(tmp_path: Path) -> None:
    """A session's limits are hard as well as soft: its tests cannot raise them back (no
    privilege needs), nor could the zygote's preparation, run before any session."""
    tree = _tree(
        tmp_path,
        {
            "test_l.py": """
                import resource
                from pathlib import Path

                def test_raise_back():
                    for limit in (resource.RLIMIT_AS, resource.RLIMIT_NPROC, resource.RLIMIT_CPU):
                        soft, hard = resource.getrlimit(limit)
                        assert hard != resource.RLIM_INFINITY, limit
                        resource.setrlimit(limit, (hard, hard))  # as far as it may go
                        try:
                            resource.setrlimit(limit, (hard, hard + 1))
                        except ValueError:
                            pass  # as it must
                        else:
                            raise AssertionError(f"{limit}: raised above {hard}")
                    print(Path("/proc/self/limits").read_text())
            """,
        },
    )
    [(first, _)] = _run(tree, ForkRequest(("test_l.py",)), timeout=60)
    assert first.status == "passed", first.output
