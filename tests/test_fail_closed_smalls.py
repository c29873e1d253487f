"""Issue 41, item 7: the small fail-closed fixes, on real files, links and processes.

A symbolic link inside ``.critic22/`` is one clear error and never a write outside the
repository; ``apply FILE`` at the loop's checkpoint reads only a regular file of bounded
size (and asks again otherwise); Ctrl-C in ``critic22 loop`` is one line, exit status 130,
and a state the same command resumes from; ``--jobs`` below 1 is a usage error.
"""

from __future__ import annotations

import io
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_critic22.apps.loop import state
from pytest_critic22.apps.loop.checkpoint import MAX_DIFF_BYTES, Reply, ask, read_diff
from pytest_critic22.apps.samples import SAMPLES_DIR, materialize
from pytest_critic22.critic.call import _read_cache, _write_cache
from pytest_critic22.execution.git import git, init_repo
from pytest_critic22.state.folder import StateLinkError, make_folder, write_file
from pytest_critic22.state.ledger import Ledger, ensure_state_dir, write_problem

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

#: Each link case: the link's path in the repository, and whether it names a folder.
LINKS = {
    ".critic22": True,
    ".critic22/ledger.jsonl": False,
    ".critic22/cache": True,
    ".critic22/.gitignore": False,
    ".critic22/review-stage": True,
}


def message(link: str) -> str:
    return f"{link} is a symbolic link; refusing to follow it (remove it)"


def plant(repo: Path, link: str, outside: Path) -> Path:
    """``repo/link`` -> a path in ``outside`` (a folder that exists, or a file that does not:
    a write through the link would create it). The link's target."""
    outside.mkdir(exist_ok=True)
    target = outside / ("folder" if LINKS[link] else "file")
    if LINKS[link]:
        target.mkdir()
    (repo / link).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, repo / link)
    return target


def remove(path: Path) -> None:
    """Remove a folder of the test's own (links in it removed, never followed)."""
    if path.is_symlink():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def untouched(outside: Path) -> None:
    """Nothing was written outside the repository: the link's target is as it was made."""
    found = sorted(str(p.relative_to(outside)) for p in outside.rglob("*"))
    assert found in ([], ["folder"]), found


# -- 1. links in .critic22/: the writers themselves ----------------------------------------------


def test_every_state_writer_refuses_a_link_at_every_known_place(tmp_path: Path) -> None:
    """The ledger, the .gitignore, the caches, the review loop's state and acquittal log,
    and a plain atomic write: each raises StateLinkError naming the link, writing nothing."""
    state_dir = tmp_path / ".critic22"
    stage = tmp_path / state.STAGE
    receipt = state.Receipt("run_20261204_0123abcd", 1, "replay", "medium", "ready", 10, "t", "z")
    writers = {
        ".critic22": lambda: ensure_state_dir(state_dir),
        ".critic22/ledger.jsonl": lambda: Ledger(state_dir / "ledger.jsonl", "r").append("x"),
        ".critic22/cache": lambda: _write_cache(state_dir / "cache", "key", "raw"),
        ".critic22/.gitignore": lambda: ensure_state_dir(state_dir),
        ".critic22/review-stage": lambda: state.write_state(
            stage, state.LoopState("run_20261204_0123abcd", 1, "a", "in_progress", 2, "", (), "z")
        ),
    }
    for link, write in writers.items():
        plant(tmp_path, link, tmp_path / "outside")
        with pytest.raises(StateLinkError) as raised:
            write()
        assert str(raised.value) == message(link)
        untouched(tmp_path / "outside")
        remove(tmp_path / ".critic22")
        remove(tmp_path / "outside")
    # The acquittal log, a folder made level by level, and an atomic write: the same.
    plant(tmp_path, ".critic22/review-stage", tmp_path / "out")
    with pytest.raises(StateLinkError, match=r"^\.critic22/review-stage is a symbolic link"):
        state.AcquittalLog(stage / state.ACQUITTAL_LOG).append(receipt)
    with pytest.raises(StateLinkError, match="review-stage is a symbolic link"):
        make_folder(stage / "runs" / "r" / "round-1")
    with pytest.raises(StateLinkError, match="review-stage is a symbolic link"):
        write_file(stage / "final.diff", "diff")
    with pytest.raises(StateLinkError, match="review-stage is a symbolic link"):
        state.AcquittalLog(stage / state.ACQUITTAL_LOG).receipts()
    untouched(tmp_path / "out")


def test_a_link_deeper_in_the_cache_is_refused_and_never_read(tmp_path: Path) -> None:
    graph = tmp_path / ".critic22" / "cache" / "graph"
    graph.mkdir(parents=True)
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"raw": "not the cache's"}))
    os.symlink(secret, graph / "key.json")
    assert _read_cache(graph, "key") is None  # a link is a miss, never the file it names
    with pytest.raises(StateLinkError, match=r"cache/graph/key\.json is a symbolic link"):
        _write_cache(graph, "key", "raw")
    assert json.loads(secret.read_text()) == {"raw": "not the cache's"}
    # Without any link, the same calls write and read the cache.
    os.unlink(graph / "key.json")
    _write_cache(graph, "key", "raw")
    assert _read_cache(graph, "key") == "raw" and not (graph / "key.json").is_symlink()


def test_the_writability_probe_names_the_link_and_probes_nothing_through_it(
    tmp_path: Path,
) -> None:
    target = plant(tmp_path, ".critic22/ledger.jsonl", tmp_path / "out")
    problem = write_problem(tmp_path / ".critic22" / "ledger.jsonl")
    assert problem == message(".critic22/ledger.jsonl")
    assert not target.exists()
    # A ledger the user chose outside .critic22/ is the user's: a link there is followed.
    os.symlink(tmp_path / "mine.jsonl", tmp_path / "chosen.jsonl")
    Ledger(tmp_path / "chosen.jsonl", "r").append("x")
    assert (tmp_path / "mine.jsonl").is_file()


# -- 1. links in .critic22/: the commands --------------------------------------------------------


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


# -- 2. apply FILE at the checkpoint -------------------------------------------------------------


FIX = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


def test_apply_reads_only_a_bounded_regular_file_and_asks_again_otherwise(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")  # no writer: an open without O_NONBLOCK would never return
    (tmp_path / "big.diff").write_bytes(b"+" * (MAX_DIFF_BYTES + 1))
    (tmp_path / "latin1.diff").write_bytes(b"+caf\xe9\n")
    (tmp_path / "fix.diff").write_text(FIX)
    bad = ["/dev/zero", tmp_path / "fifo", tmp_path, tmp_path / "big.diff"]
    bad += [tmp_path / "latin1.diff", tmp_path / "missing.diff"]
    replies = "".join(f"apply {name}\n" for name in [*bad, tmp_path / "fix.diff"])
    out = io.StringIO()
    reply = ask(io.StringIO(replies), out, "p", fixes=1, attempts=len(bad) + 1)
    assert reply == Reply("apply", path=str(tmp_path / "fix.diff"), diff=FIX)
    # The prompt, one line per refused reply (after its "> "), and the last "> ".
    said = out.getvalue().splitlines()[1:-1]
    assert [line.removeprefix("> ").split(":")[0] for line in said] == [f"apply {n}" for n in bad]
    assert "/dev/zero: not a regular file" in said[0] and "fifo: not a regular file" in said[1]
    assert "not a regular file" in said[2] and "larger than 2 MiB" in said[3]
    assert "not UTF-8" in said[4] and "cannot read it (No such file" in said[5]
    assert read_diff(str(tmp_path / "fix.diff")) == FIX
    (tmp_path / "crlf.diff").write_bytes(FIX.replace("\n", "\r\n").encode())
    assert read_diff(str(tmp_path / "crlf.diff")) == FIX  # as the loop always read it


def test_a_diff_of_exactly_the_limit_is_read(tmp_path: Path) -> None:
    (tmp_path / "edge.diff").write_bytes(b"+" * MAX_DIFF_BYTES)
    assert len(read_diff(str(tmp_path / "edge.diff"))) == MAX_DIFF_BYTES


# -- 3. Ctrl-C in critic22 loop ------------------------------------------------------------------


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


# -- 4. --jobs below 1 ---------------------------------------------------------------------------


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
