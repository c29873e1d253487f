"""The user's checkout is sacred: interrupts, bad input, editable installs, hangs, secrets."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import sysconfig
import time
import venv
from pathlib import Path

import pytest

from pytest_critic22.apps.samples import case_dir
from pytest_critic22.execution.git import git
from pytest_critic22.execution.trees import trees_root
from tests.runs import case_args, make_sample, repo_state

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning"),
]

DROPS = case_dir("textstats", "median-drops-guard")

# The plugin's runs are real pytest sessions in this process (pytester.runpytest), as with
# the usage errors: no second interpreter to start. Its procedures still run in children of
# their own. Only what needs another process runs in one: Ctrl-C, another interpreter.


def finding(location: str, claim: str, falsification: str) -> dict[str, object]:
    return {
        "location": location,
        "claim": claim,
        "severity": "blocking",
        "evidence": "test fixture",
        "falsification": falsification,
        "confidence": 0.5,
    }


def no_trees_left(repo: Path) -> bool:
    root = trees_root(repo)
    return not root.exists() or not any(p.is_dir() and p.name != "slots" for p in root.iterdir())


def test_sigint_in_the_middle_of_a_procedure_leaves_no_worktree(pytester: pytest.Pytester) -> None:
    repo = make_sample(pytester, "textstats")
    before = repo_state(repo)
    findings = repo.parent / "hang.json"
    report = repo.parent / "r.json"
    findings.write_text(
        json.dumps(
            [
                finding(
                    "e2",
                    "hangs",
                    "test:\nimport time\n\ndef test_hang():\n"
                    # The tree is the one place the sandbox lets it write.
                    "    open('started', 'w').write('x')\n    time.sleep(600)\n",
                )
            ]
        )
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            f"--critic22={DROPS / 'patch.diff'}",
            f"--critic22-findings={findings}",
            f"--critic22-report={report}",
            "--critic22-only",
            "--critic22-preservation=off",  # nothing verified before the interrupt
        ],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        while not list(trees_root(repo).glob("*/critic-patched/started")):
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            assert time.monotonic() < deadline, "the procedure never started"
            time.sleep(0.1)
        assert git(["worktree", "list"], repo).stdout.count("\n") >= 2  # mid-run: trees exist
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert b"KeyboardInterrupt" in out or proc.returncode == 2
    # Interrupted is never PROCEED: not in the report, not in the ledger, not on the terminal.
    disposition = json.loads(report.read_text())["disposition"]
    assert disposition["verdict"] == "incomplete" and disposition["interrupted"] is True
    assert "F1" in " ".join(disposition["problems"])
    events = [json.loads(x) for x in (repo / ".critic22" / "ledger.jsonl").read_text().splitlines()]
    verdicts = [e["payload"] for e in events if e["event"] == "disposition"]
    assert [(v["verdict"], v["interrupted"]) for v in verdicts] == [("incomplete", True)]
    assert b"verdict: INCOMPLETE (interrupted)" in out
    assert b"verdict: PROCEED" not in out
    assert repo_state(repo) == before
    assert git(["worktree", "list"], repo).stdout.count("\n") == 1
    assert no_trees_left(repo)


def test_the_critics_test_exercises_the_worktree_even_with_an_editable_install(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    repo = make_sample(pytester, "textstats")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # This test's environment (pytest, the plugin), then textstats "installed editable"
    # from the user's checkout: a path .pth, exactly what an editable install writes.
    (site / "00-dev.pth").write_text(
        f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n"
    )
    (site / "textstats-editable.pth").write_text(f"{repo}\n")
    findings = tmp_path / "f.json"
    findings.write_text(
        json.dumps(
            [
                finding(
                    "e2",
                    "mean() of empty input no longer raises.",
                    "test:\nimport pytest\nfrom textstats import mean\n\n"
                    "def test_empty():\n    with pytest.raises(ValueError):\n        mean([])\n",
                ),
                finding(
                    "e3",
                    "the code under test is the user's checkout",
                    "test:\nimport textstats\n\ndef test_from_tree():\n"
                    "    assert 'critic22-trees' in textstats.__file__\n",
                ),
            ]
        )
    )
    check = subprocess.run(
        [python, "-c", "import textstats; print(textstats.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert check.stdout.startswith(str(repo))  # the editable install points at the checkout
    done = subprocess.run(
        [
            python,
            "-m",
            "pytest",
            f"--critic22={DROPS / 'patch.diff'}",
            f"--critic22-findings={findings}",
            "--critic22-only",
            "--critic22-reruns=1",
            "--critic22-preservation=off",  # the critic's tests are what is checked here
            "-rA",
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAILED patch.diff::F1[e2]" in done.stdout
    assert "PASSED patch.diff::F2[e3]" in done.stdout


def test_a_hung_critic_test_is_inconclusive_at_the_timeout(pytester: pytest.Pytester) -> None:
    # Only the endless test runs under the short limit: a test that must finish within it on
    # a loaded machine would measure the machine, not the plugin. (What the child's
    # environment holds is tests/test_sandbox.py's and tests/test_runner.py's business.)
    # Its three attempts share one session, and each has the limit: the hang ends after one
    # (tests/test_runner.py shows that against a child whose own limit is endless).
    make_sample(pytester, "textstats")
    findings = pytester.path.parent / "f.json"
    findings.write_text(
        json.dumps(
            [
                finding(
                    "e2", "hangs", "test:\nimport time\n\ndef test_hang():\n    time.sleep(600)\n"
                )
            ]
        )
    )
    start = time.monotonic()
    result = pytester.runpytest(
        f"--critic22={DROPS / 'patch.diff'}",
        f"--critic22-findings={findings}",
        "--critic22-only",
        "--critic22-procedure-timeout=3",
        "--critic22-preservation=off",
        "-rs",
    )
    assert time.monotonic() - start < 300  # a hang bound, not a speed claim: it sleeps 600 s
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*inconclusive: on the patched tree: timed out after 3s*"])


def test_permuting_confidences_changes_no_outcome_end_to_end(pytester: pytest.Pytester) -> None:
    repo = make_sample(pytester, "textstats")
    records = json.loads((DROPS / "findings.json").read_text())
    confidences = [r.get("confidence") for r in records]
    permuted = [dict(r, confidence=c) for r, c in zip(records, reversed(confidences), strict=True)]
    (repo.parent / "permuted.json").write_text(json.dumps(permuted))
    args = [a for a in case_args("textstats", "median-drops-guard") if "findings" not in a]
    result = pytester.runpytest(
        *args,
        f"--critic22-findings={repo.parent / 'permuted.json'}",
        "--critic22-only",
        "--critic22-reruns=1",
        f"--critic22-report={repo.parent / 'r.json'}",
    )
    # --critic22-only: the repository's own tests are not collected; the preservation group
    # (its regression caught without any critic) and F1, F2 fail, F3 and the collection pass.
    result.assert_outcomes(failed=3, passed=2)
    document = json.loads((repo.parent / "r.json").read_text())
    assert {f["id"]: f["outcome"]["status"] for f in document["findings"]} == {
        "F1": "verified",
        "F2": "verified",
        "F3": "refuted",
        "F4": "advisory",
        "F5": "advisory",
    }


def test_outside_a_git_repository_is_a_usage_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "p.diff").write_text("--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-a\n+b\n")
    result = pytester.runpytest("--critic22=p.diff")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --critic22: * is not inside a git repository*"])


def test_a_patch_that_does_not_apply_is_a_usage_error_and_leaves_nothing(
    pytester: pytest.Pytester,
) -> None:
    repo = make_sample(pytester, "textstats")
    before = repo_state(repo)
    (repo / "textstats" / "stats.py").write_text("# rewritten\n")
    git(["commit", "-qam", "rewrite"], repo)
    before = repo_state(repo)
    result = pytester.runpytest(f"--critic22={DROPS / 'patch.diff'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --critic22: patch.diff does not apply to HEAD (*"])
    assert repo_state(repo) == before
    assert no_trees_left(repo)


def test_an_unknown_base_is_a_usage_error(pytester: pytest.Pytester) -> None:
    make_sample(pytester, "textstats")
    result = pytester.runpytest(f"--critic22={DROPS / 'patch.diff'}", "--critic22-base=nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --critic22-base: 'nope' is not a commit in *"])


def test_a_checkout_with_the_patch_applied_is_noticed(pytester: pytest.Pytester) -> None:
    """Invariant 17 (tests/test_controller_trust.py has the rest): a run that would import
    the checkout's conftest.py and run its tests here stops; --critic22-only reviews it."""
    repo = make_sample(pytester, "textstats")
    git(["apply", str(DROPS / "patch.diff")], repo)
    before = repo_state(repo)
    result = pytester.runpytest(f"--critic22={DROPS / 'patch.diff'}", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --critic22: the checkout already has patch.diff applied*"])
    assert repo_state(repo) == before
    assert not os.path.exists(repo / ".critic22" / "ledger.jsonl")
    result = pytester.runpytest(
        f"--critic22={DROPS / 'patch.diff'}", "--critic22-only", "--critic22-engage=never"
    )
    result.stdout.fnmatch_lines(
        ["the working tree already has the patch applied: nothing of it was imported *"]
    )
    assert repo_state(repo) == before
    assert os.path.exists(repo / ".critic22" / "ledger.jsonl")


def test_generated_items_work_with_k_x_lf_v_and_junitxml(pytester: pytest.Pytester) -> None:
    make_sample(pytester, "textstats")
    args = [
        *case_args("textstats", "median-drops-guard"),
        "--critic22-only",
        "--critic22-reruns=1",
        "--critic22-preservation=off",
    ]
    first = pytester.runpytest(*args, "-x", "-v", "--junitxml=j.xml")
    first.assert_outcomes(failed=1)  # -x: stopped at the first verified defect
    first.stdout.fnmatch_lines(["patch.diff::F1[[]e2[]] FAILED*"])
    junit = (pytester.path / "j.xml").read_text()
    assert 'name="F1[e2]"' in junit and "<failure" in junit
    again = pytester.runpytest(*args, "--lf")
    again.assert_outcomes(failed=1)
    picked = pytester.runpytest(*args, "-k", "F3")
    picked.assert_outcomes(passed=1, deselected=2)
