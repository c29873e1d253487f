"""Under ``--critic22-only`` the controller is only the review.

A project whose ini ``addopts`` measure coverage with a threshold and write report files
(pytest-cov's ``--cov --cov-fail-under --cov-report=xml``, ``--junitxml``) asks that of a run
of its tests. Under ``--critic22-only`` no test of the project runs in the controller (they
run in the sandboxed children, which read the tree's configuration themselves), so the
controller leaves those options aside: it measures nothing, writes nothing into the
checkout, and exits with the verdict's status. Its own command line and ``PYTEST_ADDOPTS``
still apply. Without ``--critic22-only`` the project's tests run in the controller and
its ``addopts`` apply to them as usual.

pytest-cov and pytest-xdist are test dependencies (pyproject's ``dev`` extra): these tests
need them and are never skipped for want of them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_critic22.execution.git import git, init_repo
from tests.helpers import write

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning"),
]

TIMEOUT = 600
ADDOPTS = "--cov=pkg --cov-fail-under=99 --cov-report=xml --junitxml=junit.xml"
FILES: dict[str, str | bytes] = {
    "pyproject.toml": (
        '[project]\nname = "pkg"\nversion = "0.1.0"\n\n'
        f'[tool.pytest.ini_options]\ntestpaths = ["tests"]\naddopts = "{ADDOPTS}"\n'
    ),
    "pkg/__init__.py": "",
    # Half of it untested: the project's own run is under its threshold.
    "pkg/calc.py": (
        "def add(a, b):\n    return a + b\n\n\n"
        "def sign(x):\n    if x < 0:\n        return -1\n    return 1\n"
    ),
    "tests/test_calc.py": (
        "from pkg.calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    ),
}
# What the project's addopts would write into the checkout.
PRODUCTS = {".coverage", "coverage.xml", "junit.xml"}


class Project:
    """The project committed in ``repo`` (its base checked out) and a good patch beside it."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.repo = tmp_path / "repo"
        write(self.repo, FILES)
        init_repo(self.repo)
        write(self.repo, {"pkg/calc.py": str(FILES["pkg/calc.py"]).replace("a + b", "b + a")})
        self.patch = tmp_path / "good.diff"
        self.patch.write_text(git(["diff"], self.repo).stdout, encoding="utf-8")
        git(["checkout", "-q", "--", "."], self.repo)
        skipped = ("PYTEST_", "GIT_", "GITHUB_", "COV_CORE_")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(skipped)}
        for name in ("CRITIC22_MODEL", "CRITIC"):
            self.env.pop(name, None)

    def status(self) -> set[str]:
        """``git status --porcelain --ignored``: what is new in the checkout, ignored or not."""
        out = git(["status", "--porcelain", "--ignored"], self.repo).stdout
        return set(out.splitlines())

    def pytest(self, *args: str, addopts: str = "") -> subprocess.CompletedProcess[str]:
        env = {**self.env, "PYTEST_ADDOPTS": addopts} if addopts else self.env
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
        command += [f"--critic22={self.patch}", "--critic22-engage=never", "--critic22-reruns=1"]
        return subprocess.run(
            [*command, *args],
            cwd=self.repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_under_only_the_projects_addopts_measure_and_write_nothing(
    project: Project, xdist: list[str]
) -> None:
    """The CI recipe's run: PROCEED and exit 0, no coverage threshold, and nothing new in the
    checkout but the review's own state. A report the command line asks for (``--junitxml``
    of the user's own) and an option in ``PYTEST_ADDOPTS`` (``--critic22-report``) are
    still honoured. Under xdist the workers parse the project's addopts afresh, and leave
    them aside too."""
    before = project.status()
    mine, report = project.tmp / "mine.xml", project.tmp / "review.json"
    done = project.pytest(
        "--critic22-only",
        f"--junitxml={mine}",
        *xdist,
        addopts=f"--critic22-report={report}",
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "verdict: PROCEED" in done.stdout, output
    assert "coverage: platform" not in output and "fail-under" not in output, output
    assert project.status() - before == {"!! .critic22/"}, output
    assert not any((project.repo / name).exists() for name in PRODUCTS)
    assert mine.is_file(), output
    document = json.loads(report.read_text(encoding="utf-8"))
    assert document["disposition"]["verdict"] == "proceed"


def test_without_only_the_projects_tests_run_under_its_addopts(project: Project) -> None:
    """The project's tests run in this process: its threshold fails the run (every test
    passed, the review says PROCEED) and its report files are written, as without the
    plugin."""
    done = project.pytest()
    output = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, output
    assert "verdict: PROCEED" in done.stdout, output
    assert "Required test coverage of 99% not reached" in done.stdout, output
    assert all((project.repo / name).exists() for name in PRODUCTS), output
