"""Trees that look like the user's checkout, and repairs judged fairly, end to end.

- ``sample_repos/versioned``: a hatch-vcs-style project whose ``src/verpkg/_version.py`` is
  written at build time and ignored by git, so a fresh worktree cannot import the package:
  the review is INCOMPLETE (never PROCEED) until ini ``critic22_copy`` or
  ``critic22_tree_setup`` brings the file into every tree, and then the defect is verified.
- ``sample_repos/fixturegap``: a discovered preservation test needs a fixture of a plugin
  that is not installed, so it errors on every tree; that old error is reported as
  pre-existing and does not sink a correct ``repair:``; a repair with miscounted hunk
  headers is recounted and verified, one with wrong context is inconclusive.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_critic22.execution.git import git
from pytest_critic22.kinds.grammar import parse_procedure
from pytest_critic22.model.procedure import Procedure, TestData
from tests.runs import case_args, expected, make_sample, repo_state

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning"),
]

VERSION_FILE = "src/verpkg/_version.py"
MISSING = "the tree cannot import verpkg._version (imported by src/verpkg/__init__.py)"
SPEED_TEST = "tests/test_words.py::test_count_words_speed"

needs_no_benchmark_plugin = pytest.mark.skipif(
    importlib.util.find_spec("pytest_benchmark") is not None,
    reason="pytest-benchmark is installed: the sample's benchmark test would not error",
)


def versioned(pytester: pytest.Pytester) -> Path:
    """The versioned sample as a git repository, its generated version file present in the
    checkout but ignored (as after ``pip install -e .`` with hatch-vcs)."""
    repo = make_sample(pytester, "versioned")
    if not (repo / VERSION_FILE).is_file():
        # The sample's .gitignore hides the file from pytest-critic22's own repository too,
        # so a fresh clone lacks it: build it as the project's build backend would.
        subprocess.run([sys.executable, "tools/write_version.py"], cwd=repo, check=True)
    status = git(["status", "--porcelain", "--ignored", "--untracked-files=all"], repo).stdout
    assert f"!! {VERSION_FILE}" in status.splitlines()
    assert VERSION_FILE not in git(["ls-files"], repo).stdout.splitlines()
    return repo


def review(
    pytester: pytest.Pytester, sample: str, case: str, *extra: str
) -> tuple[pytest.RunResult, dict[str, Any]]:
    """The case reviewed by a `pytest` process of its own (the user's own tests are collected
    from its folder, as in a user's run). One run of each test per tree: nothing here is about
    confirming a failure (that is tests/test_forkrun.py's and tests/test_batching.py's)."""
    report = pytester.path.parent / "report.json"
    result = pytester.runpytest_subprocess(
        *case_args(sample, case), f"--critic22-report={report}", "--critic22-reruns=1", *extra
    )
    return result, json.loads(report.read_text())


def statuses(document: dict[str, Any]) -> dict[str, str]:
    return {f["id"]: f["outcome"]["status"] for f in document["findings"]}


def by_id(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["id"]: f for f in document["findings"]}


def given_repair(sample: str, case: str, finding: int) -> str:
    from pytest_critic22.apps.samples import case_dir

    records = json.loads((case_dir(sample, case) / "findings.json").read_text())
    return records[finding]["falsification"].split("repair:\n", 1)[1]


# -- a generated, ignored _version.py -----------------------------------------------------


def test_without_critic22_copy_a_generated_version_file_makes_the_review_incomplete(
    pytester: pytest.Pytester,
) -> None:
    repo = versioned(pytester)
    before = repo_state(repo)
    version = (repo / VERSION_FILE).read_bytes()
    result, document = review(pytester, "versioned", "off-by-one")
    want = expected("versioned", "off-by-one")

    result.assert_outcomes(**want["outcomes"])  # the project's 4 tests, 2 skips, the review
    assert result.ret == want["exit"] == 1
    disposition = document["disposition"]
    assert disposition["verdict"] == want["verdict"] == "incomplete"
    assert disposition["verified"] == []
    assert statuses(document) == want["findings"] == {"F1": "inconclusive"}
    assert {p["group"]: p["outcome"] for p in document["preservation"]} == want["preservation"]
    problems = disposition["problems"]
    assert sorted(p.split(":", 1)[0] for p in problems) == ["F1", "preserve[tests/test_core.py]"]
    for problem in problems:
        assert MISSING in problem
        assert "critic22_copy" in problem and "critic22_tree_setup" in problem
    assert MISSING in by_id(document)["F1"]["outcome"]["reason"]
    result.stdout.fnmatch_lines(
        [
            "verdict: INCOMPLETE *",
            f"  - F1: *{MISSING}*critic22_copy*",
            "ERROR patch.diff::review *INCOMPLETE*",
        ]
    )
    assert not any(line.startswith("verdict: PROCEED") for line in result.outlines)
    assert repo_state(repo) == before
    assert (repo / VERSION_FILE).read_bytes() == version


def test_critic22_copy_brings_the_generated_file_into_the_trees_and_the_defect_is_verified(
    pytester: pytest.Pytester,
) -> None:
    repo = versioned(pytester)
    before = repo_state(repo)
    result, document = review(
        pytester, "versioned", "off-by-one", "-o", "critic22_copy=src/*/_version.py"
    )

    result.assert_outcomes(passed=6, failed=1)  # 4 own tests + preservation + collection; F1
    assert result.ret == 1
    disposition = document["disposition"]
    assert disposition["verdict"] == "reject"
    assert disposition["verified"] == ["F1"]
    assert disposition["problems"] == []
    (f1,) = document["findings"]
    assert f1["outcome"] == {
        "status": "verified",
        "reason": "fails on patched (1/1 runs) and passes on the without-e1 tree",
    }
    assert f1["counterfactual"] == "without-e1"
    assert [(p["group"], p["outcome"]) for p in document["preservation"]] == [
        ("collection", "refuted"),
        ("tests/test_core.py", "refuted"),
    ]
    result.stdout.fnmatch_lines(["verdict: REJECT *", "FAILED patch.diff::F1[[]e1[]] *"])
    assert repo_state(repo) == before


def test_critic22_tree_setup_writes_the_generated_file_in_each_tree_and_the_defect_is_verified(
    pytester: pytest.Pytester,
) -> None:
    repo = versioned(pytester)
    before = repo_state(repo)
    command = shlex.join([sys.executable, "tools/write_version.py"])
    result, document = review(
        pytester, "versioned", "off-by-one", "-o", f"critic22_tree_setup={command}"
    )

    result.assert_outcomes(passed=6, failed=1)
    assert result.ret == 1
    assert document["disposition"]["verdict"] == "reject"
    assert document["disposition"]["problems"] == []
    assert statuses(document) == {"F1": "verified"}
    assert [(p["group"], p["outcome"]) for p in document["preservation"]] == [
        ("collection", "refuted"),
        ("tests/test_core.py", "refuted"),
    ]
    assert repo_state(repo) == before


def test_a_failing_tree_setup_makes_the_review_incomplete_and_names_the_setting(
    pytester: pytest.Pytester,
) -> None:
    repo = versioned(pytester)
    before = repo_state(repo)
    command = shlex.join([sys.executable, "-c", "raise SystemExit('no version control here')"])
    result, document = review(
        pytester, "versioned", "off-by-one", "-o", f"critic22_tree_setup={command}"
    )

    assert result.ret == 1  # not a usage error (4): the patch applies, the setup fails
    outcomes = result.parseoutcomes()
    assert outcomes["passed"] == 4 and outcomes["errors"] == 1  # the review item
    assert "failed" not in outcomes
    disposition = document["disposition"]
    assert disposition["verdict"] == "incomplete"
    assert disposition["verified"] == []
    assert statuses(document) == {"F1": "inconclusive"}
    assert disposition["problems"]
    for problem in disposition["problems"]:
        assert "critic22_tree_setup" in problem
        assert "no version control here" in problem
    result.stdout.fnmatch_lines(
        [
            "verdict: INCOMPLETE *",
            "  - F1: *critic22_tree_setup*no version control here*",
            "ERROR patch.diff::review *INCOMPLETE*",
        ]
    )
    assert repo_state(repo) == before


# -- a preservation test that errors on every tree; repairs -------------------------------


@needs_no_benchmark_plugin
def test_a_correct_repair_is_verified_despite_a_pre_existing_fixture_error(
    pytester: pytest.Pytester,
) -> None:
    repo = make_sample(pytester, "fixturegap")
    before = repo_state(repo)
    result, document = review(pytester, "fixturegap", "incomplete-fix")
    want = expected("fixturegap", "incomplete-fix")

    # Own tests: 2 pass, the benchmark test errors; F1 fails (verified); F2 and the
    # preservation group are skipped (inconclusive).
    result.assert_outcomes(**want["outcomes"])
    assert result.ret == want["exit"] == 1
    assert document["disposition"]["verdict"] == want["verdict"] == "reject"
    assert document["disposition"]["verified"] == ["F1"]
    assert statuses(document) == want["findings"]
    findings = by_id(document)

    # F1: a correct repair; the benchmark test's old error is not the repair's.
    f1 = findings["F1"]
    assert f1["counterfactual"].startswith("repair-")
    assert f1["outcome"]["reason"] == (
        f"fails on patched (1/1 runs) and passes on the {f1['counterfactual']} tree"
    )
    assert f1["logs"]["obligations_pre_existing"] == ["tests.test_words::test_count_words_speed"]
    assert "obligations_broken" not in f1["logs"]
    assert "repair_given" not in f1["logs"]  # well-formed: applied as given

    # F2: its repair breaks test_count_words, which passes on the patched tree.
    f2 = findings["F2"]
    assert f2["outcome"]["reason"] == (
        f"the {f2['counterfactual']} tree breaks a preservation obligation"
    )
    assert f2["logs"]["obligations_broken"] == ["tests.test_words::test_count_words"]

    # The benchmark test reaches count_words, so it is discovered; it errors on the base too.
    collection, group = document["preservation"]
    assert collection["group"] == "collection" and collection["outcome"] == "refuted"
    assert group["group"] == "tests/test_words.py"
    assert SPEED_TEST in group["tests"]
    assert "tests/test_words.py::test_count_words" in group["tests"]
    assert group["outcome"] == "inconclusive"
    assert "pre-existing" in group["reason"] and SPEED_TEST in group["reason"]
    result.stdout.fnmatch_lines(["verdict: REJECT *"])
    assert repo_state(repo) == before


@needs_no_benchmark_plugin
def test_a_repair_with_miscounted_hunks_is_recounted_and_one_with_wrong_context_is_not_applied(
    pytester: pytest.Pytester,
) -> None:
    repo = make_sample(pytester, "fixturegap")
    before = repo_state(repo)
    result, document = review(pytester, "fixturegap", "miscounted-repair")
    want = expected("fixturegap", "miscounted-repair")

    result.assert_outcomes(**want["outcomes"])
    assert result.ret == want["exit"] == 1
    assert document["disposition"]["verdict"] == want["verdict"] == "reject"
    assert statuses(document) == want["findings"]
    assert document["counts"]["downgraded"] == want["downgraded"] == 0  # neither is "malformed"
    findings = by_id(document)

    # F1: "@@ -6,8 +6,12 @@" on a hunk of 5 old and 6 new lines: recounted, then applied.
    f1 = findings["F1"]
    assert f1["outcome"]["reason"].endswith(f"passes on the {f1['counterfactual']} tree")
    given = given_repair("fixturegap", "miscounted-repair", 0)
    assert f1["logs"]["repair_given"] == given
    assert "@@ -6,8 +6,12 @@\n" in given
    assert f1["logs"]["repair_applied"] == given.replace("@@ -6,8 +6,12 @@", "@@ -6,5 +6,6 @@")

    # F2: right counts, a context line the patched file does not have.
    f2 = findings["F2"]
    reason = f2["outcome"]["reason"]
    assert reason.startswith("fails on patched (1/1); counterfactual: the repair does not apply")
    assert "patch failed: wordcount/words.py:6" in reason
    assert "repair_given" not in f2["logs"]
    result.stdout.fnmatch_lines(["*F2 *inconclusive*", "*the repair does not apply*"])
    assert repo_state(repo) == before


def test_an_undercounted_last_hunk_is_recounted_and_kept_as_given() -> None:
    """A hunk that says 3 new lines and has 4 parses as a shorter hunk when it is the last
    one (the extra line is read as trailing text): it is miscounted all the same, and the
    JSON must show the diff as given and the one applied."""
    given = (
        "--- a/wordcount/words.py\n+++ b/wordcount/words.py\n@@ -6,3 +6,3 @@\n"
        " def count_words(text):\n"
        '     """How many words ``text`` holds."""\n'
        '-    return len([word for word in text.split(" ") if word])\n'
        "+    # any whitespace separates words\n"
        "+    return len(text.split())\n"
    )
    procedure = parse_procedure("test:\ndef test_x():\n    assert True\nrepair:\n" + given)
    assert isinstance(procedure, Procedure) and procedure.kind == "test"
    data = procedure.payload(TestData)
    assert data.repair_given == given
    assert data.repair == given.replace("@@ -6,3 +6,3 @@", "@@ -6,3 +6,4 @@")
