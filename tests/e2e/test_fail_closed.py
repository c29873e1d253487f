"""The small fail-closed fixes, on real files, links and processes.

The end-to-end tier: whole pytest runs. The rest, and the whole story:
tests/unit/test_fail_closed.py.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_critic22.apps.loop import state
from pytest_critic22.apps.samples import SAMPLES_DIR, materialize
from pytest_critic22.execution.git import git, init_repo
from tests.unit.test_fail_closed import LINKS, message, plant, untouched

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="symbolic links, FIFOs, os.openpty"),
    pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning"),
]


CLI = "import sys; from pytest_critic22.apps.cli import main; sys.exit(main(sys.argv[1:]))"


LOOP_CASE = SAMPLES_DIR / "textstats" / "loops" / "repair-then-acquit"


#: ``critic22 loop`` on the sample's recorded critic, one run per tree and finding.
LOOP = [sys.executable, "-c", CLI, "loop", str(LOOP_CASE / "patch.diff")]
LOOP += [f"--critic22-findings={LOOP_CASE}", "--critic22-reruns=1"]


PATCH = b"--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n"


@pytest.fixture
def small_repo(pytester: pytest.Pytester) -> Path:
    """A one-module git repository with a patch beside it, in pytester's folder."""
    (pytester.path / "m.py").write_text("x = 1\ny = 2\n")
    (pytester.path / "test_m.py").write_text("def test_ok():\n    assert True\n")
    init_repo(pytester.path)
    (pytester.path / "p.diff").write_bytes(PATCH)
    return pytester.path


@pytest.mark.parametrize("link", list(LINKS))
def test_pytest_critic22_refuses_a_link_in_the_state_folder_in_one_line(
    pytester: pytest.Pytester, small_repo: Path, tmp_path: Path, link: str
) -> None:
    outside = tmp_path / "outside"
    plant(small_repo, link, outside)
    result = pytester.runpytest_subprocess("--critic22=p.diff", "-p", "no:randomly")
    output = result.stdout.str() + "\n" + result.stderr.str()
    errors = [line for line in output.splitlines() if line.startswith("ERROR:")]
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output
    assert errors == [f"ERROR: critic22: {message(link)}"], output
    assert "Traceback" not in output and "INTERNALERROR" not in output
    untouched(outside)
    assert git(["worktree", "list"], small_repo).stdout.count("\n") == 1


@pytest.mark.parametrize("link", list(LINKS))
def test_critic22_loop_refuses_a_link_in_the_state_folder_in_one_line(
    tmp_path: Path, link: str
) -> None:
    repo = materialize("textstats", tmp_path / "repo")
    outside = tmp_path / "outside"
    plant(repo, link, outside)
    done = subprocess.run(
        LOOP,
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == f"critic22 loop: {message(link)}\n"
    untouched(outside)


@pytest.mark.parametrize("command", ["ab", "mine"])
def test_ab_and_mine_refuse_a_linked_state_folder_for_their_default_cache(
    tmp_path: Path, command: str
) -> None:
    repo = materialize("textstats", tmp_path / "repo")
    here = tmp_path / "here"
    here.mkdir()
    outside = tmp_path / "outside"
    plant(here, ".critic22", outside)
    args = {
        "ab": ["ab", str(SAMPLES_DIR / "population.json"), "--critic", "recorded:useful"],
        "mine": ["mine", str(repo), "--out", str(here / "population.json")],
    }[command]
    done = subprocess.run(
        [sys.executable, "-c", CLI, *args], cwd=here, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == f"critic22 {command}: error: {message('.critic22')}\n"
    untouched(outside)


def _read_until(proc: subprocess.Popen[bytes], seen: bytearray, done: str) -> str:
    """Read the loop's stdout until ``done`` is in it and it waits for a reply (it ends with
    the prompt ``> ``). The deadline only bounds a hang; nothing waits on a clock."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        text = seen.decode("utf-8", "replace")
        if done in text and text.endswith("> "):
            return text
        ready, _, _ = select.select([fd], [], [], 1.0)
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            seen.extend(chunk)
    pytest.fail(f"the loop never asked (exit {proc.poll()}): {seen.decode('utf-8', 'replace')}")


@pytest.mark.e2e
def test_ctrl_c_at_the_checkpoint_saves_the_state_and_the_same_command_resumes(
    tmp_path: Path,
) -> None:
    """A real ``critic22 loop --checkpoint`` on a real terminal: round 1 is reviewed, the
    checkpoint refuses ``apply /dev/zero`` and asks again, and Ctrl-C there ends the loop
    with one line and exit status 130; REVIEW_STATE.json holds the run in progress with no
    round finished, and the same command (here with one round) resumes that run."""
    repo = materialize("textstats", tmp_path / "repo")
    command = LOOP
    master, slave = os.openpty()
    proc = subprocess.Popen(
        [*command, "--checkpoint", "--max-rounds", "2"],
        cwd=repo,
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    os.close(slave)
    try:
        seen = bytearray()
        _read_until(proc, seen, "Options:")
        os.write(master, b"apply /dev/zero\n")
        text = _read_until(proc, seen, "apply /dev/zero: not a regular file")
        assert text.count("\n> ") == 2  # asked again: the loop goes on
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    lines = err.decode().strip().splitlines()
    assert proc.returncode == 130, err.decode()
    assert lines == [
        "critic22 loop: interrupted; state saved at round 0 (resume with the same command)"
    ]
    stage = repo / state.STAGE
    saved = json.loads((stage / state.STATE_FILE).read_text())
    assert saved["status"] == "in_progress" and saved["round"] == 0
    assert state.RUN_ID.match(saved["run_id"])
    ledger = (repo / ".critic22" / "ledger.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in ledger]
    assert [e["event"] for e in events if e["run"] == saved["run_id"]] == ["loop-interrupted"]
    again = subprocess.run(
        [*command, "--max-rounds", "1"], cwd=repo, capture_output=True, text=True, timeout=600
    )
    assert again.returncode == 1, again.stdout + again.stderr  # max rounds: not acquitted
    assert "Recovered from interruption. Resuming at Round 1." in again.stdout
    after = json.loads((stage / state.STATE_FILE).read_text())
    assert after["run_id"] == saved["run_id"] and after["status"] == "completed"
    assert after["round"] == 1
    assert len(git(["worktree", "list"], repo).stdout.splitlines()) == 1


@pytest.mark.parametrize("jobs", ["0", "-2"])
@pytest.mark.parametrize("command", ["ab", "mine"])
def test_jobs_below_one_is_a_usage_error(tmp_path: Path, command: str, jobs: str) -> None:
    args = {
        "ab": ["ab", str(SAMPLES_DIR / "population.json"), "--critic", "recorded:useful"],
        "mine": ["mine", str(tmp_path), "--out", str(tmp_path / "population.json")],
    }[command]
    done = subprocess.run(
        [sys.executable, "-c", CLI, *args, "--jobs", jobs],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"critic22 {command}: error: --jobs must be at least 1")
    assert not (tmp_path / ".critic22").exists()  # refused before anything was made
