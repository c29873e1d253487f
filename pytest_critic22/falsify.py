"""The falsification grammar: a finding's ``falsification`` string -> a typed procedure.

The router reads the first line's prefix and nothing else; the claim's wording never
changes where a finding goes. This module is the one definition of "executable".

    test:            Python source of pytest tests that PASS when the claim is wrong,
                     optionally followed by a line "repair:" and a unified diff
    counterfactual:  NODEID [NODEID ...]   (node ids may hold spaces; quotes or a JSON
                                            list are accepted: see pytest_critic22.nodeids)
    static:          CHECK [ARG ...]
    trace:           NODEID [repeat=N]
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pytest_critic22.nodeids import check_nodeid, split_nodeids

if TYPE_CHECKING:
    from pytest_critic22.diffparse import ParsedPatch

__all__ = [
    "EXECUTABLE_KINDS",
    "KINDS",
    "NotExecutable",
    "Procedure",
    "Route",
    "parse_procedure",
    "route",
]

ProcedureKind = Literal["test", "counterfactual", "static", "trace"]
KINDS: tuple[ProcedureKind, ...] = ("test", "counterfactual", "static", "trace")

#: Kinds this version can run. Whether a particular ``static:`` check applies to a patch
#: (a known check, arguments that name something in it) is decided against the trees, by
#: the validator the session hands to the finding parser.
EXECUTABLE_KINDS: frozenset[str] = frozenset(KINDS)

_PREFIX = re.compile(r"^\s*(test|counterfactual|static|trace)\s*:", re.IGNORECASE)
_REPAIR = re.compile(r"^repair:\s*$", re.MULTILINE)
_REPEAT = re.compile(r"^repeat=(\d+)$")
_TRAILING_OPTION = re.compile(r"\s(\w+=\S*)$")
_MAX_REPEAT = 200
_DEFAULT_REPEAT = 20


@dataclass(frozen=True, slots=True)
class Procedure:
    """What to execute. Only the fields of its kind are set."""

    kind: ProcedureKind
    source: str = ""  # test: the critic's pytest source
    repair: str = ""  # test: optional unified diff against the patched tree, as applied
    repair_given: str = ""  # test: the repair as the critic wrote it, when recounted
    nodeids: tuple[str, ...] = ()  # counterfactual: existing tests; trace: the one test
    check: str = ""  # static: the check's name
    args: tuple[str, ...] = ()  # static: the check's arguments
    repeat: int = 0  # trace: how many replays per tree


@dataclass(frozen=True, slots=True)
class NotExecutable:
    reason: str
    kind: str | None = None  # the kind the prefix named, when it named one


@dataclass(frozen=True, slots=True)
class Route:
    """A finding's route: one procedure, or why there is none."""

    procedure: Procedure | None
    reason: str = ""

    @property
    def executable(self) -> bool:
        return self.procedure is not None


def parse_procedure(text: str) -> Procedure | NotExecutable:
    """Parse the grammar. Says nothing about whether this version can run the kind."""
    if not text or not text.strip():
        return NotExecutable("falsification is empty")
    match = _PREFIX.match(text)
    if match is None:
        first = text.strip().splitlines()[0][:60]
        return NotExecutable(
            f"falsification does not start with test:, counterfactual:, static: or trace: "
            f"(got {first!r})"
        )
    kind = match.group(1).lower()
    rest = text[match.end() :]
    if kind == "test":
        return _parse_test(rest)
    if kind == "counterfactual":
        return _parse_counterfactual(rest)
    if kind == "static":
        return _parse_static(rest)
    return _parse_trace(rest)


def route(falsification: str) -> Route:
    """The router: a procedure this version can execute, or the reason it cannot."""
    parsed = parse_procedure(falsification)
    if isinstance(parsed, NotExecutable):
        return Route(None, parsed.reason)
    if parsed.kind not in EXECUTABLE_KINDS:
        return Route(None, f"{parsed.kind}: procedures are not executable in this version")
    return Route(parsed)


def _parse_test(rest: str) -> Procedure | NotExecutable:
    repair = ""
    split = _REPAIR.search(rest)
    if split is not None:
        repair = rest[split.end() :].lstrip("\n")
        rest = rest[: split.start()]
    source = _dedent_source(rest)
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return NotExecutable(f"test: source does not parse: {exc.msg} (line {exc.lineno})", "test")
    tests = [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    ]
    if not tests:
        return NotExecutable("test: source defines no test function", "test")
    given = ""
    if split is not None:
        from pytest_critic22.diffparse import DiffError, parse_patch, recount_hunks

        # Models miscount hunk lengths; the counts are recomputed (the context is still
        # checked exactly when the repair is applied), and the diff as given is kept. A last
        # hunk that says too few lines parses as given (the rest is ignored), so the counts
        # are compared, not only whether it parses.
        recounted = recount_hunks(repair)
        try:
            fixed = _hunk_counts(parse_patch(recounted))
        except DiffError as exc:
            return NotExecutable(f"test: repair is not a usable diff: {exc}", "test")
        try:
            as_given: list[tuple[int, int]] | None = _hunk_counts(parse_patch(repair))
        except DiffError:
            as_given = None
        if as_given != fixed:
            given, repair = repair, recounted
    return Procedure(kind="test", source=source, repair=repair, repair_given=given)


def _hunk_counts(patch: ParsedPatch) -> list[tuple[int, int]]:
    return [(e.old_count, e.new_count) for e in patch.edits]


def _parse_counterfactual(rest: str) -> Procedure | NotExecutable:
    nodeids = tuple(split_nodeids(rest))
    if not nodeids:
        return NotExecutable("counterfactual: names no test", "counterfactual")
    for nodeid in nodeids:
        problem = check_nodeid(nodeid)
        if problem:
            return NotExecutable(f"counterfactual: {problem}", "counterfactual")
    return Procedure(kind="counterfactual", nodeids=nodeids)


def _parse_static(rest: str) -> Procedure | NotExecutable:
    words = rest.split()
    if not words:
        return NotExecutable("static: names no check", "static")
    return Procedure(kind="static", check=words[0], args=tuple(words[1:]))


def _parse_trace(rest: str) -> Procedure | NotExecutable:
    text = rest.strip().splitlines()[0].strip() if rest.strip() else ""
    repeat = _DEFAULT_REPEAT
    # Options come last; everything before them is the one node id (which may hold spaces).
    while (tail := _TRAILING_OPTION.search(text)) is not None:
        found = _REPEAT.match(tail.group(1))
        if found is None:
            return NotExecutable(f"trace: unknown option {tail.group(1)!r}", "trace")
        repeat = int(found.group(1))
        text = text[: tail.start()].rstrip()
    nodeids = split_nodeids(text)
    if not nodeids:
        return NotExecutable("trace: names no test", "trace")
    if len(nodeids) > 1:
        return NotExecutable(f"trace: replays one test, got {len(nodeids)}", "trace")
    nodeid = nodeids[0]
    problem = check_nodeid(nodeid)
    if problem:
        return NotExecutable(f"trace: {problem}", "trace")
    if not 1 <= repeat <= _MAX_REPEAT:
        return NotExecutable(f"trace: repeat must be 1..{_MAX_REPEAT}", "trace")
    return Procedure(kind="trace", nodeids=(nodeid,), repeat=repeat)


def _dedent_source(source: str) -> str:
    """The critic's source as a module: fences dropped, common indentation removed."""
    import textwrap

    lines = [ln for ln in source.lstrip(" \t").split("\n") if not ln.strip().startswith("```")]
    return textwrap.dedent("\n".join(lines).strip("\n")) + "\n"
