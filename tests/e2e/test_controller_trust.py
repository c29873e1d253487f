"""Invariant 17: the controller never imports code of a tree that holds the patch.

The pull request checked out (committed, uncommitted or staged), then reviewed every
documented way: ``pytest --critic22=PATCH`` stops before pytest imports a ``conftest.py``;
with ``--critic22-only`` (and so the harness API and ``critic22 loop``, which always pass it)
the review runs without importing any, and a module the patch adds at the repository's root
cannot stand in for a library the review imports later. The CI recipe's own run is in
``tests/test_recipe.py``.

The patch's files (:func:`hostile_files`) leave a mark, a line in a file outside every tree,
when they are imported by a process whose environment has ``CRITIC22_TEST_CONTROLLER=1``:
the test gives that variable to the process it starts, the controller. The sandboxed
children that run the project's tests on the patched tree import the same ``conftest.py``
legitimately; the sandbox's allow-listed environment never carries the variable there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_critic22.apps.api import review
from pytest_critic22.apps.samples import SAMPLES_DIR, case_dir, materialize
from pytest_critic22.execution.git import commit_all, git, head_commit
from pytest_critic22.execution.trees import trees_root
from tests.runs import repo_state

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning"),
]

PATCH = case_dir("textstats", "median-drops-guard") / "patch.diff"
LOOP = SAMPLES_DIR / "textstats" / "loops" / "repair-then-acquit"
CONTROLLER = "CRITIC22_TEST_CONTROLLER"
TIMEOUT = 600


def hostile_files(marker: Path) -> dict[str, str]:
    """Files a pull request adds that mark the controller when it imports them: a root
    ``conftest.py``, and ``unidiff.py``, which ``python -m pytest`` (the current folder first
    on ``sys.path``) would import in place of the library the review parses the patch with."""
    mark = (
        "import os\n\n"
        f"if os.environ.get({CONTROLLER!r}) == '1':\n"
        f"    with open({str(marker)!r}, 'a', encoding='utf-8') as fh:\n"
        "        fh.write(f'{__file__} imported by process {os.getpid()}\\n')\n"
    )
    return {"conftest.py": mark, "unidiff.py": mark + "raise ImportError('not unidiff')\n"}


def with_files(patch: str, files: dict[str, str]) -> str:
    """``patch`` (a format-patch mail) with new files added after its last hunk: its own
    edits keep their ids (e1..e3), so recorded findings still name them."""
    body, sep, trailer = patch.rpartition("\n-- \n")
    if not sep:
        body, trailer = patch, ""
    for name, text in files.items():
        lines = text.splitlines()
        body = body.rstrip("\n") + (
            f"\ndiff --git a/{name} b/{name}\nnew file mode 100644\n--- /dev/null\n"
            f"+++ b/{name}\n@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{x}\n" for x in lines)
        )
    return body.rstrip("\n") + ("\n-- \n" + trailer if sep else "\n")


def marks(marker: Path) -> str:
    return marker.read_text(encoding="utf-8") if marker.exists() else ""


def no_trees_left(repo: Path) -> bool:
    root = trees_root(repo)
    return not root.exists() or not any(p.is_dir() and p.name != "slots" for p in root.iterdir())


class PullRequest:
    """The textstats sample with a hostile pull request: its base commit, the patch beside
    the checkout (``pr.diff``), and the mark file."""

    def __init__(self, tmp_path: Path, source: Path = PATCH) -> None:
        self.tmp = tmp_path
        self.repo = materialize("textstats", tmp_path / "repo")
        self.base = head_commit(self.repo)
        self.marker = tmp_path / "MARKER"
        self.patch = tmp_path / "pr.diff"
        text = with_files(source.read_text(encoding="utf-8"), hostile_files(self.marker))
        self.patch.write_text(text, encoding="utf-8")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GIT_"))}
        for name in ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "CRITIC22_MODEL", "CRITIC"):
            self.env.pop(name, None)
        self.env[CONTROLLER] = "1"

    def check_out(self, how: str) -> None:
        """The pull request in the checkout: committed on a branch, uncommitted in the working
        tree, or staged (a pre-commit hook's case)."""
        if how == "committed":
            git(["checkout", "-q", "-b", "feature"], self.repo)
            git(["apply", str(self.patch)], self.repo)
            commit_all(self.repo, "median for even-length input")
        elif how == "uncommitted":
            git(["apply", str(self.patch)], self.repo)
        else:
            git(["apply", "--index", str(self.patch)], self.repo)

    def run(self, *command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(command),
            cwd=self.repo,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )

    def pytest(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args)


@pytest.fixture
def pr(tmp_path: Path) -> PullRequest:
    return PullRequest(tmp_path)


def test_the_marks_are_made_when_a_controller_imports_the_patch(pr: PullRequest) -> None:
    """The control: without the plugin, pytest in the checkout imports the patch's
    conftest.py, and python -m puts its unidiff.py before the library."""
    pr.check_out("committed")
    done = pr.pytest("-p", "no:critic22", "--collect-only", "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "conftest.py imported by process" in marks(pr.marker)
    done = pr.run(sys.executable, "-c", "import unidiff")
    assert done.returncode == 1 and "not unidiff" in done.stderr
    assert "unidiff.py imported by process" in marks(pr.marker)


@pytest.mark.parametrize("how", ["committed", "uncommitted", "staged"])
def test_a_review_that_would_run_the_project_here_stops_first(pr: PullRequest, how: str) -> None:
    pr.check_out(how)
    before = repo_state(pr.repo)
    done = pr.pytest(f"--critic22={pr.patch}")
    output = done.stdout + done.stderr
    errors = [line for line in output.splitlines() if line.startswith("ERROR:")]
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, output
    assert len(errors) == 1, output
    (error,) = errors
    assert error.startswith("ERROR: --critic22: the checkout already has pr.diff applied: ")
    assert "outside the sandbox" in error and "examples/github-actions.yml" in error
    assert "git worktree add ../base" in error and "--critic22-only" in error
    # uncommitted: the base is HEAD; committed or staged, the user names it
    assert ("../base HEAD," in error) == (how == "uncommitted"), error
    assert "Traceback" not in output
    assert marks(pr.marker) == ""
    assert repo_state(pr.repo) == before and no_trees_left(pr.repo)
    assert not (pr.repo / ".critic22").exists()  # stopped before the review made anything

    # A base named: the line shows it. -x, -k, a test path change nothing.
    done = pr.pytest(f"--critic22={pr.patch}", f"--critic22-base={pr.base}", "-x", "tests")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert f"git worktree add ../base {pr.base}," in done.stderr
    assert marks(pr.marker) == ""


def test_with_only_the_review_runs_without_importing_the_tree(pr: PullRequest) -> None:
    """As the CI recipe used to run: the pull request checked out, its base named."""
    pr.check_out("committed")
    before = repo_state(pr.repo)
    report = pr.tmp / "review.json"
    done = pr.pytest(
        f"--critic22={pr.patch}",
        f"--critic22-base={pr.base}",
        "--critic22-only",
        "--critic22-engage=never",
        "--critic22-reruns=1",
        f"--critic22-report={report}",
    )
    output = done.stdout + done.stderr
    assert marks(pr.marker) == "", output
    assert done.returncode == 1, output  # the preservation gate: mean() lost its guard
    document = json.loads(report.read_text(encoding="utf-8"))
    assert document["disposition"]["verdict"] == "reject", output
    assert document["disposition"]["verified"] == ["preserve[tests/test_stats.py]"]
    (note,) = [n for n in document["notes"] if n.startswith("the working tree ")]
    assert note.startswith("the working tree already has the patch applied: nothing of it ")
    assert pr.base[:10] in note
    assert "the working tree already has the patch applied: nothing of it" in done.stdout
    assert repo_state(pr.repo) == before and no_trees_left(pr.repo)


def test_xdist_workers_import_nothing_of_the_tree_either(pr: PullRequest) -> None:
    pytest.importorskip("xdist")
    pr.check_out("uncommitted")
    done = pr.pytest(
        f"--critic22={pr.patch}",
        "--critic22-only",
        "--critic22-engage=never",
        "--critic22-reruns=1",
        "-n",
        "2",
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1 and "verdict: REJECT" in output, output
    assert marks(pr.marker) == ""


def test_in_process_the_tree_is_off_sys_path_for_the_run_only(
    pr: PullRequest, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest.main() in a harness's process: the run takes the checkout off sys.path and
    gives it back when it ends; its stop is a usage error like any other."""
    pr.check_out("staged")
    monkeypatch.chdir(pr.repo)
    monkeypatch.syspath_prepend(str(pr.repo))
    monkeypatch.setenv(CONTROLLER, "1")
    before = list(sys.path)
    args = (f"--critic22={pr.patch}", "-p", "no:cacheprovider")
    assert pytest.main([*args, "-q"]) == pytest.ExitCode.USAGE_ERROR
    code = pytest.main([*args, "--critic22-only", "--critic22-engage=never", "--co", "-q"])
    assert code == pytest.ExitCode.OK
    assert sys.path == before
    assert marks(pr.marker) == ""


def test_the_harness_api_reviews_an_applied_checkout_without_importing_it(
    pr: PullRequest,
) -> None:
    """``pytest_critic22.review(...)`` (imported from its module: once the pipeline's module
    ``pytest_critic22.review`` is imported, as an in-process run does, the package's
    attribute of that name is the module)."""
    pr.check_out("committed")
    report = review(pr.repo, pr.patch, base=pr.base, engage="never", reruns=1, env=pr.env)
    assert report.ok, report.error + "\n" + report.output
    assert report.verdict == "reject"
    assert marks(pr.marker) == "", report.output
    assert report.raw is not None
    assert any(n.startswith("the working tree already has") for n in report.raw["notes"])

    # Another candidate of the same change (the checkout holds the first): the patch neither
    # applies to the working tree nor is in it, and the tree is not trusted either.
    candidate = pr.tmp / "candidate.diff"
    text = pr.patch.read_text(encoding="utf-8")
    candidate.write_text(text.replace("max(len(values), 1)", "max(len(values), 2)"))
    report = review(pr.repo, candidate, base=pr.base, engage="never", reruns=1, env=pr.env)
    assert report.ok, report.error + "\n" + report.output
    assert marks(pr.marker) == "", report.output
    assert report.raw is not None
    (note,) = [n for n in report.raw["notes"] if n.startswith("the working tree ")]
    assert note.startswith("the working tree is not what the patch applies to"), note


def test_critic22_loop_on_an_applied_checkout_imports_nothing_of_it(tmp_path: Path) -> None:
    """Two rounds: the first reviews the checked-out patch; the second the patch with the
    critic's verified repair, which the checkout does not hold."""
    pr = PullRequest(tmp_path, source=LOOP / "patch.diff")
    pr.check_out("committed")
    script = Path(sys.executable).parent / "critic22"  # not python -c: no '' on sys.path
    if not script.is_file():
        pytest.skip("the critic22 console script is not installed beside this interpreter")
    done = pr.run(
        str(script),
        "loop",
        str(pr.patch),
        f"--critic22-findings={LOOP}",
        f"--critic22-base={pr.base}",
        "--critic22-reruns=1",
    )
    output = done.stdout + done.stderr
    assert "Round 2/" in output, output
    assert marks(pr.marker) == "", output
    assert done.returncode == 0, output  # acquitted in round 2, as without the hostile files
    assert git(["status", "--porcelain"], pr.repo).stdout == ""
