"""``critic22 mine`` on a generated history: three fix commits, one kept, two skipped.

The history (built once per module, with fixed dates so its commits are the same every
run), newest first: ``average([])`` (its only mutant, a dropped ``not``, breaks an old
test: no surviving mutant), ``median`` (its test imports a function P lacks: cannot be
collected at P), a docs commit (no test change), ``pages`` (an off-by-one twin survives
the old tests and fails the new one: kept), and the root commit.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from pytest_critic22.apps.mine import driver
from pytest_critic22.apps.mine.probe import probe_commit
from pytest_critic22.apps.mine.select import MineSettings
from pytest_critic22.execution.git import git
from pytest_critic22.execution.sandbox import resolve

CORE = '''def pages(count, per_page):
    """How many pages hold count items."""
    return count // per_page


def average(values):
    return sum(values) / len(values)
'''


OLD_TESTS = """from calc.core import average, pages


def test_pages_exact():
    assert pages(20, 10) == 2


def test_average():
    assert average([1, 2, 3]) == 2
"""


PAGES_TEST = """from calc.core import pages


def test_partial_page_counts():
    assert pages(21, 10) == 3
    assert pages(1, 10) == 1
"""


MEDIAN = """

def median(values):
    ordered = sorted(values)
    return ordered[len(ordered) // 2]
"""


MEDIAN_TEST = (
    "from calc.core import median\n\n\ndef test_median():\n    assert median([3, 1, 2]) == 2\n"
)


AVERAGE_TEST = "\n\ndef test_average_of_nothing():\n    assert average([]) == 0.0\n"


PAGES_MESSAGE = (
    "Count the partial last page\n\npages() dropped the last, partial page.\n\n"
    "Signed-off-by: Someone <someone@example.com>\nCo-authored-by: A Bot <bot@example.com>"
)


def build_history(repo: Path) -> dict[str, str]:
    """The generated repository; returns {name: commit}."""
    repo.mkdir(parents=True)
    git(["init", "-q", "-b", "main"], repo)
    commits: dict[str, str] = {}

    def commit(name: str, files: dict[str, str], message: str) -> None:
        for path, text in files.items():
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_text(text)
        date = f"2024-01-{len(commits) + 1:02d}T12:00:00+00:00"
        git(["add", "-A"], repo)
        dates = {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
        git(["commit", "-q", "--no-verify", "-m", message], repo, extra_env=dates)
        commits[name] = git(["rev-parse", "HEAD"], repo).stdout.strip()

    core = CORE
    commit(
        "root",
        {"calc/__init__.py": "", "calc/core.py": core, "tests/test_core.py": OLD_TESTS},
        "initial",
    )
    core = core.replace("return count // per_page", "return (count + per_page - 1) // per_page")
    commit("pages", {"calc/core.py": core, "tests/test_pages.py": PAGES_TEST}, PAGES_MESSAGE)
    commit("docs", {"README.md": "calc\n"}, "Docs")
    core += MEDIAN
    commit("median", {"calc/core.py": core, "tests/test_median.py": MEDIAN_TEST}, "Add median")
    core = core.replace(
        "def average(values):\n", "def average(values):\n    if not values:\n        return 0.0\n"
    )
    commit(
        "average",
        {"calc/core.py": core, "tests/test_core.py": OLD_TESTS + AVERAGE_TEST},
        "average([]) is 0.0",
    )
    return commits


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    repo = tmp_path_factory.mktemp("history") / "repo"
    return repo, build_history(repo)


def run_cli(*args: str) -> tuple[int, str]:
    from pytest_critic22.apps.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, err.getvalue()


@pytest.fixture(scope="module")
def mined(
    history: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """``critic22 mine REPO --out ... --jobs 2 --oracle DIR``, once for the module (the
    interrupted run, in one job, must give the same population)."""
    repo, _ = history
    out = tmp_path_factory.mktemp("mined")
    code, err = run_cli(
        "mine", str(repo), "--out", str(out / "population.json"), "--jobs", "2",
        "--cache", str(out / "cache"), "--oracle", str(out / "oracle"),
    )  # fmt: skip
    return {
        "code": code,
        "stderr": err,
        "out": out,
        "population": json.loads((out / "population.json").read_text()),
    }


def ours() -> list[str]:
    """Scratch folders of this process's mining runs left in the temp folder."""
    prefix = f"{driver.SCRATCH_PREFIX}{os.getpid()}-"
    return [p.name for p in Path(tempfile.gettempdir()).iterdir() if p.name.startswith(prefix)]


def test_three_fixes_give_one_pair_and_two_skips_with_reasons(
    history: tuple[Path, dict[str, str]], mined: dict[str, Any]
) -> None:
    repo, commits = history
    assert mined["code"] == 0, mined["stderr"]
    population = mined["population"]
    short = commits["pages"][:12]
    assert [(c["id"], c["label"]) for c in population["cases"]] == [
        (f"{short}.good", "good"),
        (f"{short}.defective", "defective"),
    ]
    skipped = {s["commit"]: s for s in population["mined"]["skipped"]}
    assert skipped[commits["median"]]["code"] == "not collectable at P"
    assert "tests.test_median cannot be collected" in skipped[commits["median"]]["reason"]
    assert skipped[commits["average"]]["code"] == "no surviving mutant"
    assert population["mined"]["not_kept"] == {
        "merge or root": 1,
        "no surviving mutant": 1,
        "no test change": 1,
        "not collectable at P": 1,
    }
    good, defective = population["cases"]
    assert good["base"] == defective["base"] == commits["root"]
    assert good["ground_truth"] == [
        {
            "rev": commits["pages"],
            "path": "tests/test_pages.py",
            "nodes": ["tests/test_pages.py::test_partial_page_counts"],
        }
    ]
    assert good["existing_tests"] == [
        "tests/test_core.py::test_average",
        "tests/test_core.py::test_pages_exact",
    ]
    # the twin is the most realistic mutant (off-by-one), not a revert of the fix
    patch = (mined["out"] / defective["patch"]).read_text()
    assert "+    return (count + per_page - 2) // per_page" in patch
    assert "off-by-one" in defective["summary"]
    # the specification is the message, blinded: no trailers
    spec = (mined["out"] / good["spec"]).read_text()
    assert "partial page" in spec and "Signed-off-by" not in spec and "Co-authored" not in spec
    # no copy of the repository's source: its patches and its specification only
    written = mined["out"] / "population.cases" / good["fix"][:12]
    assert sorted(p.name for p in written.iterdir()) == ["defective.diff", "good.diff", "spec.md"]
    assert "commits 5/5 scanned, 1 cases kept" in mined["stderr"]
    assert "not kept: 1 merge or root, 1 no surviving mutant" in mined["stderr"]
    assert not ours()
    assert git(["worktree", "list", "--porcelain"], repo).stdout.count("worktree ") == 1


def test_a_mined_population_loads_with_its_hidden_tests_read_from_the_repository(
    mined: dict[str, Any],
) -> None:
    from pytest_critic22.apps.ab import load_population

    population = load_population(mined["out"] / "population.json")
    good = population.cases[0]
    assert good.ground_truth[0].source == PAGES_TEST
    assert good.ground_truth[0].nodes == ("tests/test_pages.py::test_partial_page_counts",)
    assert good.existing_tests and good.base is not None


def test_an_interrupted_run_resumes_without_redoing_finished_commits_and_matches_two_jobs(
    history: tuple[Path, dict[str, str]],
    mined: dict[str, Any],
    tmp_path: Path,
    subtests: pytest.Subtests,
) -> None:
    """One job, stopped by Ctrl-C (its KeyboardInterrupt) as the second commit is examined,
    then run again: the commit finished before it is not examined again, and the population
    is the one the module's run with two jobs gave (here every commit examined in one job)."""
    repo, commits = history
    settings = MineSettings()
    sandbox = resolve("auto")
    calls: list[str] = []

    def interrupted(job: Any) -> dict[str, Any]:
        if calls:
            raise KeyboardInterrupt  # Ctrl-C while the second commit is examined
        calls.append(job.candidate.commit)
        return probe_commit(job)

    cache = tmp_path / "cache"
    with subtests.test("Ctrl-C stops the run; the finished commit stays cached"):
        with pytest.raises(KeyboardInterrupt):
            driver.mine(
                repo, settings=settings, cache_dir=cache, sandbox=sandbox, probe=interrupted
            )
        assert calls == [commits["average"]] and len(list(cache.glob("*.json"))) == 1
        assert not ours()
        assert git(["worktree", "list", "--porcelain"], repo).stdout.count("worktree ") == 1

    redone: list[str] = []

    def counting(job: Any) -> dict[str, Any]:
        redone.append(job.candidate.commit)
        return probe_commit(job)

    run = driver.mine(repo, settings=settings, cache_dir=cache, sandbox=sandbox, probe=counting)
    with subtests.test("the run resumes without examining the finished commit again"):
        assert (run.cached, run.examined) == (1, 2)
        assert redone == [commits["median"], commits["pages"]]
        assert [r["commit"] for r in run.kept] == [commits["pages"]]
    with subtests.test("one job gives the population two jobs gave"):
        assert "0 commits from the cache, 3 examined now" in mined["stderr"]  # two jobs
        one = _population(run, repo, tmp_path / "population.json")
        two = mined["population"]
        assert one == two
        for case in two["cases"]:
            for key in ("patch", "spec"):
                assert (tmp_path / case[key]).read_text() == (mined["out"] / case[key]).read_text()
        assert not ours()


def _population(run: driver.MineRun, repo: Path, out: Path) -> dict[str, Any]:
    """What ``critic22 mine`` writes for ``run`` (its patches and specification beside it)."""
    from pytest_critic22.apps.mine.output import write_outputs
    from pytest_critic22.execution.git import head_commit

    write_outputs(
        run, repo=repo, head=head_commit(repo), out=out, settings=MineSettings(), since=None,
        oracle=None,
    )  # fmt: skip
    document: dict[str, Any] = json.loads(out.read_text())
    return document


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-cases", "0"], "--max-cases must be at least 1"),
        (["--test-command", "make test"], "--test-command must be a pytest command line"),
        (["--since=--all"], "--since: not a date"),
        (["--jobs", "0"], "--jobs must be at least 1"),
    ],
)
def test_bad_input_is_one_clear_error_before_any_tree(
    history: tuple[Path, dict[str, str]], tmp_path: Path, args: list[str], message: str
) -> None:
    repo, _ = history
    code, err = run_cli("mine", str(repo), "--out", str(tmp_path / "p.json"), *args)
    assert code == 2 and err.count("\n") == 1 and err.startswith("critic22 mine: error: ")
    assert message in err and not (tmp_path / "p.json").exists()


def test_out_makes_its_folders(
    history: tuple[Path, dict[str, str]], mined: dict[str, Any], tmp_path: Path
) -> None:
    """``--out new/folder/p.json`` where neither folder exists (issue 43): made, and the
    population written there is the module's (its commits taken from the module's cache)."""
    repo, _ = history
    out = tmp_path / "new" / "folder" / "p.json"
    cache = mined["out"] / "cache"
    code, err = run_cli("mine", str(repo), "--out", str(out), "--cache", str(cache))
    assert code == 0, err
    assert "0 examined now" in err and f"wrote {out} (2 cases" in err
    written = json.loads(out.read_text())
    expected = mined["population"]["cases"]
    assert [c["id"] for c in written["cases"]] == [c["id"] for c in expected]
    for ours_, theirs in zip(written["cases"], expected, strict=True):
        assert ours_["patch"].startswith("p.cases/")
        assert (out.parent / ours_["patch"]).read_text() == (
            mined["out"] / theirs["patch"]
        ).read_text()
    assert not [p.name for p in out.parent.iterdir() if p.name.startswith(".")]  # no temporaries


def test_out_is_one_clear_error_when_its_folder_cannot_be_made(
    history: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    repo, _ = history
    (tmp_path / "a-file").write_text("")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / ".critic22").symlink_to(elsewhere, target_is_directory=True)
    for out, message in (
        (tmp_path / "a-file" / "p.json", "--out: cannot make folder"),
        (tmp_path / ".critic22" / "mined" / "p.json", ".critic22 is a symbolic link"),
        (tmp_path, "is a folder; name the population file"),
    ):
        code, err = run_cli("mine", str(repo), "--out", str(out), "--cache", str(tmp_path / "c"))
        assert code == 2 and err.count("\n") == 1, err
        assert err.startswith("critic22 mine: error: ") and message in err
    assert not list(elsewhere.iterdir()) and not (tmp_path / "c").exists()


def test_a_folder_outside_git_is_refused(tmp_path: Path) -> None:
    code, err = run_cli("mine", str(tmp_path), "--out", str(tmp_path / "p.json"))
    assert code == 2 and "is not inside a git repository" in err


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"test_args": ["-p", "evil"]}, "test_args: test command option '-p'"),
        ({"ground_truth": [{"rev": "HEAD", "path": "../x.py", "nodes": []}]}, "not inside"),
        (
            {"ground_truth": [{"rev": "HEAD", "path": "tests/test_pages.py", "nodes": ["-x"]}]},
            "looks like an option",
        ),
        ({"base": "--output=/tmp/x"}, "is not a revision"),
    ],
)
def test_a_tampered_mined_population_is_one_clear_error(
    mined: dict[str, Any], tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    from pytest_critic22.apps.ab import PopulationError, load_population

    document = json.loads(json.dumps(mined["population"]))
    document["cases"][0].update(change)
    for case in document["cases"]:
        for key in ("patch", "spec"):
            case[key] = str(mined["out"] / case[key])
    (tmp_path / "p.json").write_text(json.dumps(document))
    with pytest.raises(PopulationError, match=r"test_args|ground_truth|base") as error:
        load_population(tmp_path / "p.json")
    assert message in str(error.value)
