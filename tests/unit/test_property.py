"""The property: kind: its grammar and strategy allow-list, the code it generates, the hostile
results it reads back, and real searches and frozen replays on the propkit sample."""

from __future__ import annotations

import ast
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_critic22.apps.samples import case_dir, materialize
from pytest_critic22.execution.git import head_commit
from pytest_critic22.execution.trees import TreeSet
from pytest_critic22.kinds.property import STRATEGIES, Spec, parse, parse_spec
from pytest_critic22.kinds.property_run import SearchError, read_search
from pytest_critic22.kinds.property_script import replay_test, search_script
from pytest_critic22.model.patch import parse_patch
from pytest_critic22.model.procedure import NotExecutable, Procedure
from pytest_critic22.verification.procedures import ExecutionContext


@pytest.mark.parametrize(
    ("text", "relation", "inverse"),
    [
        (" pkg.mod.f", "equivalent", ""),
        (" pkg.mod.f equivalent", "equivalent", ""),
        (" pkg.mod.f raises-same", "raises-same", ""),
        (" pkg.mod.f idempotent", "idempotent", ""),
        (" pkg.mod.f roundtrip pkg.mod.g", "roundtrip", "pkg.mod.g"),
    ],
)
def test_each_relation_parses_and_survives_the_procedure_record(
    text: str, relation: str, inverse: str
) -> None:
    procedure = parse(text + "\ngiven: x=st.integers(-5, 50)")
    assert isinstance(procedure, Procedure) and procedure.kind == "property"
    spec = Spec.of(Procedure.from_dict(procedure.to_dict()))
    assert spec == Spec("pkg.mod.f", relation, inverse, (("x", "st.integers(-5, 50)"),))


def test_given_strategies_are_checked_and_re_emitted_from_their_syntax_tree() -> None:
    spec = parse_spec(
        " pkg.text.slugify equivalent given: text=st.text( max_size = 20 ),n=st.integers(-5,50)\n"
        "given: words=st.lists(st.sampled_from(['a', 'b']), min_size=1)\n"
        "given: table=st.fixed_dictionaries({'k': st.one_of(st.none(), st.floats(-1.5, 2))})"
    )
    assert isinstance(spec, Spec)
    assert dict(spec.given) == {
        "text": "st.text(max_size=20)",
        "n": "st.integers(-5, 50)",
        "words": "st.lists(st.sampled_from(['a', 'b']), min_size=1)",
        "table": "st.fixed_dictionaries({'k': st.one_of(st.none(), st.floats(-1.5, 2))})",
    }


@pytest.mark.parametrize(
    "given",
    [
        "text=st.text().map(eval)",
        "text=__import__('os').system('id')",
        "text=lambda: 1",
        "text=open('/etc/passwd')",
        "text=st.builds(eval, st.text())",
        "text=st.text(alphabet=ALPHABET)",
        "text=st.text(alphabet=st.__class__)",
        "text=st.sampled_from([c for c in 'ab'])",
        "text=st.integers(*[1, 2])",
        "text=st.integers(**{'min_value': 1})",
        "text=st.integers(1 + 1)",
        "text=st.text(), **extra",
        "st.text()",
        "__class__=st.text()",
        "text=st.text()), (os.system('id')",
    ],
)
def test_a_hostile_or_unlisted_strategy_is_not_executable(given: str) -> None:
    parsed = parse(f" pkg.text.slugify\ngiven: {given}")
    assert isinstance(parsed, NotExecutable) and parsed.kind == "property"
    assert parsed.reason.startswith("property: given:")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "names no function"),
        (" slugify", "not a dotted MODULE.FUNC"),
        (" -pkg.f", "not a dotted MODULE.FUNC"),
        (" pkg/mod.f", "not a dotted MODULE.FUNC"),
        (" pkg.__class__.f", "dunder"),
        (" pkg.import.f", "keyword"),
        (" pkg.f commutes", "unknown relation"),
        (" pkg.f roundtrip", "needs its INVERSE"),
        (" pkg.f roundtrip ../g", "roundtrip INVERSE"),
        (" pkg.f idempotent extra", "unexpected"),
        (" pkg.f\nimport os", "unexpected line"),
        (" pkg.f\ngiven: x=st.text()\ngiven: x=st.none()", "given twice"),
    ],
)
def test_a_bad_target_or_relation_is_not_executable(text: str, why: str) -> None:
    parsed = parse(text)
    assert isinstance(parsed, NotExecutable) and why in parsed.reason


def test_every_allowed_strategy_is_a_public_hypothesis_strategy() -> None:
    from hypothesis import strategies as st

    assert all(hasattr(st, name) and not name.startswith("_") for name in STRATEGIES)


def test_the_registry_routes_property_to_this_kind() -> None:
    from pytest_critic22.kinds import builtin_kinds

    registry = builtin_kinds()
    routed = registry.route("property: pkg.mod.f idempotent")
    assert routed.procedure is not None and routed.procedure.kind == "property"
    assert "property:" in registry.grammar()


def test_the_generated_search_and_replay_compile_and_keep_child_text_inert() -> None:
    search = search_script("pkg.mod.f", "equivalent", "", (("x", "st.integers(-5, 50)"),), 7)
    compile(search, "search.py", "exec")
    assert "derandomize=True" in search and "database=None" in search
    assert "{'x': st.integers(-5, 50)}" in search
    # A child's text that holds a template marker or quotes stays one string constant.
    hostile = "__TARGET__ '); import os; ('"
    replay = replay_test(
        "f1",
        "pkg.mod.f",
        "equivalent",
        "",
        [("x", "3"), ("y", "_c22_load('gASVAw==')")],
        "0" * 64,
        hostile,
    )
    tree = ast.parse(replay)
    assert hostile in {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
    assert "@example(x=3, y=_c22_load('gASVAw=='))" in replay
    imports = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert "os" not in imports


def _result(examples: list[dict[str, Any]]) -> bytes:
    return json.dumps({"status": "ok", "examples": examples}).encode()


GOOD = {
    "input": {"text": {"repr": "'a'", "literal": "'a'"}},
    "call": "f(text='a')",
    "shown": "returns 'a'",
    "digest": "a" * 64,
    "holds": None,
}


@pytest.mark.parametrize(
    "bad",
    [
        b"not json",
        b"[1]",
        _result([dict(GOOD, digest="xyz")]),
        _result([dict(GOOD, input={"os.system": {"repr": "1"}})]),
        _result([dict(GOOD, input={"class": {"repr": "1"}})]),
        _result([dict(GOOD, input={"_c22_target": {"repr": "1"}})]),
        _result([dict(GOOD, input={"text": {"repr": "1", "pickle": "!!not base64"}})]),
        _result([dict(GOOD, holds="yes")]),
        _result([GOOD] * 41),
        json.dumps({"status": "error", "error": "rm -rf", "message": "x"}).encode(),
    ],
)
def test_a_childs_malformed_result_is_refused(bad: bytes) -> None:
    assert len(read_search(_result([GOOD]), ("pkg.f",), 40)) == 1
    with pytest.raises(SearchError, match="malformed"):
        read_search(bad, ("pkg.f",), 40)


def test_a_missing_dependency_is_the_environments_and_a_missing_target_the_critics() -> None:
    def error(missing: str) -> SearchError:
        data = {"status": "error", "error": "import", "message": "m", "missing": missing}
        with pytest.raises(SearchError) as caught:
            read_search(json.dumps(data).encode(), ("propkit.text.slugify", ""))
        return caught.value

    assert error("requests").environment
    assert not error("propkit").environment and not error("propkit.text").environment


@pytest.fixture
def propkit(tmp_path: Path) -> Iterator[Any]:
    """(make an ExecutionContext for a case, the repository)"""
    repo = materialize("propkit", tmp_path / "repo")
    made: list[TreeSet] = []

    def context(case: str, sandbox: Any = None, reruns: int = 2) -> ExecutionContext:
        patch = parse_patch((case_dir("propkit", case) / "patch.diff").read_text())
        trees = TreeSet(repo, head_commit(repo), f"test-{uuid.uuid4().hex[:8]}")
        made.append(trees)
        return ExecutionContext(
            patch=patch,
            trees=trees,
            timeout=180,
            reruns=reruns,
            slots=2,
            slot_dir=trees.slots,
            sandbox=sandbox,
            test_dir="tests",
            scratch=trees.scratch,
        )

    yield context
    for trees in made:
        trees.remove_all()
