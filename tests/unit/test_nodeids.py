"""Node ids are parsed, not split on spaces, and checked as data before pytest sees them."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_critic22.kinds.grammar import route
from pytest_critic22.model.nodeids import check_in_tree, check_nodeid, split_nodeids
from pytest_critic22.model.procedure import TraceData

SPACED = "tests/test_fmt.py::test_units[[1, 'Hz']-1.00 Hz]"


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        (SPACED, [SPACED]),
        (f"{SPACED} tests/b.py::c", [SPACED, "tests/b.py::c"]),
        ("\"a.py::t[1, 2]\" 'b.py::u'", ["a.py::t[1, 2]", "b.py::u"]),
        ('["a.py::x y", "b.py"]', ["a.py::x y", "b.py"]),
        ("a.py::x\nb.py::y", ["a.py::x", "b.py::y"]),
        ("  ", []),
    ],
    ids=["spaces-and-brackets", "two", "quoted", "json-list", "lines", "empty"],
)
def test_node_ids_run_to_the_next_path_or_the_end_of_the_line(text: str, ids: list[str]) -> None:
    assert split_nodeids(text) == ids


@pytest.mark.parametrize(
    ("nodeid", "words"),
    [
        ("--junitxml=/tmp/x.py", "option"),
        ("-k", "option"),
        ("@args.py", "file of arguments"),
        ("/outside/test_out.py::test_x", "inside the repository"),
        ("tests/../../x.py::t", "inside the repository"),
        ("tests/test_x.txt::t", "not a test node id"),
        ("tests/test_x.py::", "not a test node id"),
    ],
)
def test_what_is_not_a_safe_node_id_says_why(nodeid: str, words: str) -> None:
    problem = check_nodeid(nodeid)
    assert problem is not None and words in problem


def test_a_node_id_must_be_a_file_of_the_tree_not_a_link_out_of_it(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "tests").mkdir(parents=True)
    (tree / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    outside = tmp_path / "test_out.py"
    outside.write_text("def test_x():\n    pass\n")
    (tree / "tests" / "test_link.py").symlink_to(outside)
    assert check_in_tree("tests/test_a.py::test_a", tree) is None
    assert "outside" in str(check_in_tree("tests/test_link.py::test_x", tree))
    assert "not a test file" in str(check_in_tree("tests/test_nope.py::t", tree))


def test_trace_takes_one_spaced_node_id_and_its_options_last() -> None:
    procedure = route(f"trace: {SPACED} repeat=3").procedure
    assert procedure is not None
    assert procedure.payload(TraceData) == TraceData(SPACED, 3)
    assert "unknown option" in route(f"trace: {SPACED} rounds=3").reason
    assert "option" in route("trace: --junitxml=/tmp/x.py").reason
