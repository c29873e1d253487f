"""The CI recipes in ``examples/`` run as written, against the textstats sample.

The end-to-end tier: whole pytest runs. The rest, and the whole story:
tests/unit/test_ci_recipes.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped,unused-ignore]

from pytest_critic22.apps.samples import case_dir, materialize
from pytest_critic22.execution.git import commit_all, git, head_commit
from tests.e2e.test_controller_trust import CONTROLLER, hostile_files, marks
from tests.unit.test_ci_recipes import ROOT, WORKFLOW, steps_of

HOOK = ROOT / "examples" / "pre-commit"


PATCH = case_dir("textstats", "median-drops-guard") / "patch.diff"


# materialize() commits the sample on "main": that is the pull request's base branch.
BASE_REF = "main"


TIMEOUT = 300


@pytest.fixture
def child_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """The children's environment: nothing of this session's CI, model or git state leaks in."""
    for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "CRITIC22_MODEL", "CRITIC", "PYTHON"):
        monkeypatch.delenv(name, raising=False)
    for name in [name for name in os.environ if name.startswith("GIT_")]:
        monkeypatch.delenv(name)
    (tmp_path / "tmp").mkdir()
    # PYTEST_ADDOPTS, PYTEST_PLUGINS, xdist's worker variables are this session's, not theirs.
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    # A clean git configuration as on a fresh runner, this interpreter's python first on PATH,
    # and a temp folder of the test's own (the hook's trap must leave it empty).
    env["GIT_CONFIG_GLOBAL"] = os.devnull
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["TMPDIR"] = str(tmp_path / "tmp")
    return env


def sample_repo(tmp_path: Path) -> Path:
    return materialize("textstats", tmp_path / "repo")


def shell_steps(workflow: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, script) of every ``run:`` step, without ``pip install`` lines, with
    ``${{ github.base_ref }}`` replaced as Actions does it: in the text, before bash sees it."""
    scripts = []
    for step in steps_of(workflow):
        if "uses" in step:
            continue
        lines = [line for line in step["run"].splitlines() if "pip install" not in line]
        script = "\n".join(lines).replace("${{ github.base_ref }}", BASE_REF)
        assert "${{" not in script, f"an expression the test does not substitute: {script}"
        scripts.append((step["name"], script))
    return scripts


def the_step(workflow: dict[str, Any], uses: str) -> dict[str, Any]:
    (step,) = [step for step in steps_of(workflow) if step.get("uses", "").startswith(uses + "@")]
    return step


# A 1x1 PNG: what a pull request that also changes a picture carries.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082"
)


@dataclass
class PullRequest:
    repo: Path
    statuses: dict[str, int]
    heads: dict[str, str]
    review_output: str
    base: str
    merged: str
    runner_temp: Path


def run_pull_request(
    tmp_path: Path,
    child_env: dict[str, str],
    workflow: dict[str, Any],
    change: Callable[[Path], None],
) -> PullRequest:
    """The recipe's shell steps on a pull request that makes ``change`` on a branch.

    actions/checkout with fetch-depth 0 is simulated: an origin (the repository itself)
    fetched whole, and HEAD detached at the pull request merged into its base, as
    refs/pull/N/merge is (GITHUB_SHA)."""
    repo = sample_repo(tmp_path)
    git(["checkout", "-q", "-b", "feature"], repo)
    change(repo)
    if git(["status", "--porcelain"], repo).stdout:
        commit_all(repo, "median for even-length input")
    git(["remote", "add", "origin", str(repo)], repo)
    git(["fetch", "-q", "origin"], repo)
    git(["checkout", "-q", "--detach", BASE_REF], repo)
    base = head_commit(repo)
    git(["merge", "-q", "--no-ff", "-m", "Merge feature into main", "feature"], repo)
    merged = head_commit(repo)
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir()
    env = {**child_env, "RUNNER_TEMP": str(runner_temp), "GITHUB_SHA": merged, CONTROLLER: "1"}
    statuses = {}
    review_output = ""
    heads = {}
    for name, script in shell_steps(workflow):
        done = subprocess.run(
            ["bash", "-e", "-c", script],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        statuses[name] = done.returncode
        heads[name] = head_commit(repo)
        if "--critic22=" in script:
            review_output = done.stdout + done.stderr
        else:
            assert done.returncode == 0, f"step {name!r}:\n{done.stdout}{done.stderr}"
    return PullRequest(repo, statuses, heads, review_output, base, merged, runner_temp)


@pytest.mark.e2e
def test_the_github_actions_workflow_rejects_the_sample_patch(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    # PyYAML reads the key "on" as YAML 1.1's true; Actions reads it as "on".
    assert "pull_request" in workflow.get("on", workflow.get(True))
    assert workflow["permissions"]["security-events"] == "write"
    assert the_step(workflow, "actions/checkout")["with"]["fetch-depth"] == 0
    sarif = the_step(workflow, "github/codeql-action/upload-sarif")
    assert sarif["if"].startswith("always()")
    assert sarif["with"] == {"sarif_file": "critic22.sarif", "category": "critic22"}
    artifact = the_step(workflow, "actions/upload-artifact")
    assert artifact["if"] == "always()"
    assert artifact["with"]["path"].split() == ["critic22.json", "critic22.html"]

    # The pull request: a branch that commits the sample's patch, a picture (a binary diff,
    # listed as not reviewed), and files that mark the reviewing process if it imports them.
    marker = tmp_path / "MARKER"

    def change(repo: Path) -> None:
        git(["apply", str(PATCH)], repo)
        for name, text in hostile_files(marker).items():
            (repo / name).write_text(text, encoding="utf-8")
        (repo / "docs").mkdir()
        (repo / "docs" / "logo.png").write_bytes(PNG)

    pr = run_pull_request(tmp_path, child_env, workflow, change)
    repo, statuses, heads, review_output = pr.repo, pr.statuses, pr.heads, pr.review_output
    base, merged, runner_temp = pr.base, pr.merged, pr.runner_temp
    assert list(statuses) == [
        "Save the pull request as a patch and check out its base",
        "Install",
        "Review",
        "Check the pull request out again",
    ]
    assert statuses["Review"] == 1, review_output
    # Nothing of the pull request was imported by a process the recipe started (its tests
    # did run, sandboxed, on the patched tree: the preservation gate below).
    assert marks(marker) == "", review_output
    # Installed and reviewed from the base; the pull request checked out again for the upload.
    assert heads["Install"] == heads["Review"] == base
    assert heads["Check the pull request out again"] == merged
    assert "the working tree " not in review_output  # the base: trusted, nothing to say

    patch = (runner_temp / "patch.diff").read_text(encoding="utf-8")
    assert "+def test_median_even():" in patch
    assert '-        raise ValueError("mean of empty data")' in patch
    assert "+++ b/conftest.py" in patch  # the review saw the whole pull request
    assert (repo / "critic22.json").is_file(), review_output
    report = json.loads((repo / "critic22.json").read_text(encoding="utf-8"))
    assert report["disposition"]["verdict"] == "reject", review_output
    assert report["disposition"]["verified"] == ["preserve[tests/test_stats.py]"]
    assert "not reviewed (binary): docs/logo.png" in report["notes"]
    # What the upload steps take (their own tests check the formats' contents).
    sarif_file, html_file = repo / "critic22.sarif", repo / "critic22.html"
    assert sarif_file.is_file() and html_file.is_file(), review_output
    assert json.loads(sarif_file.read_text(encoding="utf-8"))["version"] == "2.1.0"
    assert html_file.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


@pytest.mark.e2e
def test_a_pull_request_with_nothing_to_review_passes_the_job(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    """A pull request that only merges (its diff is empty), and one that only changes a
    picture: nothing to review, PROCEED, and the job passes."""
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    for what, change, note in [
        ("empty", lambda repo: None, "nothing to review: the patch is empty"),
        (
            "picture",
            lambda repo: (repo / "logo.png").write_bytes(PNG),
            "nothing to review: the patch changes only binary files",
        ),
    ]:
        pr = run_pull_request(tmp_path / what, child_env, workflow, change)
        assert pr.statuses["Review"] == 0, pr.review_output
        report = json.loads((pr.repo / "critic22.json").read_text(encoding="utf-8"))
        assert report["disposition"]["verdict"] == "proceed"
        assert note in report["notes"], report["notes"]


@pytest.mark.e2e
def test_the_pre_commit_hook_reviews_the_staged_change(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    repo = sample_repo(tmp_path)
    git(["apply", "--index", str(PATCH)], repo)

    done = subprocess.run(
        ["sh", str(HOOK)],
        cwd=repo,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "verdict: REJECT" in output
    assert "FAILED patch.diff::preserve[tests/test_stats.py]" in output
    assert not list((tmp_path / "tmp").glob("critic22-pre-commit.*")), "the trap cleans up"

    # Nothing staged: the hook says yes at once, and never starts Python (a stand-in on PATH
    # would leave its mark).
    git(["reset", "-q", "--hard"], repo)
    stand_in = tmp_path / "bin"
    stand_in.mkdir()
    (stand_in / "python").write_text(f"#!/bin/sh\ntouch '{tmp_path / 'ran'}'\nexit 99\n")
    (stand_in / "python").chmod(0o755)
    env = {**child_env, "PATH": f"{stand_in}{os.pathsep}{child_env['PATH']}"}
    done = subprocess.run(
        ["sh", str(HOOK)], cwd=repo, env=env, capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert not (tmp_path / "ran").exists()
    assert not list((tmp_path / "tmp").glob("critic22-pre-commit.*"))
