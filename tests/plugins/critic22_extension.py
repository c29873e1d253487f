"""A third-party plugin, as a user would write one: a new falsification kind and a new static
check, added through pytest-critic22's hooks without touching the package.

``mentions: TEXT`` claims the located edit removed TEXT from its file: verified when the
patched file lacks it and the counterfactual tree's file has it (reads files only, runs
nothing). ``static: todo-added`` hits an added line that says TODO.
"""

from __future__ import annotations

from typing import Any

from pytest_critic22.extend import (
    Args,
    Check,
    Example,
    FindingResult,
    Hit,
    NotExecutable,
    Outcome,
    Procedure,
    TreeError,
    Variant,
    counterfactual_variant,
    read_source,
)


class MentionsKind:
    name = "mentions"
    grammar = (
        "  mentions:        TEXT  the located edit removes TEXT from its file (a call, a guard,\n"
        "                   a log line). Example: mentions: raise ValueError\n"
    )

    def parse(self, rest: str) -> Procedure | NotExecutable:
        text = rest.strip().splitlines()[0].strip() if rest.strip() else ""
        if not text:
            return NotExecutable("mentions: names no text", "mentions")
        return Procedure("mentions", Args((text,)))

    def validate(self, finding: Any, procedure: Procedure, scope: Any) -> str | None:
        if finding.location == "whole-patch":
            return "mentions: needs one edit, not the whole patch"
        return None

    def execute(
        self, finding_id: str, finding: Any, procedure: Procedure, ctx: Any
    ) -> FindingResult:
        variant = counterfactual_variant(finding, procedure, ctx.patch)
        edit = ctx.patch.edit(finding.location)
        logs = {"procedure": "mentions", "file": edit.path}
        try:
            patched = ctx.trees.get(Variant.patched(ctx.patch))
            counter = ctx.trees.get(variant)
        except TreeError as exc:
            return FindingResult(finding_id, Outcome("inconclusive", str(exc)), variant.name, logs)
        text = procedure.data.args[0]
        on_patched = text in (read_source(patched, edit.path) or "")
        on_counter = text in (read_source(counter, edit.path) or "")
        if on_patched:
            outcome = Outcome("refuted", f"{edit.path} still mentions {text!r} on patched")
        elif not on_counter:
            outcome = Outcome("inconclusive", f"{edit.path} lacks {text!r} on both trees")
        else:
            outcome = Outcome(
                "verified", f"{edit.path} mentions {text!r} on {variant.name}, not on patched"
            )
        return FindingResult(finding_id, outcome, variant.name, logs)


def _todo_added(changes: Any, args: tuple[str, ...], sources: Any) -> list[Hit]:
    hits = []
    for change in changes:
        lines = (change.patched_source or "").splitlines()
        for number in sorted(change.added_lines):
            if 0 < number <= len(lines) and "TODO" in lines[number - 1]:
                hits.append(Hit("todo-added", change.path, number, "an added line says TODO"))
    return hits


TODO_ADDED = Check(
    name="todo-added",
    description="an added line that says TODO: the edit admits it is unfinished",
    run=_todo_added,
    valid=(Example(base="x = 1\n", patched="x = 2\n"),),
    invalid=(Example(base="x = 1\n", patched="x = 2  # TODO: tune\n"),),
)


def pytest_critic22_register_procedures(registry: Any) -> None:
    registry.register(MentionsKind())


def pytest_critic22_register_checks(registry: Any) -> None:
    registry.register(TODO_ADDED)
