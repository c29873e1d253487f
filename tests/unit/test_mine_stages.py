"""The pure stages of ``critic22 mine``: selection, mutants, outcomes, assembly."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from pytest_critic22.apps.ab.cli import _record
from pytest_critic22.apps.ab.runs import _raw_answer
from pytest_critic22.apps.mine.assemble import blind_message
from pytest_critic22.apps.mine.cli import test_args_of as args_of
from pytest_critic22.apps.mine.mutants import mutants_of
from pytest_critic22.apps.mine.outcomes import collection_problem, junit_to_nodeid
from pytest_critic22.apps.mine.select import (
    Candidate,
    FileDiff,
    Limits,
    NotCandidate,
    check_size,
    classify,
    is_test_path,
    parse_zero_context,
)


@pytest.mark.parametrize(
    ("path", "test"),
    [
        ("tests/test_x.py", True),
        ("pkg/tests/data.json", True),
        ("conftest.py", True),
        ("pkg/x_test.py", True),
        ("pkg/testing.py", False),
        ("pkg/core.py", False),
        ("src/contest.py", False),
    ],
)
def test_what_counts_as_a_test_file(path: str, test: bool) -> None:
    assert is_test_path(path) is test


def test_a_candidate_changes_tests_and_a_few_code_files() -> None:
    limits = Limits(max_files=2)
    code_and_test = [("M", "pkg/a.py"), ("A", "tests/test_a.py"), ("M", "README.md")]
    found = classify("f" * 40, ["p" * 40], "fix", code_and_test, limits)
    assert isinstance(found, Candidate)
    assert (found.code_files, found.test_files, found.other_files) == (
        ("pkg/a.py",),
        ("tests/test_a.py",),
        ("README.md",),
    )
    for changes, parents, code in [
        ([("M", "pkg/a.py")], ["p"], "no test change"),
        ([("M", "tests/test_a.py")], ["p"], "no code change"),
        ([("M", f"pkg/{n}.py") for n in "abc"] + [("M", "tests/t.py")], ["p"], "too many files"),
        ([("D", "tests/test_a.py"), ("M", "a.py")], ["p"], "deletes a test file"),
        (code_and_test, ["p", "q"], "merge or root"),
        (code_and_test, [], "merge or root"),
    ]:
        verdict = classify("f", parents, "m", changes, limits)
        assert isinstance(verdict, NotCandidate) and verdict.code == code


ZERO_CONTEXT = """diff --git a/a.py b/a.py
--- a/a.py
+++ b/a.py
@@ -3 +3 @@ def f(x):
-    return x < 1
+    return x <= 1
@@ -9,0 +10,2 @@ def g():
+    if not y:
+        return 0
"""


def test_a_zero_context_diff_gives_added_lines_and_what_each_hunk_removed() -> None:
    diff = parse_zero_context("a.py", ZERO_CONTEXT)
    assert diff.added == {3, 10, 11}
    assert diff.removed_near(3) == ("    return x < 1",)
    assert diff.removed_near(11) == ()
    cand = Candidate("f", "p", "m", ("t.py",), ("a.py",))
    assert check_size(cand, [diff], Limits(max_hunks=1)) == NotCandidate(
        "too many hunks", "2 hunks (limit 1)"
    )
    assert check_size(cand, [diff], Limits(max_added=2)) is not None
    assert check_size(cand, [diff], Limits()) is None


FIXED = '''def f(items, limit):
    """Keep < limit; 'and' in a docstring stays."""
    # a comment: x < 1 and not y
    if not items and limit > 0:
        return [i for i in items if i <= limit - 1]
    return min(items) + 1
'''


def test_mutants_touch_only_added_lines_and_come_most_realistic_first() -> None:
    diff = FileDiff("a.py", (((4,), ("    if items:",)),))
    mutants = mutants_of(diff, FIXED, old_source=None)
    assert {m.line for m in mutants} == {4}
    described = [(m.operator, m.before, m.after) for m in mutants]
    assert described == [
        ("boundary", ">", ">="),
        ("off-by-one", "0", "1"),
        ("dropped not", "not", ""),
        ("and/or", "and", "or"),
    ]
    assert mutants[2].source.splitlines()[3] == "    if items and limit > 0:"
    for mutant in mutants:
        ast.parse(mutant.source)
        assert mutant.source.splitlines()[:3] == FIXED.splitlines()[:3]  # docstring, comment


def test_a_mutant_that_restores_a_removed_line_is_a_revert_and_never_kept() -> None:
    old = "def f(x):\n    return x < 1\n"
    new = "def f(x):\n    return x <= 1\n"
    diff = FileDiff("a.py", (((2,), ("    return x < 1",)),))
    mutants = mutants_of(diff, new, old)
    assert ("<=", "<") not in [(m.before, m.after) for m in mutants]
    assert [(m.before, m.after) for m in mutants] == [("1", "0"), ("1", "2")]
    # x - 1 -> x - 0 is the unfixed expression in all but name: not offered
    minus = "def f(x):\n    return x - 1\n"
    offered = mutants_of(FileDiff("a.py", (((2,), ("    return x",)),)), minus, None)
    assert [(m.before, m.after) for m in offered] == [("1", "2"), ("-", "+")]


def test_a_junit_name_becomes_a_node_id_of_the_trees_files() -> None:
    files = ["tests/test_a.py", "tests/__init__.py", "pkg/a.py"]
    assert junit_to_nodeid("tests.test_a::test_x[1.5-a]", files) == "tests/test_a.py::test_x[1.5-a]"
    assert junit_to_nodeid("tests.test_a.TestK::test_y", files) == "tests/test_a.py::TestK::test_y"
    assert junit_to_nodeid("elsewhere::test_z", files) is None
    assert junit_to_nodeid("::tests.test_a", files) is None
    assert collection_problem(2, "interrupted", {"::tests.test_a": "error"}) == (
        "tests.test_a cannot be collected"
    )
    assert collection_problem(None, "timed out after 5s", {}) == "timed out after 5s"
    assert collection_problem(1, "", {"t::a": "failed"}) is None


def test_the_specification_is_the_message_blinded() -> None:
    message = (
        "Fix the boundary\n\nThe last page was dropped.\nI am 90% confident this is right.\n\n"
        "(cherry picked from commit 0123abcd)\n\nSigned-off-by: A <a@b.c>\nReviewed-on: https://x"
    )
    spec = blind_message(message)
    assert spec.startswith("Fix the boundary\n\nThe last page was dropped.")
    for leaked in ("Signed-off-by", "Reviewed-on", "cherry picked", "confident"):
        assert leaked not in spec


def test_the_test_command_is_a_pytest_command_line() -> None:
    assert args_of("pytest -x tests") == ("-x", "tests")
    assert args_of("python3 -m pytest -q") == ("-q",)
    assert args_of("pytest -m 'not slow' tests/unit") == ("-m", "not slow", "tests/unit")
    with pytest.raises(ValueError, match="pytest command line"):
        args_of("make test")
    for smuggled in ("-p evil", "--rootdir=/", "../outside", "/etc", "@args.txt", "-c x.ini"):
        with pytest.raises(ValueError, match="--test-command: test command"):
            args_of(f"pytest {smuggled}")


def test_a_live_models_raw_answer_is_recorded_for_replay(tmp_path: Path) -> None:
    repo = tmp_path / "scratch" / "repo"
    (repo / ".critic22").mkdir(parents=True)
    (repo / ".critic22" / "answer.txt").write_text("[]")
    (tmp_path / "secret.txt").write_text("no")
    report = {"critic": {"source": "model", "answer": str(repo / ".critic22" / "answer.txt")}}
    assert _raw_answer(report, repo) == "[]"
    outside = {"critic": {"source": "model", "answer": str(tmp_path / "secret.txt")}}
    assert _raw_answer(outside, repo) is None
    assert _raw_answer({"critic": {"source": "replay", "answer": "x"}}, repo) is None
    records = {("c1", "critic"): {"raw_answer": "[]"}, ("c1", "validator"): {}}
    assert _record(records, tmp_path / "rec") == 1
    assert json.loads((tmp_path / "rec" / "c1.txt").read_text()) == []
