"""Running a ``property:`` procedure (I/O): the search in both trees, the hostile results
read back and validated, the first difference frozen and replayed on both trees.

The controller never unpickles anything and never evaluates a child's text: a result file is
opened without following links, read with a size limit and checked field by field; literal
inputs are re-emitted from ``ast.literal_eval`` and checked again before they reach source.
"""

from __future__ import annotations

import ast
import json
import keyword
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Protocol

from pytest_critic22.child.protocol import GENERATED_PREFIX
from pytest_critic22.execution.child_files import MAX_CHILD_FILE, child_tempdir, read_child_file
from pytest_critic22.execution.runner import cpu_slot, detect_pythonpath, spawn_python
from pytest_critic22.execution.trees import TreeError, Variant, write_in_tree
from pytest_critic22.kinds.property_script import (
    DOTTED,
    HELPER_PREFIX,
    IDENT,
    MAX_EXAMPLES,
    NAME,
    example_line,
    replay_test,
    search_script,
)
from pytest_critic22.model.procedure import NotExecutable, Procedure
from pytest_critic22.model.results import Outcome, OutcomeKind, RunResult
from pytest_critic22.verification.decide import decide
from pytest_critic22.verification.procedures import (
    ExecutionContext,
    FindingResult,
    counterfactual_variant,
    drop_speculated,
    environment_problem,
    run_speculated,
    run_tests,
    speculate,
)

if TYPE_CHECKING:
    from pytest_critic22.model.procedure import FindingLike


class Spec(Protocol):
    """What a run reads of a ``property:`` spec (``kinds.property.Spec`` is one)."""

    @property
    def target(self) -> str: ...

    @property
    def relation(self) -> str: ...

    @property
    def inverse(self) -> str: ...

    @property
    def given(self) -> tuple[tuple[str, str], ...]: ...

    @property
    def relation_text(self) -> str: ...


__all__ = ["Example", "SearchError", "execute", "read_search"]


@dataclass(frozen=True, slots=True)
class Example:
    """One example a search reported, validated."""

    key: tuple[tuple[str, str], ...]  # (name, literal / pickle / repr): aligns the trees
    inputs: tuple[tuple[str, str, str, str], ...]  # (name, repr, literal, pickle)
    call: str
    shown: str  # the behaviour, or what the relation saw
    digest: str  # of the full behaviour
    holds: bool | None  # idempotent / roundtrip


class SearchError(Exception):
    def __init__(self, reason: str, environment: bool = False) -> None:
        super().__init__(reason)
        self.environment = environment


def execute(
    finding_id: str,
    finding: FindingLike,
    procedure: Procedure,
    spec: Spec | NotExecutable,
    ctx: ExecutionContext,
    max_examples: int = MAX_EXAMPLES,
) -> FindingResult:
    """Search both trees, freeze the first difference, replay it on both (see the module)."""
    variant = counterfactual_variant(finding, procedure, ctx.patch)
    logs: dict[str, Any] = {"procedure": NAME, "counterfactual_tree": variant.name}

    def result(kind: OutcomeKind, reason: str, environment: bool = False) -> FindingResult:
        outcome = Outcome(kind, reason, environment=environment)
        return FindingResult(finding_id, outcome, variant.name, logs, kind=NAME)

    if isinstance(spec, NotExecutable):
        return result("inconclusive", spec.reason)
    logs.update(target=spec.target, relation=spec.relation_text, given=dict(spec.given))
    logs["max_examples"] = max_examples
    try:
        # Inputs the critic chose run the project's code: in views of their own, as its tests.
        trees = {"patched": ctx.trees.get(Variant.patched(ctx.patch).for_critic())}
        trees[variant.name] = ctx.trees.get(variant.for_critic())
    except TreeError as exc:
        return result("inconclusive", str(exc), True)
    script = search_script(spec.target, spec.relation, spec.inverse, spec.given, max_examples)
    targets = (spec.target, spec.inverse)
    ctx.say(f"search on patched and {variant.name}")
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [
            (k, pool.submit(_search, ctx, t, script, targets, max_examples))
            for k, t in trees.items()
        ]
        found = {label: future.result() for label, future in futures}
    logs["search"] = {label: record for label, (_, record) in found.items()}
    for label, (examples, _) in found.items():  # the patched tree's problem first
        if isinstance(examples, SearchError):
            return result("inconclusive", f"on the {label} tree: {examples}", examples.environment)
    after, before = (r if isinstance(r, list) else [] for r, _ in found.values())
    aligned = 0
    while aligned < min(len(after), len(before)) and after[aligned].key == before[aligned].key:
        aligned += 1
    logs["search"]["compared"] = aligned
    if aligned == 0:
        return result("inconclusive", "no input was generated alike on both trees")
    pairs = list(zip(after[:aligned], before[:aligned], strict=True))
    if spec.relation in ("equivalent", "raises-same"):
        candidates = [(i, p, c) for i, (p, c) in enumerate(pairs) if p.digest != c.digest]
    else:
        candidates = [(i, p, c) for i, (p, c) in enumerate(pairs) if not p.holds and c.holds]
        both = next((p for p, c in pairs if not p.holds and not c.holds), None)
        if not candidates and both is not None:
            return result(
                "inconclusive",
                f"breaks {spec.relation} on both the patched and the {variant.name} tree "
                f"(first: {both.call}: {both.shown}): not shown to come from the located edit",
            )
    if not candidates:
        diverged = ""
        if aligned < min(len(after), len(before)):
            diverged = f"; the inputs diverge after example {aligned}: the strategies differ"
        return result(
            "refuted",
            f"no difference in {aligned} derandomized examples of {spec.target} "
            f"({spec.relation_text}) between the patched and the {variant.name} tree{diverged}",
        )
    # The frozen input is the counterfactual child's own serialisation (equal to the patched
    # child's: the keys matched), so no tree ever loads bytes only the other tree produced.
    frozen = next(((i, p, c, e) for i, p, c in candidates if (e := _frozen_source(c))), None)
    if frozen is None:
        call = candidates[0][1].call
        return result("inconclusive", f"the counterexample {call} cannot be frozen (no pickle)")
    index, mine, theirs, example = frozen
    if spec.relation in ("equivalent", "raises-same"):
        shown = f"{mine.call} -> patched {mine.shown}, counterfactual {theirs.shown}"
    else:
        shown = (
            f"{mine.call} -> patched breaks {spec.relation} ({mine.shown}), "
            f"counterfactual keeps it ({theirs.shown})"
        )
    line = example_line(example)
    text = f"falsifying example: {shown}; frozen as {line}"
    name = re.sub(r"[^a-z0-9_]", "_", finding_id.lower())[:40]
    parts = [p for p in PurePosixPath(ctx.test_dir or ".").parts if p != "."]
    relative = PurePosixPath(*parts, f"{GENERATED_PREFIX}{name}_property.py").as_posix()
    logs["counterexample"] = {
        "index": index,
        "call": mine.call,
        "inputs": {n: r for n, r, _, _ in mine.inputs},
        "patched": mine.shown,
        "counterfactual": theirs.shown,
        "example": line,
        "replay_test": relative,
    }
    source = replay_test(
        name, spec.target, spec.relation, spec.inverse, example, theirs.digest, theirs.shown
    )
    try:
        for tree in trees.values():
            write_in_tree(tree, relative, source)
    except TreeError as exc:
        return result("inconclusive", f"cannot write the replay test: {exc}; {text}")
    kind, reason, environment = _replay(
        ctx, trees["patched"], trees[variant.name], relative, logs, text
    )
    return result(kind, reason, environment)


def _replay(
    ctx: ExecutionContext,
    patched: Path,
    counter: Path,
    relative: str,
    logs: dict[str, Any],
    text: str,
) -> tuple[OutcomeKind, str, bool]:
    """The frozen example on both trees, reruns on patched: only this decides."""
    name = logs["counterfactual_tree"]
    early = speculate(ctx, counter, [relative])  # beside the first replay, if a slot is free
    replays: list[RunResult] = []
    try:
        for attempt in range(max(1, ctx.reruns)):
            ctx.say(f"replay on patched {attempt + 1}/{max(1, ctx.reruns)}")
            replays.append(run_tests(ctx, patched, [relative]))
            if replays[-1].status != "failed":
                break
    except BaseException:
        drop_speculated(ctx, early)
        raise
    logs["patched"] = [r.to_dict() for r in replays]
    if not all(r.status == "failed" for r in replays):
        drop_speculated(ctx, early)
    if replays[0].status == "passed":
        return (
            "refuted",
            f"the frozen replay passes on the patched tree: the search's difference is not "
            f"reproduced ({text})",
            False,
        )
    on_counter = acceptance = None
    if all(r.status == "failed" for r in replays):
        ctx.say(f"replay on {name}")
        on_counter = run_speculated(ctx, early) if early else run_tests(ctx, counter, [relative])
        logs["counterfactual"] = on_counter.to_dict()
        if on_counter.status == "passed" and ctx.acceptance:
            ctx.say(f"acceptance test on {name}")
            acceptance = run_tests(ctx, counter, [ctx.acceptance])
            logs["acceptance"] = acceptance.to_dict()
    outcome = decide(replays, on_counter, counterfactual_name=name, acceptance=acceptance)
    if outcome.kind == "inconclusive":
        for run, tree, label in ((replays[0], patched, "patched"), (on_counter, counter, name)):
            problem = environment_problem(run, tree, run.status) if run else ""
            if problem:
                return "inconclusive", f"on the {label} tree: {problem}; {text}", True
    return outcome.kind, f"{outcome.reason}; {text}", False


def _frozen_source(example: Example) -> list[tuple[str, str]] | None:
    """(name, expression) per input for ``@example``: checked literal source, else a pickle
    blob the replaying child loads. The controller never unpickles anything."""
    out = []
    for name, _, literal, blob in example.inputs:
        source = ""
        if literal:
            try:
                source = repr(ast.literal_eval(literal))
                ast.literal_eval(source)  # inf and nan are names, not source: use the blob
            except Exception:
                source = ""
        if not source and not blob:
            return None
        out.append((name, source or f"_c22_load({blob!r})"))
    return out


def _search(
    ctx: ExecutionContext, tree: Path, script: str, targets: tuple[str, str], limit: int
) -> tuple[list[Example] | SearchError, dict[str, Any]]:
    """One search in one tree; its script and result in a folder only that child may write."""
    if ctx.scratch:
        ctx.scratch.mkdir(parents=True, exist_ok=True)
    scratch = str(ctx.scratch) if ctx.scratch else None
    with child_tempdir("critic22-property-", scratch) as tmp:
        folder = Path(tmp)
        (folder / "search.py").write_text(script, encoding="utf-8")
        with cpu_slot(ctx.slot_dir, ctx.slots):
            code, output, seconds = spawn_python(
                tree,
                [str(folder / "search.py"), str(folder / "result.json")],
                timeout=ctx.timeout,
                pythonpath=detect_pythonpath(tree, ctx.pythonpath),
                sandbox=ctx.sandbox,
                writable=[folder],
                scratch=ctx.scratch,
            )
        record: dict[str, Any] = {"exit_code": code, "seconds": round(seconds, 3)}
        try:
            if code is None:
                raise SearchError(f"the search timed out after {ctx.timeout:g}s")
            found = read_search(_read_limited(folder / "result.json"), targets, limit)
        except SearchError as exc:
            record.update(error=str(exc), output=output)
            return exc, record
    record["examples"] = len(found)
    return found, record


_MAX_RESULT = 16 << 20
_HEX = re.compile(r"^[0-9a-f]{64}$")
_BLOB = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")
_ERRORS = ("hypothesis", "import", "signature", "strategy", "search")


def _read_limited(path: Path) -> bytes:
    """A child's result file: a regular file (no link, no FIFO), at most _MAX_RESULT bytes."""
    data = read_child_file(path, MAX_CHILD_FILE)
    if data is None:
        raise SearchError("the search ended without a result (a regular file)")
    if len(data) > _MAX_RESULT:
        raise SearchError(f"the search's result is larger than {_MAX_RESULT} bytes")
    return data


def read_search(data: bytes, targets: tuple[str, ...], limit: int = MAX_EXAMPLES) -> list[Example]:
    """Strictly validated examples from a child's JSON (hostile data); SearchError else."""
    malformed = SearchError("the search's result is malformed")
    try:
        document = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        raise malformed from None
    if not isinstance(document, dict) or document.get("status") not in ("ok", "error"):
        raise malformed
    if document["status"] == "error":
        error, message = document.get("error"), document.get("message")
        if error not in _ERRORS or not isinstance(message, str):
            raise malformed
        if error == "hypothesis":
            raise SearchError(
                f"needs hypothesis installed in the project's environment ({message[:300]})", True
            )
        missing = document.get("missing")
        if error == "import" and _foreign(missing, targets):
            raise SearchError(  # the target's module exists, and imports what does not
                f"the tree cannot import {missing} (needed by {targets[0]}): an untracked or "
                "generated file, or a dependency that is not installed? ini critic22_copy "
                "copies files into every tree, critic22_tree_setup runs a command in each new tree",
                True,
            )
        prefix = "cannot import the function: " if error == "import" else ""
        raise SearchError(prefix + message[:500])
    examples = document.get("examples")
    if not isinstance(examples, list) or len(examples) > limit:
        raise malformed
    return [_example(entry, malformed) for entry in examples]


def _foreign(missing: object, targets: tuple[str, ...]) -> bool:
    """Is the module that could not be imported something other than the target's own
    (which would be the critic's guess, not the tree's problem)?"""
    if not isinstance(missing, str) or not DOTTED.match(f"{missing}.x"):
        return False
    return not any(f"{t}.".startswith(f"{missing}.") for t in targets if t)


def _example(entry: object, malformed: SearchError) -> Example:
    if not isinstance(entry, dict):
        raise malformed
    raw, call, shown, digest, holds = (
        entry.get(k) for k in ("input", "call", "shown", "digest", "holds")
    )
    if not (isinstance(raw, dict) and isinstance(call, str) and isinstance(shown, str)):
        raise malformed
    if not (isinstance(digest, str) and _HEX.match(digest)) or not isinstance(holds, bool | None):
        raise malformed
    inputs = []
    for name, value in raw.items():
        if not (isinstance(name, str) and IDENT.match(name) and isinstance(value, dict)):
            raise malformed
        if keyword.iskeyword(name) or name.startswith(HELPER_PREFIX):
            raise malformed
        text, literal, blob = (value.get(k, "") for k in ("repr", "literal", "pickle"))
        if not (isinstance(text, str) and isinstance(literal, str) and isinstance(blob, str)):
            raise malformed
        if len(literal) > 20000 or len(blob) > 60000 or not _BLOB.match(blob):
            raise malformed
        inputs.append((name, text[:300], literal, blob))
    key = tuple((n, literal or blob or text) for n, text, literal, blob in inputs)
    return Example(key, tuple(inputs), call[:2000], shown[:300], digest, holds)
