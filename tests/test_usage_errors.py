"""Bad input and unwritable outputs: one ``ERROR:`` line, exit status 4, nothing left behind.

Each case is checked before any worktree is built, so a refused run registers no worktree,
leaves no run folder in the temp dir, and creates no file in the repository.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_critic22.config.inputs import InputError, decode_utf8
from pytest_critic22.critic.finding import parse_findings
from pytest_critic22.execution.git import git, init_repo
from pytest_critic22.execution.trees import trees_root
from pytest_critic22.model.packet import build_packet
from pytest_critic22.model.patch import parse_patch
from pytest_critic22.state.ledger import folder_write_problem, write_problem

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")

PATCH = b"--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n"
MAX_KEYS = ("edits", "files", "symbols", "callers", "modules")
as_root = hasattr(os, "geteuid") and os.geteuid() == 0


@pytest.fixture
def repo(pytester: pytest.Pytester) -> Path:
    """A one-module git repository with a patch beside it, in pytester's folder."""
    (pytester.path / "m.py").write_text("x = 1\ny = 2\n")
    (pytester.path / "test_m.py").write_text("def test_ok():\n    assert True\n")
    init_repo(pytester.path)
    with open(pytester.path / ".git" / "info" / "exclude", "a") as fh:
        fh.write("runpytest-current\nstdout\nstderr\np.diff\n")
    (pytester.path / "p.diff").write_bytes(PATCH)
    return pytester.path


PYTESTER_FILES = {"runpytest-current", "stdout", "stderr"}


def state(repo: Path) -> tuple[str, str, set[str]]:
    """What a refused run must not change: the registered worktrees, the status, and the
    files in the repository (ignored ones too; pytester's own output files aside)."""
    return (
        git(["worktree", "list", "--porcelain"], repo).stdout,
        git(["status", "--porcelain", "--untracked-files=all"], repo).stdout,
        {
            str(p.relative_to(repo))
            for p in repo.rglob("*")
            if p.relative_to(repo).parts[0] not in {".git", *PYTESTER_FILES}
            and not p.relative_to(repo).parts[0].startswith("runpytest-")  # its --basetemp
        },
    )


def refused(pytester: pytest.Pytester, repo: Path, *args: str, words: tuple[str, ...]) -> str:
    """Run pytest; assert it stops with exactly one ERROR line, and return that line."""
    before = state(repo)
    result = pytester.runpytest_subprocess(*args)
    output = result.stdout.str() + "\n" + result.stderr.str()
    errors = [line for line in output.splitlines() if line.startswith("ERROR:")]
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output
    assert len(errors) == 1, output
    assert "Traceback" not in output and "INTERNALERROR" not in output, output
    for word in words:
        assert word in errors[0], errors[0]
    assert state(repo) == before
    assert git(["worktree", "list"], repo).stdout.count("\n") == 1
    assert not trees_root(repo).exists()
    return errors[0]


# -- a: the patch is not UTF-8 ---------------------------------------------------------------


def test_a_patch_that_is_not_utf8_is_one_error_naming_line_and_byte(
    pytester: pytest.Pytester, repo: Path
) -> None:
    (repo / "p.diff").write_bytes(PATCH.replace(b"+y = 3", b'+y = "\xff"'))
    line = refused(pytester, repo, "--critic22=p.diff", words=())
    assert line == (
        "ERROR: --critic22: p.diff line 6 is not valid UTF-8 (byte 0xff at column 7); "
        "re-encode the patch as UTF-8"
    )


def test_decode_utf8_counts_lines_and_character_columns_from_one() -> None:
    assert decode_utf8("é\n".encode(), "x") == "é\n"
    with pytest.raises(InputError, match=r"^f line 1 is not valid UTF-8 \(byte 0xfe at column 1\)"):
        decode_utf8(b"\xfe", "f")
    with pytest.raises(InputError, match=r"f line 3 .* \(byte 0xe9 at column 4\); re-encode it"):
        decode_utf8(b"a\n\nb" + "é".encode() + b"c\xe9d\n", "f", "it")


def test_a_spec_file_that_is_not_utf8_is_one_error(
    pytester: pytest.Pytester, repo: Path, tmp_path: Path
) -> None:
    (tmp_path / "spec.md").write_bytes(b"y must be 3\n\x80\n")
    refused(
        pytester,
        repo,
        "--critic22=p.diff",
        f"--critic22-spec=@{tmp_path / 'spec.md'}",
        words=("--critic22-spec: spec.md line 2 is not valid UTF-8", "re-encode the file"),
    )


def test_undecodable_repository_text_in_the_evidence_still_has_a_digest() -> None:
    patch = parse_patch(PATCH.decode())
    latin1 = b"caf\xe9".decode("utf-8", "surrogateescape")  # as evidence.py reads a file
    packet, _ = build_packet(patch, impact_evidence={"snippet": latin1})
    plain, _ = build_packet(patch, impact_evidence={"snippet": "cafe"})
    assert packet.digest.startswith("sha256:") and packet.digest != plain.digest


# -- b: the state folder cannot be written -----------------------------------------------------


def test_a_state_folder_that_cannot_be_created_is_one_error_naming_the_ledger_option(
    pytester: pytest.Pytester, repo: Path
) -> None:
    (repo / ".critic22").write_text("not a folder\n")  # works even as root, unlike chmod
    git(["add", ".critic22"], repo)
    git(["commit", "-qm", "a file in the way"], repo)
    refused(
        pytester,
        repo,
        "--critic22=p.diff",
        words=("the state folder", ".critic22 is not writable", "--critic22-ledger=PATH"),
    )
    assert (repo / ".critic22").read_text() == "not a folder\n"


@pytest.mark.skipif(as_root, reason="root writes into a read-only folder anyway")
def test_a_read_only_state_folder_is_one_error(pytester: pytest.Pytester, repo: Path) -> None:
    folder = repo / ".critic22"
    folder.mkdir()
    (folder / ".gitignore").write_text("*\n")
    folder.chmod(0o555)
    try:
        refused(
            pytester,
            repo,
            "--critic22=p.diff",
            words=("the state folder", "Permission denied", "--critic22-ledger"),
        )
    finally:
        folder.chmod(0o755)


def test_a_ledger_elsewhere_is_the_way_around_an_unwritable_state_folder(
    pytester: pytest.Pytester, repo: Path, tmp_path: Path
) -> None:
    (repo / ".critic22").write_text("not a folder\n")
    ledger = tmp_path / "elsewhere" / "ledger.jsonl"
    result = pytester.runpytest_subprocess(
        "--critic22=p.diff", f"--critic22-ledger={ledger}", "-p", "no:randomly"
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    assert ledger.is_file()
    assert git(["worktree", "list"], repo).stdout.count("\n") == 1


# -- c: ini values ------------------------------------------------------------------------------


@pytest.mark.parametrize("key", MAX_KEYS)
def test_a_max_ini_value_that_is_not_a_number_is_one_error(
    pytester: pytest.Pytester, repo: Path, key: str
) -> None:
    pytester.makeini(f"[pytest]\ncritic22_max_{key} = abc\n")
    line = refused(pytester, repo, "--critic22=p.diff", words=())
    assert line.startswith(f"ERROR: ini critic22_max_{key}: 'abc' is not a whole number")


def test_a_negative_max_ini_value_is_one_error(pytester: pytest.Pytester, repo: Path) -> None:
    pytester.makeini("[pytest]\ncritic22_max_callers = -2\n")
    refused(
        pytester,
        repo,
        "--critic22=p.diff",
        words=("ini critic22_max_callers: '-2' must not be negative",),
    )


# -- d: the report cannot be written ------------------------------------------------------------


def test_an_unwritable_report_path_is_one_error_before_any_item_runs(
    pytester: pytest.Pytester, repo: Path, tmp_path: Path
) -> None:
    (tmp_path / "afile").write_text("")
    refused(
        pytester,
        repo,
        "--critic22=p.diff",
        f"--critic22-report={tmp_path / 'afile' / 'out' / 'review.json'}",
        words=("--critic22-report: cannot write", "afile is a file, not a folder"),
    )
    assert (tmp_path / "afile").read_text() == ""
    assert not (repo / ".critic22").exists()  # the ledger check before it left nothing either


def test_a_report_path_that_is_a_folder_is_one_error(
    pytester: pytest.Pytester, repo: Path, tmp_path: Path
) -> None:
    refused(
        pytester,
        repo,
        "--critic22=p.diff",
        f"--critic22-report={tmp_path}",
        words=("--critic22-report: cannot write", "is a folder", "choose a writable path"),
    )


# -- e: the ledger cannot be written ------------------------------------------------------------


def test_an_unwritable_ledger_path_is_one_error(
    pytester: pytest.Pytester, repo: Path, tmp_path: Path
) -> None:
    (tmp_path / "afile").write_text("")
    refused(
        pytester,
        repo,
        "--critic22=p.diff",
        f"--critic22-ledger={tmp_path / 'afile' / 'ledger.jsonl'}",
        words=("--critic22-ledger: cannot write", "afile is a file, not a folder"),
    )


# -- the write probe itself ---------------------------------------------------------------------


def test_write_problem_finds_out_by_writing_and_leaves_nothing_behind(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "report.json"
    assert write_problem(target) is None
    assert list(tmp_path.iterdir()) == []  # neither the file nor the folders it made
    existing = tmp_path / "ledger.jsonl"
    existing.write_text('{"kept": true}\n')
    assert write_problem(existing) is None
    assert existing.read_text() == '{"kept": true}\n'
    assert folder_write_problem(tmp_path) is None
    assert [p.name for p in tmp_path.iterdir()] == ["ledger.jsonl"]


def test_write_problem_says_what_is_in_the_way(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    assert (
        write_problem(tmp_path / "f" / "g" / "h.json")
        == f"{tmp_path / 'f'} is a file, not a folder"
    )
    assert write_problem(tmp_path) == f"{tmp_path} is a folder"
    assert folder_write_problem(tmp_path / "f") == f"{tmp_path / 'f'} is a file, not a folder"
    assert [p.name for p in tmp_path.iterdir()] == ["f"]


# -- f: thousands of dropped findings are one line ----------------------------------------------


def advisory(number: int) -> dict[str, object]:
    return {
        "location": "e1",
        "claim": f"claim {number}",
        "severity": "advisory",
        "evidence": "",
        "falsification": "",
        "confidence": 0.5,
    }


def test_ten_thousand_findings_drop_in_one_summary_line() -> None:
    records = [advisory(n) for n in range(10_000)]
    parsed = parse_findings(json.dumps(records), ["e1"], max_findings=20)
    assert len(parsed.findings) == 20
    assert len(parsed.dropped) == 9980  # the detail stays for the JSON report
    assert parsed.dropped_summary() == (
        "9980 records dropped beyond --critic22-max-findings=20 (records 21-10000)",
    )


def test_duplicates_and_the_cap_are_one_line_each() -> None:
    records = [advisory(1), advisory(2), advisory(1), advisory(3), advisory(2), advisory(4)]
    parsed = parse_findings(json.dumps(records), ["e1"], max_findings=2)
    assert parsed.dropped_summary() == (
        "2 records dropped as duplicates of earlier findings (records 3, 5)",
        "2 records dropped beyond --critic22-max-findings=2 (records 4, 6)",
    )
    assert parse_findings(json.dumps(records[:3]), ["e1"]).dropped_summary() == (
        "1 record dropped as a duplicate of an earlier finding (record 3)",
    )
    assert parse_findings(json.dumps(records[:2]), ["e1"]).dropped_summary() == ()


def test_the_terminal_summarises_thousands_of_dropped_findings(
    pytester: pytest.Pytester, repo: Path, tmp_path: Path
) -> None:
    findings = tmp_path / "many.json"
    findings.write_text(json.dumps([advisory(n) for n in range(10_000)]))
    result = pytester.runpytest_subprocess(
        "--critic22=p.diff", f"--critic22-findings={findings}", "--critic22-only"
    )
    output = result.stdout.str()
    assert "9980 records dropped beyond --critic22-max-findings=20" in output
    assert "dropped record" not in output
    assert len(output.splitlines()) < 100


# -- user-given node ids are data: obligations and the acceptance test ---------------------------


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("--critic22-obligations", "--junitxml=/tmp/out.py", ("looks like an option",)),
        ("--critic22-obligations", "/outside/test_out.py::test_x", ("inside the repository",)),
        ("--critic22-obligations", "tests/../../x.py::t", ("inside the repository",)),
        ("--critic22-acceptance", "test_missing.py::test_x", ("not a file of the repository",)),
    ],
    ids=["an-option", "an-absolute-path", "dot-dot", "missing-file"],
)
def test_a_user_node_id_outside_the_repository_is_one_error(
    pytester: pytest.Pytester, repo: Path, option: str, value: str, words: tuple[str, ...]
) -> None:
    line = refused(pytester, repo, "--critic22=p.diff", f"{option}={value}", words=words)
    assert line.startswith(f"ERROR: {option}:")


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bubblewrap: nothing is probed")
def test_a_usage_error_found_while_the_sandbox_probe_runs_waits_for_it(
    pytester: pytest.Pytester, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bubblewrap probe runs in a thread while the rest of the configuration is read
    (runconfig.start_probe). A usage error found meanwhile joins it before pytest ends: its
    child has ended and its temporary folder is gone."""
    from pytest_critic22.execution import sandbox

    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    sandbox.probe_bwrap.cache_clear()  # this process may have probed already
    result = pytester.runpytest_inprocess("--critic22=p.diff", f"--critic22-report={tmp_path}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert sandbox.probe_bwrap.cache_info().currsize == 1  # it did probe
    assert list(temp.iterdir()) == []


def test_a_ctrl_c_while_the_probe_runs_waits_for_it_then_stops_the_run() -> None:
    """runconfig.end_probe: Ctrl-C reaches the waiting controller; it waits for the probe
    still (its child ends at the same Ctrl-C, its folder is removed), then stops."""
    from pytest_critic22.plugin.runconfig import end_probe

    interrupted, cleaned, ended = threading.Event(), threading.Event(), threading.Event()

    def on_sigint(signum: int, frame: object) -> None:
        interrupted.set()
        raise KeyboardInterrupt

    def probe() -> None:  # the Ctrl-C comes while the controller waits for it
        main = threading.main_thread().ident or 0
        deadline = time.monotonic() + 60
        while not _waiting(sys._current_frames()[main]) and time.monotonic() < deadline:
            time.sleep(0.001)
        signal.pthread_kill(main, signal.SIGINT)
        interrupted.wait(timeout=60)
        time.sleep(0.2)  # still cleaning up: the controller must not be gone yet
        cleaned.set()
        ended.set()

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        threading.Thread(target=probe, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            end_probe(ended)
        assert cleaned.is_set()
    finally:
        signal.signal(signal.SIGINT, previous)


def _waiting(frame: Any) -> bool:
    """The thread of ``frame`` is blocked in ``Condition.wait``'s ``waiter.acquire()`` (a
    signal there leaves the condition's lock as it should be), called by ``end_probe``."""
    lines, first = inspect.getsourcelines(threading.Condition.wait)
    blocking = max(first + i for i, line in enumerate(lines) if line.strip() == "waiter.acquire()")
    if frame is None or (frame.f_code, frame.f_lineno) != (
        threading.Condition.wait.__code__,
        blocking,
    ):
        return False
    while frame is not None and frame.f_code.co_name != "end_probe":
        frame = frame.f_back
    return frame is not None


def test_the_sandbox_is_resolved_after_the_probe_ended_never_beside_it(
    pytester: pytest.Pytester, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """runconfig.resolve_sandbox waits for the probe the configuration started: a second
    probe beside a slow first one would run bubblewrap twice, and could decide the run's
    sandbox on one answer while the cache keeps the other."""
    from pytest_critic22.execution import sandbox

    lock, inside, calls = threading.Lock(), [0], []
    controller_probed = threading.Event()

    def probe() -> str:
        with lock:
            inside[0] += 1
            calls.append((threading.current_thread().name, inside[0]))
        if threading.current_thread() is threading.main_thread():
            controller_probed.set()
        else:  # slow: the controller would probe beside it were it not waiting
            controller_probed.wait(timeout=1)
        with lock:
            inside[0] -= 1
        return "a probe that says no"

    monkeypatch.setattr(sandbox, "probe_bwrap", probe)
    pytester.parseconfigure("--critic22=p.diff")
    assert calls == [("critic22-probe", 1), ("MainThread", 1)]
