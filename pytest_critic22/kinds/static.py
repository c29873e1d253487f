"""``static:`` — a named deterministic check over the located edit's base and patched sources.

    static:          CHECK [ARG ...]

Verified when the edit introduces a hit. The checks are :mod:`pytest_critic22.checks` plus
what plugins register (``pytest_critic22_register_checks``), and ``type-errors``
(differential mypy). The prompt lists every check of the run with its description.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_critic22.execution.runner import detect_pythonpath
from pytest_critic22.execution.trees import TreeError, TreeSet, Variant
from pytest_critic22.model.procedure import NotExecutable, Procedure, StaticData
from pytest_critic22.model.results import Outcome
from pytest_critic22.verification.procedures import (
    ExecutionContext,
    FindingResult,
    Scope,
    located_edits,
    read_source,
)

if TYPE_CHECKING:
    from pytest_critic22.model.patch import ParsedPatch
    from pytest_critic22.model.procedure import FindingLike

__all__ = ["KIND", "TYPE_ERRORS", "StaticData", "StaticKind", "check_lines"]

TYPE_ERRORS = "type-errors"
_TYPE_ERRORS_HELP = "errors mypy reports on the edit's added lines that the base does not have"


GRAMMAR = """\
  static:          CHECK [ARG ...]  a named deterministic check over the located edit's base and
                   patched sources; verified when the edit introduces a hit. The checks of this
                   run:
{checks}
                   Example: static: signature-changed pkg.mod.parse
"""


def check_lines(registry: Any) -> list[str]:
    """One prompt line per check of the run: its name and description."""
    lines = []
    for name in sorted([*registry.names(), TYPE_ERRORS]):
        check = registry.get(name)
        description = check.description if check is not None else _TYPE_ERRORS_HELP
        lines.append(f"                     {name}: {description}")
    return lines


class StaticKind:
    name = "static"

    grammar = GRAMMAR
    description = "A deterministic check of the source finds a defect that the edit introduces."

    def parse(self, rest: str) -> Procedure | NotExecutable:
        words = rest.split()
        if not words:
            return NotExecutable("static: names no check", "static")
        return Procedure("static", StaticData(words[0], tuple(words[1:])))

    def validate(self, finding: FindingLike, procedure: Procedure, scope: Scope) -> str | None:
        return static_reason(finding, procedure, scope.patch, scope.trees, scope.checks)

    def execute(
        self,
        finding_id: str,
        finding: FindingLike | None,
        procedure: Procedure,
        ctx: ExecutionContext,
    ) -> FindingResult:
        assert finding is not None
        return execute_static(finding_id, finding, procedure, ctx, ctx.checks)


KIND = StaticKind()


def static_inputs(
    finding: FindingLike, patch: ParsedPatch, base: Path, patched: Path
) -> tuple[list[Any], dict[str, str]]:
    """The located edit(s) as FileChanges, and every Python source of the patched tree."""
    from pytest_critic22.checks import FileChange
    from pytest_critic22.evidence.gather import python_files

    grouped: dict[str, dict[str, Any]] = {}
    for edit in located_edits(finding, patch):
        entry = grouped.setdefault(
            edit.path,
            {"old": edit.old_path, "new": edit.new_path, "added": set(), "removed": set()},
        )
        entry["added"].update(edit.added_lines)
        entry["removed"].update(edit.removed_lines)
    changes = []
    for path, entry in grouped.items():
        changes.append(
            FileChange(
                path=path,
                base_source=read_source(base, entry["old"]),
                patched_source=read_source(patched, entry["new"]),
                added_lines=frozenset(entry["added"]),
                removed_lines=frozenset(entry["removed"]),
            )
        )
    sources = {
        p: text for p in python_files(patched) if (text := read_source(patched, p)) is not None
    }
    return changes, sources


def static_reason(
    finding: FindingLike, procedure: Procedure, patch: ParsedPatch, trees: TreeSet, registry: Any
) -> str | None:
    """Why a ``static:`` procedure cannot run on this patch (None: it can)."""
    from pytest_critic22.checks import not_executable_reason

    data = procedure.payload(StaticData)
    if data.check == TYPE_ERRORS:
        import importlib.util

        if importlib.util.find_spec("mypy") is None:
            return "static: type-errors needs mypy, which is not installed"
        return None if not data.args else "static: type-errors takes no arguments"
    if registry.get(data.check) is None:
        known = ", ".join(sorted([*registry.names(), TYPE_ERRORS]))
        return f"static: unknown check {data.check!r} (known: {known})"
    try:
        base = trees.get(Variant.base())
        patched = trees.get(Variant.patched(patch))
    except TreeError as exc:
        return f"static: {exc}"
    changes, sources = static_inputs(finding, patch, base, patched)
    reason = not_executable_reason(data.check, data.args, changes, sources, registry)
    return f"static: {reason}" if reason else None


def execute_static(
    finding_id: str,
    finding: FindingLike,
    procedure: Procedure,
    ctx: ExecutionContext,
    registry: Any,
) -> FindingResult:
    from pytest_critic22.checks import run_check

    data = procedure.payload(StaticData)
    logs: dict[str, Any] = {"procedure": "static", "check": data.check}
    try:
        base = ctx.trees.get(Variant.base())
        patched = ctx.trees.get(Variant.patched(ctx.patch))
    except TreeError as exc:
        return FindingResult(finding_id, Outcome("inconclusive", str(exc)), "base", logs)
    changes, sources = static_inputs(finding, ctx.patch, base, patched)
    if data.check == TYPE_ERRORS:
        hits, error = _type_errors(ctx, changes, base, patched)
        if error:
            logs["error"] = error
            return FindingResult(finding_id, Outcome("inconclusive", error), "base", logs)
    else:
        ctx.say(data.check)
        hits = [
            f"{h.path}:{h.line}: {h.message}"
            for h in run_check(data.check, data.args, changes, sources, registry)
        ]
    logs["hits"] = hits
    if hits:
        outcome = Outcome(
            "verified",
            f"{data.check} reports {len(hits)} hit(s) the located edit introduces: "
            + "; ".join(hits[:5]),
        )
    else:
        outcome = Outcome("refuted", f"{data.check} finds nothing the located edit introduces")
    return FindingResult(finding_id, outcome, "base", logs)


_MYPY_LINE = re.compile(r"^(?P<path>[^:\n]+\.py):(?P<line>\d+): error: (?P<msg>.*)$")


def _type_errors(
    ctx: ExecutionContext, changes: Sequence[Any], base: Path, patched: Path
) -> tuple[list[str], str]:
    """Differential mypy: errors on patched at the edit's lines that base does not have."""
    from pytest_critic22.execution.runner import spawn_python

    def errors(tree: Path, files: list[str]) -> tuple[list[tuple[str, int, str]], str]:
        if not files:
            return [], ""
        code, out, _ = spawn_python(
            tree,
            [
                "-m",
                "mypy",
                "--no-incremental",
                "--cache-dir=/dev/null",
                "--follow-imports=silent",
                "--ignore-missing-imports",
                "--no-error-summary",
                "--no-pretty",
                "--show-error-codes",
                *files,
            ],
            timeout=ctx.timeout,
            pythonpath=detect_pythonpath(tree, ctx.pythonpath),
            sandbox=ctx.sandbox,
            scratch=ctx.scratch,
        )
        if code is None:
            return [], "type-errors: mypy timed out"
        if code not in (0, 1):
            return [], f"type-errors: mypy failed ({code}): {out.strip().splitlines()[-1:]}"
        found = []
        for line in out.splitlines():
            match = _MYPY_LINE.match(line.strip())
            if match:
                found.append((match["path"], int(match["line"]), match["msg"]))
        return found, ""

    patched_files = [c.path for c in changes if c.patched_source is not None]
    base_files = [c.path for c in changes if c.base_source is not None]
    ctx.say(f"{TYPE_ERRORS}: mypy on patched")
    after, error = errors(patched, patched_files)
    if error:
        return [], error
    ctx.say(f"{TYPE_ERRORS}: mypy on base")
    before, error = errors(base, base_files)
    if error:
        return [], error
    known = {(path, msg) for path, _, msg in before}
    added = {c.path: c.added_lines for c in changes}
    return [
        f"{path}:{line}: {msg}"
        for path, line, msg in after
        if line in added.get(path, frozenset()) and (path, msg) not in known
    ], ""
