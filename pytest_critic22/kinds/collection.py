"""``collection`` — what collects and imports on the base must on the patched tree
(invariant 14); the validator's own procedure, offered to no critic.

The project's test modules are collected (``--collect-only``, sandboxed) on the base and on
the patched tree, and on the patched source under the base's harness when the patch changes
the harness: a module that collects on the base and errors on patched is a verified
regression, named with the first line of its error; so is a pytest that cannot even start
on the patched tree while it starts on the base (a configuration the patch broke). Before
any of that, statically: a source file the patch touches that parsed on the base and no
longer parses is the same defect, whether or not a test imports it.
"""

from __future__ import annotations

import ast
import os
import re
from typing import TYPE_CHECKING, Any

from pytest_critic22.child.protocol import GENERATED_PREFIX
from pytest_critic22.execution.runner import cpu_slot, detect_pythonpath, run_cases
from pytest_critic22.execution.trees import TreeError, Variant
from pytest_critic22.model.procedure import COLLECTION, NotExecutable, Procedure
from pytest_critic22.model.results import Outcome
from pytest_critic22.verification.procedures import (
    ExecutionContext,
    FindingResult,
    Scope,
    read_source,
)

if TYPE_CHECKING:
    from pathlib import Path

    from pytest_critic22.execution.junit import Case
    from pytest_critic22.model.procedure import FindingLike
    from pytest_critic22.model.results import RunResult

__all__ = ["KIND", "CollectionKind", "first_error_line", "parse_regressions"]

_STARTED = (0, 1, 2, 5)  # exit statuses of a pytest that got as far as collecting


class CollectionKind:
    name = COLLECTION
    grammar = ""  # not offered to the critic
    description = "Test modules that collect on the base commit fail to collect with the patch."

    def parse(self, rest: str) -> Procedure | NotExecutable:
        return NotExecutable("collection: is the validator's procedure, not the critic's")

    def validate(self, finding: FindingLike, procedure: Procedure, scope: Scope) -> str | None:
        return None

    def execute(
        self,
        finding_id: str,
        finding: FindingLike | None,
        procedure: Procedure,
        ctx: ExecutionContext,
    ) -> FindingResult:
        return execute_collection(finding_id, ctx)


KIND = CollectionKind()


def execute_collection(group_id: str, ctx: ExecutionContext) -> FindingResult:
    """Collect on the patched tree(s), then, when something there does not collect, on the
    base: a module that only the patch breaks is a verified regression. A patched tree
    where everything collects needs no base run (there is nothing to tell apart)."""
    logs: dict[str, Any] = {"procedure": COLLECTION}
    try:
        base = ctx.trees.get(Variant.base())
        patched = ctx.trees.get(Variant.patched(ctx.patch))
    except TreeError as exc:
        outcome = Outcome("inconclusive", str(exc), environment=True)
        return FindingResult(group_id, outcome, "base", logs)
    found = parse_regressions(ctx, base, patched)
    logs["unparsable"] = found
    trees = [("patched", patched)]
    if ctx.harness:
        from pytest_critic22.verification.harness import base_harness

        try:
            tree = ctx.trees.get(base_harness(ctx.patch, ctx.harness))
            trees.append(("patched source under the base's harness", tree))
        except TreeError as exc:
            logs["base_harness_error"] = str(exc)
    logs["collect"] = collected = {}
    broken: dict[str, dict[str, str]] = {}  # tree label -> module -> error; "" = cannot start
    for label, tree in trees:
        ctx.say(f"collection on the {label} tree")
        run, cases = _collect(ctx, tree)
        collected[label] = run.to_dict()
        if run.exit_code == 5:  # nothing collected: a regression where the base collects
            broken[label] = {"": "pytest collects no test there (exit 5)"}
        elif _started(run):
            broken[label] = _errors(cases, tree)
        else:
            broken[label] = {"": first_error_line(run.output, tree) or run.reason}
    if not any(broken.values()):
        if found:
            return _verified(group_id, found, [], logs)
        outcome = Outcome("refuted", "every test module collects on the patched tree")
        return FindingResult(group_id, outcome, "base", logs)
    ctx.say("collection on the base")
    on_base, base_cases = _collect(ctx, base)
    collected["base"] = on_base.to_dict()
    if on_base.exit_code == 5 or not _started(on_base):
        if found:
            return _verified(group_id, found, [], logs)
        if on_base.exit_code == 5:  # no test on the base: nothing to preserve
            outcome = Outcome("refuted", "no test module collects on the base either")
            return FindingResult(group_id, outcome, "base", logs)
        reason = f"pytest cannot collect the base tree either: {on_base.reason}"
        return FindingResult(group_id, Outcome("inconclusive", reason), "base", logs)
    broken_on_base = _errors(base_cases, base)
    regressions: list[str] = []
    for label, modules in broken.items():
        for module, error in modules.items():
            if not module:
                regressions.append(f"pytest cannot collect the {label} tree: {error}")
            elif module not in broken_on_base and f"{module}: {error}" not in regressions:
                regressions.append(f"{module}: {error}")
    logs["pre_existing"] = sorted(broken_on_base)
    if found or regressions:
        return _verified(group_id, found, regressions, logs)
    pre = ", ".join(sorted(broken_on_base))
    outcome = Outcome(
        "refuted",
        f"what collects on the base collects on patched; failing on "
        f"the base too (pre-existing): {pre}",
    )
    return FindingResult(group_id, outcome, "base", logs)


def _started(run: RunResult) -> bool:
    """Whether pytest got as far as collecting, and said what it found."""
    from pytest_critic22.execution.junit import NO_REPORT

    return run.exit_code in _STARTED and run.reason != NO_REPORT


def _verified(
    group_id: str, unparsable: list[str], regressions: list[str], logs: dict[str, Any]
) -> FindingResult:
    parts = [*unparsable, *regressions]
    shown = "; ".join(parts[:5]) + (f"; and {len(parts) - 5} more" if len(parts) > 5 else "")
    outcome = Outcome("verified", f"collects on the base, not on patched: {shown}")
    return FindingResult(group_id, outcome, "base", logs)


def parse_regressions(ctx: ExecutionContext, base: Path, patched: Path) -> list[str]:
    """The patch's Python files that parse on the base and not on the patched tree, each as
    ``path: SyntaxError: msg (line N)``. Parsing runs no code."""
    out: list[str] = []
    for path in dict.fromkeys(e.new_path for e in ctx.patch.edits if e.new_path):
        if not path.endswith(".py"):
            continue
        before = read_source(base, path)
        after = read_source(patched, path)
        if before is None or after is None or _parse_error(before) is not None:
            continue
        error = _parse_error(after)
        if error is not None:
            out.append(f"{path}: {error}")
    return out


def _parse_error(source: str) -> str | None:
    try:
        ast.parse(source)
    except SyntaxError as exc:
        return f"{type(exc).__name__}: {exc.msg} (line {exc.lineno})"
    except ValueError as exc:  # null bytes
        return f"{type(exc).__name__}: {exc}"
    return None


def _collect(ctx: ExecutionContext, tree: Path) -> tuple[RunResult, list[Case]]:
    with cpu_slot(ctx.slot_dir, ctx.slots):
        return run_cases(
            tree,
            [],
            # The gate's own generated modules are not the project's.
            extra_args=["--collect-only", "-q", f"--ignore-glob=*/{GENERATED_PREFIX}*"],
            timeout=ctx.timeout,
            pythonpath=detect_pythonpath(tree, ctx.pythonpath),
            sandbox=ctx.sandbox,
            scratch=ctx.scratch,
        )


def _errors(cases: list[Case], tree: Path) -> dict[str, str]:
    """Module -> the first line of its collection error."""
    out: dict[str, str] = {}
    for case in cases:
        if case.status != "error":
            continue
        module = case.nodeid or case.key.split("::")[-1].replace(".", "/") + ".py"
        out.setdefault(module, first_error_line(case.text, tree) or "collection failure")
    return out


_E_LINE = re.compile(r"^E\s+(?P<text>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Warning)\b.*)$")
_FILE_LINE = re.compile(r'^E?\s*File "(?P<path>[^"]+)", line (?P<line>\d+)')
_LOOSE = re.compile(r"^(?P<text>[A-Za-z_][\w.]*(?:Error|Exception)\b:.*)$")


def first_error_line(text: str, tree: Path | None = None) -> str:
    """The line that names the error in pytest's report of a collection failure:
    ``SyntaxError: expected ':' (toolz/itertoolz.py, line 1015)``,
    ``ModuleNotFoundError: No module named 'toolz.recipes'``. "" when none does."""
    lines = [ln.rstrip() for ln in text.splitlines()]
    found = ""
    where = ""
    for line in lines:
        located = _FILE_LINE.match(line)
        if located:
            where = f"{_relative(located.group('path'), tree)}, line {located.group('line')}"
        named = _E_LINE.match(line) or _LOOSE.match(line.strip())
        if named:
            found = named.group("text").strip()
    if not found:
        return ""
    if found.startswith(("SyntaxError", "IndentationError", "TabError")) and where:
        found = f"{found} ({where})"
    return found[:300]


def _relative(path: str, tree: Path | None) -> str:
    if tree is None:
        return path
    root = os.path.realpath(tree) + os.sep
    return path[len(root) :] if path.startswith(root) else path
