"""Impact evidence, preservation items and the engage decision."""

from __future__ import annotations

import json

import pytest

from pytest_critic22.critic.engage import Thresholds, decide_engage
from pytest_critic22.evidence.bounding import bound_evidence
from pytest_critic22.evidence.codefacts import module_name
from pytest_critic22.evidence.codescan import scan_file
from pytest_critic22.evidence.impact import edit_impact, statement_lines


def test_a_re_export_and_an_aliased_import_resolve_to_the_definition() -> None:
    graph = {
        "pkg/__init__.py": scan_file("pkg/__init__.py", "from pkg.core import run as go\n"),
        "pkg/core.py": scan_file("pkg/core.py", "def run(x):\n    return x\n"),
        "app.py": scan_file("app.py", "import pkg as p\nfrom pkg import go\n\ngo(1)\np.go(2)\n"),
    }
    from pytest_critic22.evidence.impact import edit_impact

    (symbol,) = edit_impact(
        "pkg/core.py", graph["pkg/core.py"], graph["pkg/core.py"], [2], [2], graph
    )
    assert symbol.name == "pkg.core.run"
    assert symbol.callers == ("app.py:2", "app.py:4", "app.py:5", "pkg/__init__.py:1")


def test_a_star_import_takes_all_else_the_public_names_and_yields_to_own_names() -> None:
    sources = {
        "pkg/__init__.py": "from pkg.a import *\nfrom pkg.b import *\n\n\ndef mine():\n    pass\n",
        "pkg/a.py": "__all__ = ('listed',)\n\n\ndef listed():\n    pass\n\n\ndef unlisted():\n"
        "    pass\n",
        "pkg/b.py": "def public():\n    pass\n\n\ndef _private():\n    pass\n\n\ndef mine():\n"
        "    pass\n",
        "app.py": (
            "import pkg\n\npkg.listed()\npkg.unlisted()\npkg.public()\npkg._private()\npkg.mine()\n"
        ),
    }
    graph = {path: scan_file(path, text) for path, text in sources.items()}

    def callers(path: str, qualname: str) -> tuple[str, ...]:
        facts = graph[path]
        (definition,) = [d for d in facts.definitions if d.qualname == qualname]
        lines = [definition.start]
        (symbol,) = edit_impact(path, facts, facts, lines, lines, graph)
        return symbol.callers

    assert callers("pkg/a.py", "listed") == ("app.py:3", "pkg/__init__.py:1")
    assert callers("pkg/a.py", "unlisted") == ()  # not in __all__
    assert callers("pkg/b.py", "public") == ("app.py:5", "pkg/__init__.py:2")
    assert callers("pkg/b.py", "_private") == ()  # no __all__: private names stay behind
    assert callers("pkg/b.py", "mine") == ()  # pkg defines its own `mine`
    assert callers("pkg/__init__.py", "mine") == ("app.py:7",)


def test_a_file_that_does_not_parse_is_listed_not_fatal() -> None:
    facts = scan_file("bad.py", "def broken(:\n")
    assert facts.parse_error and facts.definitions == ()


@pytest.mark.parametrize(
    ("path", "module"),
    [
        ("src/pkg/mod.py", "pkg.mod"),
        ("pkg/__init__.py", "pkg"),
        ("tests/test_a.py", "tests.test_a"),
    ],
)
def test_module_names(path: str, module: str) -> None:
    assert module_name(path) == module


def test_a_multi_line_statement_counts_from_its_first_line() -> None:
    source = "x = f(\n    1,\n    2,\n)\nif x:\n    y = [\n        3]\n"
    assert statement_lines(source) == {1: 1, 2: 1, 3: 1, 4: 1, 5: 5, 6: 6, 7: 6}


def test_evidence_is_cut_deterministically_to_the_budget() -> None:
    evidence = {
        "edits": {
            "e1": {"symbols": [{"name": "m.f", "callers": [f"a.py:{i}" for i in range(50)]}]}
        },
        "blast_radius": {"edits": 1},
    }
    full = len(json.dumps(evidence, sort_keys=True, separators=(",", ":")))
    cut, note = bound_evidence(evidence, full - 100)
    again, _ = bound_evidence(evidence, full - 100)
    assert cut == again and note.startswith("callers and tests cut to at most")
    assert len(json.dumps(cut, sort_keys=True, separators=(",", ":"))) <= full - 100
    assert bound_evidence(evidence, full)[1] == ""
    tiny, note = bound_evidence(evidence, 30)
    assert tiny["blast_radius"] == {"edits": 1} and "dropped" in note


@pytest.mark.parametrize(
    ("radius", "uncovered", "status", "engage", "reason"),
    [
        ({"edits": 1, "files": 1}, {}, "passed", False, "covered"),
        ({"edits": 9, "files": 1}, {}, "passed", True, "blast radius: edits 9 > 3"),
        (
            {"edits": 1},
            {"m.py": [3, 4]},
            "passed",
            True,
            "not covered by preservation tests: m.py:3,4",
        ),
        ({"edits": 1}, {}, "failed", True, "preservation tests on the patched tree: failed"),
    ],
)
def test_decide_engage(
    radius: dict[str, int], uncovered: dict[str, list[int]], status: str, engage: bool, reason: str
) -> None:
    decision = decide_engage(
        radius=radius, uncovered=uncovered, preservation_status=status, thresholds=Thresholds()
    )
    assert decision.engage is engage and reason in decision.reason
