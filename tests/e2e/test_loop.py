"""The review loop end to end on real git repositories, real pytest children and recorded
critics (``sample_repos/textstats/loops``): acquittal after a repair, scar tissue catching a
fix that brings a defect back with the critic silent, max rounds with the blockers listed,
SIGKILL and resume, a stale state, and the human checkpoint driven through a real pty."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from pytest_critic22.apps.loop import state
from pytest_critic22.apps.loop.driver import run_loop
from pytest_critic22.apps.loop.options import LoopError, LoopOptions, LoopResult
from pytest_critic22.apps.samples import SAMPLES_DIR, materialize
from pytest_critic22.execution.git import git
from pytest_critic22.execution.trees import trees_root

pytestmark = pytest.mark.e2e

LOOPS = SAMPLES_DIR / "textstats" / "loops"
F1_TEST = (
    "import pytest\nfrom textstats import mean\n\n"
    "def test_mean_of_empty_input_still_raises():\n"
    "    with pytest.raises(ValueError):\n        mean([])\n"
)


def sample(tmp_path: Path) -> Path:
    return materialize("textstats", tmp_path / "repo")


#: One run per tree and finding: confirmation reruns are the plugin's business, tested there.
FAST = ("--critic22-reruns=1",)


def options(repo: Path, case: str, **kw: Any) -> LoopOptions:
    folder = LOOPS / case
    return LoopOptions(
        repo=repo, patch=folder / "patch.diff", findings_dir=folder, plugin_args=FAST, **kw
    )


def receipts(repo: Path) -> list[dict[str, Any]]:
    path = repo / state.STAGE / state.ACQUITTAL_LOG
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def clean(repo: Path) -> None:
    """The user's checkout untouched; no worktree left registered."""
    assert git(["status", "--porcelain"], repo).stdout == ""
    assert len(git(["worktree", "list"], repo).stdout.splitlines()) == 1


def check_expected(result: LoopResult, case: str) -> None:
    expected = json.loads((LOOPS / case / "expected.json").read_text())
    assert result.status == expected["status"], result.rounds[-1].notes
    assert [r.score for r in result.rounds] == expected["scores"]
    assert [r.verdict for r in result.rounds] == expected["verdicts"]


def test_round_one_repair_then_acquittal(tmp_path: Path) -> None:
    """Also the checkpoint's "go" (through a real pty): the proposed repair is applied, and the
    run goes on as without a checkpoint (which the SIGKILL test's loop runs to acquittal)."""
    repo = sample(tmp_path)
    stage = repo / state.STAGE
    # A state file 25 h old from a killed run: discarded, a fresh run starts.
    old = state.iso_z(state.utc_now() - timedelta(hours=25))
    stage.mkdir(parents=True)
    stale = {"run_id": "run_20261101_0000dead", "round": 1, "status": "in_progress"}
    (stage / state.STATE_FILE).write_text(json.dumps({**stale, "timestamp": old}))
    result, text = _with_replies(repo, "go\n")
    assert "Round 1/2 review complete. Score: 2/10 — not ready" in text
    check_expected(result, "repair-then-acquit")
    assert result.run_id != "run_20261101_0000dead" and state.RUN_ID.match(result.run_id)
    assert [r.round for r in result.rounds] == [1, 2]
    one, two = result.rounds
    assert [f.status for f in one.fixes] == ["applied"]
    assert {i.id: i.status for i in two.items} == {
        "S1": "refuted",  # scar tissue: round 1's test, re-run, passes
        "preserve[collection]": "refuted",
        "preserve[tests/test_stats.py]": "refuted",
    }
    assert two.memory_update.startswith("Round 2: the empty-input guard")
    # exactly one receipt, bound to this run and linked to a trace
    (receipt,) = receipts(repo)
    assert receipt["run_id"] == result.run_id and receipt["round"] == 2
    assert (repo / ".critic22" / "traces" / receipt["trace_id"]).is_dir()
    assert receipt["timestamp"].endswith("Z")
    saved = json.loads((stage / state.STATE_FILE).read_text())
    assert saved["status"] == "completed" and saved["run_id"] == result.run_id
    # final.diff applies to the base and passes the falsification test
    final = stage / "final.diff"
    git(["apply", "--check", str(final)], repo)
    check = tmp_path / "check"
    git(["worktree", "add", "-q", "--detach", str(check)], repo)
    try:
        git(["apply", str(final)], check)
        (check / "tests" / "test_f1.py").write_text(F1_TEST)
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:critic22"],
            cwd=check,
            # the sample's own tests need no plugin: none is loaded (half of this run's CPU)
            env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stdout
    finally:
        git(["worktree", "remove", "--force", str(check)], repo)
    memory = (stage / "REVIEWER_MEMORY.md").read_text()
    assert "## Round 1" in memory and "## Round 2" in memory
    assert "Round 2: the empty-input guard of mean() is back" in memory  # verbatim
    log = (stage / "AUTO_REVIEW.md").read_text()
    assert "## Round 1" in log and "<details>" in log
    assert (stage / "AUTO_REVIEW.html").is_file()
    events = [json.loads(x) for x in (repo / ".critic22" / "ledger.jsonl").read_text().splitlines()]
    mine = [e for e in events if e["run"] == result.run_id]
    assert [e["event"] for e in mine] == ["loop-round", "loop-round", "loop-stop"]
    assert "Score: 10/10 — ready" in text
    clean(repo)


def test_scar_tissue_catches_a_fix_that_brings_a_defect_back(tmp_path: Path) -> None:
    repo = sample(tmp_path)
    result = run_loop(options(repo, "fix-brings-defect-back"), out=io.StringIO())
    check_expected(result, "fix-brings-defect-back")
    one, two = result.rounds
    assert [f.status for f in one.fixes] == ["applied", "applied"]
    assert json.loads(two.critic_raw) == []  # the critic is silent in round 2
    scar = {i.claim.split(":")[0]: i.status for i in two.items if i.source == "scar"}
    assert scar == {"scar tissue of R1-F1": "verified", "scar tissue of R1-F2": "refuted"}
    assert any(b.startswith("S1 ") for b in result.rounds[-1].blockers)
    assert receipts(repo) == []
    clean(repo)


def test_max_rounds_lists_the_blockers(tmp_path: Path) -> None:
    repo = sample(tmp_path)
    out = io.StringIO()
    result = run_loop(options(repo, "max-rounds", max_rounds=2), out=out)
    check_expected(result, "max-rounds")
    (blocker,) = result.rounds[-1].blockers
    assert "generator" in blocker and "verified" in blocker
    assert "blocker: F1" in out.getvalue()
    log = (repo / state.STAGE / "AUTO_REVIEW.md").read_text()
    assert "Remaining blockers" in log and "generator" in log.split("Remaining blockers")[-1]
    assert receipts(repo) == []
    clean(repo)


def _loop_command(repo: Path, case: str) -> list[str]:
    folder = LOOPS / case
    code = "import sys; from pytest_critic22.apps.cli import main; sys.exit(main(sys.argv[1:]))"
    patch = str(folder / "patch.diff")
    return [sys.executable, "-c", code, "loop", patch, f"--critic22-findings={folder}", *FAST]


def test_sigkill_in_round_two_then_resume(tmp_path: Path) -> None:
    repo = sample(tmp_path)
    command = _loop_command(repo, "repair-then-acquit")
    proc = subprocess.Popen(
        command, cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if line.startswith("Round 2/"):
            break
    else:
        pytest.fail("the loop ended before round 2: " + "".join(seen))
    # Wait until round 2's review has made its trees (it is truly in the middle), then kill.
    trees = trees_root(repo)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(trees.glob("*/patched*")):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    scratch = list(Path(tempfile.gettempdir()).glob(f"critic22-api-{proc.pid}-*"))
    assert scratch  # the killed loop's review left its scratch folder: the next run removes it
    stage = repo / state.STAGE
    before = json.loads((stage / state.STATE_FILE).read_text())
    assert before["round"] == 1 and before["status"] == "in_progress"
    assert receipts(repo) == []
    again = subprocess.run(command, cwd=repo, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Recovered from interruption. Resuming at Round 2." in again.stdout
    after = json.loads((stage / state.STATE_FILE).read_text())
    assert after["run_id"] == before["run_id"] and after["status"] == "completed"
    (receipt,) = receipts(repo)  # no duplicated or partial receipt
    assert receipt["run_id"] == before["run_id"] and receipt["round"] == 2
    assert "redone after an interruption" not in (stage / "AUTO_REVIEW.md").read_text()
    assert not any(p.exists() for p in scratch)
    clean(repo)


def test_checkpoint_needs_a_terminal(tmp_path: Path) -> None:
    repo = sample(tmp_path)
    with pytest.raises(LoopError, match="needs a terminal"):
        run_loop(options(repo, "repair-then-acquit", checkpoint=True), stdin=io.StringIO("go\n"))
    done = subprocess.run(
        [*_loop_command(repo, "repair-then-acquit"), "--checkpoint"],
        cwd=repo,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "needs a terminal" in done.stderr
    assert not (repo / state.STAGE / state.STATE_FILE).exists()  # nothing ran


def _with_replies(repo: Path, replies: str, **kw: Any) -> tuple[LoopResult, str]:
    """repair-then-acquit with the checkpoint, for two rounds, answered through a real pty."""
    master, slave = os.openpty()
    os.write(master, replies.encode())
    out = io.StringIO()
    with open(slave, encoding="utf-8") as stdin:
        result = run_loop(
            options(repo, "repair-then-acquit", checkpoint=True, max_rounds=2, **kw),
            stdin=stdin,
            out=out,
        )
    os.close(master)
    return result, out.getvalue()


@pytest.mark.parametrize(
    ("reply", "status", "fix"),
    [
        # "go" (acquitted, the repair applied) is test_round_one_repair_then_acquittal's
        ("skip 1", "no-fix", "skipped"),
        ("stop", "stopped", "skipped"),
    ],
)
def test_checkpoint_replies(tmp_path: Path, reply: str, status: str, fix: str) -> None:
    repo = sample(tmp_path)
    result, out = _with_replies(repo, reply + "\n")
    # once: the checkpoint does not repeat the loop's header (issue 43)
    assert out.count("Round 1/2 review complete. Score: 2/10 — not ready") == 1
    assert out.count("Top verified findings:") == 1
    assert result.status == status
    assert [f.status for f in result.rounds[0].fixes] == [fix]
    clean(repo)


USER_FIX = (
    "--- a/textstats/stats.py\n+++ b/textstats/stats.py\n@@ -8,2 +8,4 @@\n"
    " def mean(values):\n+    if len(values) == 0:\n+        raise ValueError('empty')\n"
    "     return sum(values) / max(len(values), 1)\n"
)


def test_checkpoint_apply_a_users_own_fix(tmp_path: Path) -> None:
    """A refused ``apply`` says why in one line and asks again (issue 43: it ended the
    loop): a file that is not there, a diff that does not apply to the candidate, a diff
    that applies but does not verify; then the person's good fix is used."""
    fix = tmp_path / "fix.diff"
    fix.write_text(USER_FIX)
    stale = tmp_path / "stale.diff"  # its context is not in the candidate
    stale.write_text(USER_FIX.replace(" def mean(values):", " def mean(items):"))
    wrong = tmp_path / "wrong.diff"  # applies, and mean([]) still returns 0.0
    wrong.write_text(USER_FIX.replace("raise ValueError('empty')", "values = values"))
    missing = tmp_path / "missing.diff"
    repo = sample(tmp_path)
    replies = f"apply {missing}\napply {stale}\napply {wrong}\napply {fix}\n"
    result, out = _with_replies(repo, replies)
    assert f"apply {missing}: cannot read it" in out
    assert f"apply {stale}: " in out and "answer again" in out
    lines = [line.removeprefix("> ") for line in out.splitlines()]  # the prompt, no echo
    refused = [line for line in lines if line.startswith(f"apply {wrong}: refused")]
    assert len(refused) == 1 and "F1: " in refused[0], out
    assert out.count("Top verified findings:") == 1  # asked again with one line, not the page
    assert result.status == "acquitted"
    origins = {(f.origin, f.status) for f in result.rounds[0].fixes}
    assert origins == {("user", "applied"), ("repair", "skipped")}
    notes = result.rounds[0].notes
    assert sum(n.startswith("refused at the checkpoint") for n in notes) == 2
    assert "len(values) == 0" in (repo / state.STAGE / "final.diff").read_text()
    clean(repo)
