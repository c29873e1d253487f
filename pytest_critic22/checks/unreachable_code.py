"""The ``unreachable-code`` check: added code that follows a return, raise, continue or break."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import libcst as cst

from pytest_critic22.checks.base import Check, Example, FileChange, Hit
from pytest_critic22.checks.parsing import (
    _Parsed,
    _short,
    _sides,
)


class _BlockCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.blocks: list[Sequence[cst.BaseStatement]] = []

    def visit_Module(self, node: cst.Module) -> bool:
        self.blocks.append(node.body)
        return True

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> bool:
        self.blocks.append(node.body)
        return True


_TERMINATORS = (cst.Return, cst.Raise, cst.Continue, cst.Break)


@dataclass(frozen=True, slots=True)
class _DeadCode:
    terminator: cst.BaseSmallStatement
    terminator_line: int
    following: Sequence[cst.BaseStatement]


def _dead_code(parsed: _Parsed) -> list[_DeadCode]:
    collector = _BlockCollector()
    parsed.module.visit(collector)
    found: list[_DeadCode] = []
    for block in collector.blocks:
        for index, statement in enumerate(block[:-1]):
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            ends = [small for small in statement.body if isinstance(small, _TERMINATORS)]
            if ends:
                found.append(_DeadCode(ends[0], parsed.line(ends[0]), block[index + 1 :]))
                break
    return found


def _run_unreachable_code(
    changes: Sequence[FileChange], args: tuple[str, ...], repo_sources: Mapping[str, str]
) -> list[Hit]:
    hits: list[Hit] = []
    for change, base, patched in _sides(changes):
        if patched is None:
            continue
        already = (
            {
                (base.function_at(dead.terminator_line), base.code(dead.terminator))
                for dead in _dead_code(base)
            }
            if base is not None
            else set()
        )
        for dead in _dead_code(patched):
            term = patched.code(dead.terminator)
            if (patched.function_at(dead.terminator_line), term) in already:
                continue
            line: int | None = None
            if dead.terminator_line in change.added_lines:
                line = patched.line(dead.following[0])
            else:
                for statement in dead.following:
                    added = sorted(set(patched.span(statement)) & change.added_lines)
                    if added:
                        line = added[0]
                        break
            if line is None:
                continue
            hits.append(
                Hit(
                    "unreachable-code",
                    change.path,
                    line,
                    f"the statement on line {line} follows `{_short(term, 40)}` on line "
                    f"{dead.terminator_line} in the same block and can never run",
                )
            )
    return hits


# --- the check and its examples --------------------------------------------------------------

_UNREACHABLE_CODE = Check(
    name="unreachable-code",
    description="an added statement after a return/raise/continue/break in the same block, or "
    "an added terminator before old code",
    run=_run_unreachable_code,
    valid=(
        Example(
            base="""\
def mean(values):
    return sum(values) / len(values)
""",
            patched="""\
def mean(values):
    if not values:
        return 0.0
    return sum(values) / len(values)
""",
        ),
        Example(
            base="""\
def first_even(values):
    for value in values:
        if value % 2 == 0:
            return value
""",
            patched="""\
def first_even(values):
    for value in values:
        if value % 2 == 0:
            return value
    return None
""",
        ),
    ),
    invalid=(
        Example(
            base="""\
def save(record, store):
    store.write(record)
    return True
""",
            patched="""\
def save(record, store):
    store.write(record)
    return True
    store.flush()
""",
        ),
        Example(
            base="""\
def process(queue):
    for job in queue:
        job.run()
        job.done = True
""",
            patched="""\
def process(queue):
    for job in queue:
        continue
        job.run()
        job.done = True
""",
        ),
        Example(
            base="""\
def parse(text):
    value = int(text)
    return value
""",
            patched="""\
def parse(text):
    raise NotImplementedError
    value = int(text)
    return value
""",
        ),
    ),
)
