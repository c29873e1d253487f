"""Static checks: what a finding's ``static: CHECK [ARG ...]`` falsification runs.

A check reads the base and patched sources of the files a located edit changes (plus every ``.py``
file of the patched tree) and reports hits. Every check is *differential*: a hit is attributable to
lines the edit adds (patched side) or removes (base side), and a property the base already had is
never reported, so a hit is evidence against the patch and not against the repository. A file that
does not parse on a side it exists on yields no hit: a differential judgement needs both sides.

This module is pure (standard library and libcst only, no I/O); the registry is the one mutable
piece, so plugins can add checks.
"""

from __future__ import annotations

import ast
import difflib
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider, ScopeProvider

__all__ = [
    "REGISTRY",
    "Check",
    "CheckRegistry",
    "Example",
    "FileChange",
    "Hit",
    "changes_from_sources",
    "example_change",
    "not_executable_reason",
    "run_check",
    "run_example",
]


@dataclass(frozen=True, slots=True)
class Hit:
    check: str
    path: str  # repo-relative file path
    line: int  # 1-based, patched file; base file for removals (the message says "base line")
    message: str


@dataclass(frozen=True, slots=True)
class FileChange:
    path: str  # repo-relative, e.g. "pkg/mod.py"
    base_source: str | None  # None when the patch creates the file
    patched_source: str | None  # None when the patch deletes the file
    added_lines: frozenset[int]  # 1-based patched-file lines the located edit(s) add
    removed_lines: frozenset[int]  # 1-based base-file lines the located edit(s) remove


@dataclass(frozen=True, slots=True)
class Example:
    """A check's own example: base and patched source of one file ``mod.py``.

    The changed lines come from a difflib diff of the two (see ``example_change``); ``repo`` holds
    the other files of the patched repository.
    """

    base: str
    patched: str
    args: tuple[str, ...] = ()
    repo: Mapping[str, str] = field(default_factory=dict)


CheckRun = Callable[[Sequence[FileChange], tuple[str, ...], Mapping[str, str]], list[Hit]]
ArgsValidator = Callable[[tuple[str, ...], Sequence[FileChange], Mapping[str, str]], str | None]


def _takes_no_arguments(
    args: tuple[str, ...], changes: Sequence[FileChange], repo_sources: Mapping[str, str]
) -> str | None:
    # Strict on purpose: an argument the check would silently ignore suggests the critic expects
    # a narrower claim than the one that would be judged.
    if args:
        return f"the check takes no arguments (got {' '.join(args)!r})"
    return None


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    description: str  # one line
    run: CheckRun  # (changes of the located edit(s), args, every .py file of the patched tree)
    valid: tuple[Example, ...]  # examples where the check must report no hit
    invalid: tuple[Example, ...]  # examples where it must report at least one hit
    validate_args: ArgsValidator = _takes_no_arguments  # None, or why the args are unusable


class CheckRegistry:
    """Checks by name; plugins may register more."""

    def __init__(self) -> None:
        self._checks: dict[str, Check] = {}

    def register(self, check: Check) -> None:
        # The falsification grammar splits on whitespace, so such a name could never be invoked.
        if not check.name or any(ch.isspace() for ch in check.name):
            raise ValueError(f"check name must be one non-empty word, got {check.name!r}")
        if check.name in self._checks:
            raise ValueError(f"a static check named {check.name!r} is already registered")
        self._checks[check.name] = check

    def get(self, name: str) -> Check | None:
        return self._checks.get(name)

    def names(self) -> list[str]:
        return sorted(self._checks)


#: The built-in checks (registered at the end of this module) and any a plugin adds.
REGISTRY = CheckRegistry()


def run_check(
    name: str,
    args: tuple[str, ...],
    changes: Sequence[FileChange],
    repo_sources: Mapping[str, str],
    registry: CheckRegistry = REGISTRY,
) -> list[Hit]:
    """Run one check; hits are deduplicated and sorted by (path, line, message).

    Raises KeyError for an unknown check. Arguments are not validated here: ask
    ``not_executable_reason`` first.
    """
    check = registry.get(name)
    if check is None:
        raise KeyError(name)
    hits = set(check.run(changes, args, repo_sources))
    return sorted(hits, key=lambda hit: (hit.path, hit.line, hit.message, hit.check))


def not_executable_reason(
    name: str,
    args: tuple[str, ...],
    changes: Sequence[FileChange],
    repo_sources: Mapping[str, str],
    registry: CheckRegistry = REGISTRY,
) -> str | None:
    """Why ``static: name args`` cannot be run on these changes, or None when it can."""
    check = registry.get(name)
    if check is None:
        return f"unknown static check {name!r} (known: {', '.join(registry.names())})"
    return check.validate_args(args, changes, repo_sources)


def changes_from_sources(path: str, base: str | None, patched: str | None) -> FileChange:
    """The change of one file with its added and removed lines computed by difflib."""
    old = _lines(base) if base is not None else []
    new = _lines(patched) if patched is not None else []
    added: set[int] = set()
    removed: set[int] = set()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            removed.update(range(i1 + 1, i2 + 1))
        if tag in ("replace", "insert"):
            added.update(range(j1 + 1, j2 + 1))
    return FileChange(path, base, patched, frozenset(added), frozenset(removed))


def example_change(example: Example) -> FileChange:
    return changes_from_sources(_EXAMPLE_PATH, example.base, example.patched)


def run_example(check: Check, example: Example) -> list[Hit]:
    """Run a check on one of its examples, the patched ``mod.py`` included in the repository."""
    repo = {**example.repo, _EXAMPLE_PATH: example.patched}
    hits = set(check.run([example_change(example)], example.args, repo))
    return sorted(hits, key=lambda hit: (hit.path, hit.line, hit.message, hit.check))


_EXAMPLE_PATH = "mod.py"


def _lines(source: str) -> list[str]:
    # Python's own line breaks only: str.splitlines would also split on form feeds and other
    # separators and shift every line number after them.
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


# --- parsing --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Function:
    qualname: str  # Class.method, outer.inner
    node: cst.FunctionDef
    first: int  # first line, decorators included
    def_line: int
    header_end: int  # last line of the signature
    last: int

    @property
    def span(self) -> frozenset[int]:
        return frozenset(range(self.first, self.last + 1))

    @property
    def header(self) -> range:
        return range(self.def_line, self.header_end + 1)


@dataclass(frozen=True, slots=True)
class _Parsed:
    wrapper: MetadataWrapper
    positions: Mapping[cst.CSTNode, CodeRange]
    functions: Mapping[str, _Function]

    @property
    def module(self) -> cst.Module:
        return self.wrapper.module

    def line(self, node: cst.CSTNode) -> int:
        return self.positions[node].start.line

    def span(self, node: cst.CSTNode) -> range:
        where = self.positions[node]
        return range(where.start.line, where.end.line + 1)

    def code(self, node: cst.CSTNode) -> str:
        return _normalize(self.module.code_for_node(node))

    def function_at(self, line: int) -> str:
        """The qualified name of the innermost function holding ``line``; "" for module level."""
        best: _Function | None = None
        for function in self.functions.values():
            if function.first <= line <= function.last and (
                best is None or function.first >= best.first
            ):
                best = function
        return best.qualname if best is not None else ""


def _normalize(code: str) -> str:
    # Compared texts must survive re-indentation and comment edits, which diffs show as changes.
    kept = []
    for raw in code.splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            kept.append(" ".join(line.split()))
    return "\n".join(kept)


@functools.lru_cache(maxsize=64)
def _parse(source: str) -> _Parsed | None:
    try:
        wrapper = MetadataWrapper(cst.parse_module(source))
        positions = wrapper.resolve(PositionProvider)
    except Exception:  # why: the code under review is arbitrary; unreadable means "no evidence"
        return None
    indexer = _FunctionIndexer()
    wrapper.module.visit(indexer)
    functions: dict[str, _Function] = {}
    for qualname, node in indexer.found:
        where = positions[node]
        first = min([positions[d].start.line for d in node.decorators] + [where.start.line])
        header_end = where.start.line
        if isinstance(node.body, cst.IndentedBlock) and node.body.body:
            header_end = max(header_end, positions[node.body.body[0]].start.line - 1)
        # A redefinition wins, as at runtime (an @overload stub is followed by the real body).
        functions[qualname] = _Function(
            qualname, node, first, positions[node.name].start.line, header_end, where.end.line
        )
    return _Parsed(wrapper, positions, functions)


def _ast_parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


class _FunctionIndexer(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.found: list[tuple[str, cst.FunctionDef]] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.stack.append(node.name.value)
        return True

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.stack.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.stack.append(node.name.value)
        self.found.append((".".join(self.stack), node))
        return True

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.stack.pop()


def _own_nodes(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Descendants of ``root`` outside nested defs and classes, which are judged on their own."""
    stack = list(root.children)
    while stack:
        node = stack.pop()
        if isinstance(node, cst.FunctionDef | cst.ClassDef):
            continue
        yield node
        stack.extend(node.children)


def _sides(
    changes: Sequence[FileChange],
) -> Iterator[tuple[FileChange, _Parsed | None, _Parsed | None]]:
    """Python files with both existing sides parsed; None stands for a side that does not exist."""
    for change in changes:
        if not change.path.endswith(".py"):
            continue
        base = _parse(change.base_source) if change.base_source is not None else None
        patched = _parse(change.patched_source) if change.patched_source is not None else None
        if (change.base_source is not None and base is None) or (
            change.patched_source is not None and patched is None
        ):
            continue
        yield change, base, patched


def _callee_name(func: cst.BaseExpression) -> str:
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return ""


def _module_parts(path: str) -> list[str]:
    parts = path[: -len(".py")].split("/") if path.endswith(".py") else path.split("/")
    return parts[:-1] if parts and parts[-1] == "__init__" else parts


def _is_suffix(short: Sequence[str], long: Sequence[str]) -> bool:
    return 0 < len(short) <= len(long) and list(long[len(long) - len(short) :]) == list(short)


def _names_in_module(arg: str, name: str, path: str) -> bool:
    """Whether the critic's ``arg`` names ``name`` (a qualified name) defined in ``path``.

    Accepted spellings: ``name``, its last component, ``pkg.mod.name`` (module named by a suffix
    of its path, so ``src/`` layouts work) and ``pkg/mod.py::name``.
    """
    if "::" in arg:
        where, _, rest = arg.partition("::")
        in_file = where == path or path.endswith("/" + where)
        return in_file and "::" not in rest and rest in (name, name.rsplit(".", 1)[-1])
    if arg in (name, name.rsplit(".", 1)[-1]):
        return True
    if arg.endswith("." + name):
        return _is_suffix(arg[: -len(name) - 1].split("."), _module_parts(path))
    return False


def _short(code: str, limit: int = 60) -> str:
    flat = " ".join(code.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


# --- removed-guard --------------------------------------------------------------------------

_GUARD_CALLS = frozenset({"isinstance", "issubclass", "callable", "hasattr"})


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _is_guard_test(test: cst.BaseExpression) -> bool:
    """None checks, falsy/truthy checks and type checks, alone or combined with and/or."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return True
    if isinstance(test, cst.BooleanOperation):
        return _is_guard_test(test.left) or _is_guard_test(test.right)
    if isinstance(test, cst.Comparison):
        return any(
            isinstance(target.operator, cst.Is | cst.IsNot | cst.Equal | cst.NotEqual)
            and (_is_none(target.comparator) or _is_none(test.left))
            for target in test.comparisons
        )
    if isinstance(test, cst.Call):
        return _callee_name(test.func) in _GUARD_CALLS
    return isinstance(test, cst.Name | cst.Attribute | cst.Subscript)


def _simple_statements(body: cst.BaseSuite) -> list[cst.BaseSmallStatement]:
    """The simple statements directly in a block (not in nested compound statements)."""
    if isinstance(body, cst.SimpleStatementSuite):
        return list(body.body)
    return [
        small
        for statement in body.body
        if isinstance(statement, cst.SimpleStatementLine)
        for small in statement.body
    ]


def _exits_early(body: cst.BaseSuite) -> bool:
    smalls = _simple_statements(body)
    return any(isinstance(small, cst.Return | cst.Raise | cst.Continue) for small in smalls)


def _is_normalising_test(test: cst.BaseExpression) -> bool:
    """``x is None``, ``x == None``, ``not x`` and type checks: true when ``x`` needs fixing up.

    Narrower than ``_is_guard_test``: ``if x: x = x.strip()`` transforms a good value, it does
    not stand in for a missing one.
    """
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return True
    if isinstance(test, cst.BooleanOperation):
        return _is_normalising_test(test.left) or _is_normalising_test(test.right)
    if isinstance(test, cst.Comparison):
        return any(
            isinstance(target.operator, cst.Is | cst.Equal)
            and (_is_none(target.comparator) or _is_none(test.left))
            for target in test.comparisons
        )
    if isinstance(test, cst.Call):
        return _callee_name(test.func) in _GUARD_CALLS
    return False


def _mentions(parsed: _Parsed, expr: cst.BaseExpression) -> set[str]:
    return {
        parsed.code(node)
        for node in _all_nodes(expr)
        if isinstance(node, cst.Name | cst.Attribute) and not _is_none(node)
    }


def _normalised(parsed: _Parsed, node: cst.CSTNode) -> str | None:
    """The variable a None/falsy normalisation guard fixes up, or None for any other node.

    The guard has no early exit, it replaces a missing value: ``if x is None: x = {}``,
    ``x = x or {}``, ``x = {} if x is None else x`` (``x`` a name or an attribute).
    """
    if isinstance(node, cst.If):
        if not _is_normalising_test(node.test) or node.orelse is not None:
            return None
        tested = _mentions(parsed, node.test)
        for small in _simple_statements(node.body):
            targets: list[cst.BaseExpression] = []
            if isinstance(small, cst.Assign):
                targets = [target.target for target in small.targets]
            elif isinstance(small, cst.AnnAssign) and small.value is not None:
                targets = [small.target]
            for target in targets:
                if parsed.code(target) in tested:
                    return parsed.code(target)
        return None
    if isinstance(node, cst.Assign) and len(node.targets) == 1:
        target, value = node.targets[0].target, node.value
    elif isinstance(node, cst.AnnAssign) and node.value is not None:
        target, value = node.target, node.value
    else:
        return None
    if not isinstance(target, cst.Name | cst.Attribute):
        return None
    name = parsed.code(target)
    # Anywhere in the value: `x = (x or "").strip()` normalises `x` too.
    for part in _all_nodes(value):
        if (
            isinstance(part, cst.BooleanOperation)
            and isinstance(part.operator, cst.Or)
            and parsed.code(part.left) == name
        ):
            return name
        if (
            isinstance(part, cst.IfExp)
            and _is_guard_test(part.test)
            and name in _mentions(parsed, part.test)
            and name in (parsed.code(part.body), parsed.code(part.orelse))
        ):
            return name
    return None


def _exit_key(parsed: _Parsed, node: cst.Return | cst.Raise) -> str:
    # A reworded exception message keeps the guard; only the raised type identifies it.
    if isinstance(node, cst.Raise) and node.exc is not None:
        exc = node.exc.func if isinstance(node.exc, cst.Call) else node.exc
        return "raise " + parsed.code(exc)
    return parsed.code(node)


def _final_returns(function: cst.FunctionDef) -> set[cst.CSTNode]:
    body = function.body
    if not isinstance(body, cst.IndentedBlock) or not body.body:
        return set()
    last = body.body[-1]
    if not isinstance(last, cst.SimpleStatementLine):
        return set()
    return {small for small in last.body if isinstance(small, cst.Return)}


def _run_removed_guard(
    changes: Sequence[FileChange], args: tuple[str, ...], repo_sources: Mapping[str, str]
) -> list[Hit]:
    hits: list[Hit] = []
    for change, base, patched in _sides(changes):
        if base is None or patched is None:
            continue  # a created or deleted file has no function on both sides
        for qualname, old in base.functions.items():
            new = patched.functions.get(qualname)
            if new is None or not old.span & change.removed_lines:
                continue
            new_nodes = list(_own_nodes(new.node.body))
            kept_tests = {patched.code(n.test) for n in new_nodes if isinstance(n, cst.If)}
            kept_exits = {
                _exit_key(patched, n) for n in new_nodes if isinstance(n, cst.Return | cst.Raise)
            }
            # A normalisation guard is kept when the variable is still fixed up, in any of the
            # three spellings: `x = x or {}` may become `if x is None: x = {}`.
            kept_normalised = {_normalised(patched, n) for n in new_nodes} - {None}
            old_nodes = sorted(_own_nodes(old.node.body), key=base.line)
            reported: list[range] = []
            for node in old_nodes:
                if base.line(node) not in change.removed_lines:
                    continue
                variable = _normalised(base, node)
                if variable is not None and variable in kept_normalised:
                    continue
                if isinstance(node, cst.Assign | cst.AnnAssign) and variable is not None:
                    reported.append(base.span(node))
                    hits.append(
                        Hit(
                            "removed-guard",
                            change.path,
                            base.line(node),
                            f"the guard `{_short(base.code(node))}` of '{qualname}' (base line "
                            f"{base.line(node)}) is removed by the edit and absent from the "
                            "patched function",
                        )
                    )
                elif (
                    isinstance(node, cst.If)
                    and _is_guard_test(node.test)
                    and (_exits_early(node.body) or variable is not None)
                    and base.code(node.test) not in kept_tests
                ):
                    reported.append(base.span(node))
                    hits.append(
                        Hit(
                            "removed-guard",
                            change.path,
                            base.line(node),
                            f"the guard `if {_short(base.code(node.test))}:` of '{qualname}' "
                            f"(base line {base.line(node)}) is removed by the edit and absent "
                            "from the patched function",
                        )
                    )
            final = _final_returns(old.node)
            for node in old_nodes:
                if not isinstance(node, cst.Return | cst.Raise) or node in final:
                    continue
                line = base.line(node)
                if line not in change.removed_lines or any(line in span for span in reported):
                    continue
                if _exit_key(base, node) in kept_exits:
                    continue
                what = "early return" if isinstance(node, cst.Return) else "raise"
                hits.append(
                    Hit(
                        "removed-guard",
                        change.path,
                        line,
                        f"the {what} `{_short(base.code(node))}` of '{qualname}' "
                        f"(base line {line}) is removed by the edit and absent from the patched "
                        "function",
                    )
                )
    return hits


# --- swallowed-exception --------------------------------------------------------------------

_BROAD = frozenset({"Exception", "BaseException"})

#: A call whose function name contains one of these makes the failure visible: logging,
#: warnings, printing, tracebacks, error reporting, or ending the program or test.
_VISIBLE_WORDS = (
    "log",
    "warn",
    "error",
    "exception",
    "critical",
    "fatal",
    "print",
    "traceback",
    "report",
    "exit",
    "abort",
    "fail",
)


def _is_broad(kind: cst.BaseExpression | None) -> bool:
    if kind is None:
        return True
    if isinstance(kind, cst.Tuple):
        return any(_is_broad(element.value) for element in kind.elements)
    return isinstance(kind, cst.Name | cst.Attribute) and _callee_name(kind) in _BROAD


def _swallows(handler: cst.ExceptHandler | cst.ExceptStarHandler) -> bool:
    if not _is_broad(handler.type):
        return False
    bound = (
        handler.name.name.value
        if handler.name is not None and isinstance(handler.name.name, cst.Name)
        else None
    )
    for node in _own_nodes(handler.body):
        if isinstance(node, cst.Raise):
            return False
        if isinstance(node, cst.Call):
            name = _callee_name(node.func).lower()
            if any(word in name for word in _VISIBLE_WORDS):
                return False
        # Using the bound exception hands it on as a value (stored, returned, wrapped).
        if bound is not None and isinstance(node, cst.Name) and node.value == bound:
            return False
    return True


def _swallowing_handlers(
    parsed: _Parsed,
) -> Iterator[cst.ExceptHandler | cst.ExceptStarHandler]:
    for node in _all_nodes(parsed.module):
        if isinstance(node, cst.ExceptHandler | cst.ExceptStarHandler) and _swallows(node):
            yield node


def _all_nodes(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children)


def _run_swallowed_exception(
    changes: Sequence[FileChange], args: tuple[str, ...], repo_sources: Mapping[str, str]
) -> list[Hit]:
    hits: list[Hit] = []
    for change, base, patched in _sides(changes):
        if patched is None:
            continue
        already = (
            {(base.function_at(base.line(h)), base.code(h)) for h in _swallowing_handlers(base)}
            if base is not None
            else set()
        )
        for handler in _swallowing_handlers(patched):
            added = sorted(set(patched.span(handler)) & change.added_lines)
            where = patched.function_at(patched.line(handler))
            if not added or (where, patched.code(handler)) in already:
                continue
            clause = "except:" if handler.type is None else f"except {patched.code(handler.type)}:"
            hits.append(
                Hit(
                    "swallowed-exception",
                    change.path,
                    added[0],
                    f"the handler `{_short(clause)}` on line {patched.line(handler)} "
                    f"in '{where or '<module>'}' swallows every exception: it neither re-raises, "
                    "logs, nor uses the exception",
                )
            )
    return hits


# --- signature-changed ----------------------------------------------------------------------

_POSITIONAL = ("positional-only", "positional")


@dataclass(frozen=True, slots=True)
class _Param:
    name: str
    kind: str  # positional-only, positional, var-positional, keyword-only, var-keyword
    default: str | None


def _params(parsed: _Parsed, function: cst.FunctionDef) -> list[_Param]:
    params = function.params

    def one(param: cst.Param, kind: str) -> _Param:
        default = parsed.code(param.default) if param.default is not None else None
        return _Param(param.name.value, kind, default)

    found = [one(p, "positional-only") for p in params.posonly_params]
    found += [one(p, "positional") for p in params.params]
    if isinstance(params.star_arg, cst.Param):
        found.append(one(params.star_arg, "var-positional"))
    found += [one(p, "keyword-only") for p in params.kwonly_params]
    if params.star_kwarg is not None:
        found.append(one(params.star_kwarg, "var-keyword"))
    return found


#: Kind changes every existing call survives.
_COMPATIBLE_KINDS = frozenset({("positional-only", "positional"), ("keyword-only", "positional")})


def _signature_problems(old: list[_Param], new: list[_Param]) -> list[str]:
    old_by = {p.name: p for p in old}
    new_by = {p.name: p for p in new}
    old_pos = [p.name for p in old if p.kind in _POSITIONAL]
    new_pos = [p.name for p in new if p.kind in _POSITIONAL]
    problems: list[str] = []
    renamed_to: set[str] = set()
    lost = False
    for p in old:
        q = new_by.get(p.name)
        if q is None:
            lost = True
            index = old_pos.index(p.name) if p.name in old_pos else -1
            if 0 <= index < len(new_pos) and new_pos[index] not in old_by:
                renamed_to.add(new_pos[index])
                problems.append(f"'{p.name}' renamed to '{new_pos[index]}'")
            else:
                problems.append(f"'{p.name}' removed")
            continue
        if p.kind != q.kind and (p.kind, q.kind) not in _COMPATIBLE_KINDS:
            problems.append(f"'{p.name}' made {q.kind}")
        if p.default is not None and q.default != p.default:
            problems.append(
                f"'{p.name}' lost its default `{_short(p.default, 30)}`"
                if q.default is None
                else f"default of '{p.name}' changed from `{_short(p.default, 30)}` "
                f"to `{_short(q.default, 30)}`"
            )
    common_old = [n for n in old_pos if n in new_pos]
    common_new = [n for n in new_pos if n in old_pos]
    if common_old != common_new:
        problems.append(
            f"positional parameters reordered ({', '.join(common_old)} -> {', '.join(common_new)})"
        )
    elif not lost:
        for name in common_old:
            before, after = old_pos.index(name), new_pos.index(name)
            if before != after:
                problems.append(f"'{name}' moved from position {before + 1} to {after + 1}")
                break
    for q in new:
        if (
            q.name not in old_by
            and q.name not in renamed_to
            and q.default is None
            and q.kind in ("positional-only", "positional", "keyword-only")
        ):
            problems.append(f"new required parameter '{q.name}'")
    return problems


def _call_names(qualname: str) -> frozenset[str]:
    parts = qualname.split(".")
    if parts[-1] in ("__init__", "__new__"):
        return frozenset(parts[-2:-1])  # constructing the class calls it
    if parts[-1].startswith("__") and parts[-1].endswith("__"):
        return frozenset()  # protocols and operators call these, never a visible call site
    return frozenset(parts[-1:])


def _callers(
    repo_sources: Mapping[str, str], names: frozenset[str], own_path: str, own_lines: range
) -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    for path in sorted(repo_sources):
        index = _index(path, repo_sources[path]) if names else None
        if index is None:
            continue
        for name in names:
            found += [
                (path, line)
                for line in index.calls.get(name, ())
                if not (path == own_path and line in own_lines)
            ]
    return sorted(found)


def _touched_functions(changes: Sequence[FileChange]) -> list[tuple[str, str]]:
    touched: list[tuple[str, str]] = []
    for change, base, patched in _sides(changes):
        for parsed, lines in ((base, change.removed_lines), (patched, change.added_lines)):
            if parsed is None:
                continue
            for qualname, function in parsed.functions.items():
                if function.span & lines:
                    touched.append((change.path, qualname))
    return touched


def _validate_signature_changed(
    args: tuple[str, ...], changes: Sequence[FileChange], repo_sources: Mapping[str, str]
) -> str | None:
    if len(args) > 1:
        return (
            f"the check takes at most one argument, a function's qualified name (got {len(args)})"
        )
    if args and not any(_names_in_module(args[0], q, p) for p, q in _touched_functions(changes)):
        return f"argument {args[0]!r} names no function the edit touches"
    return None


def _run_signature_changed(
    changes: Sequence[FileChange], args: tuple[str, ...], repo_sources: Mapping[str, str]
) -> list[Hit]:
    hits: list[Hit] = []
    for change, base, patched in _sides(changes):
        if base is None or patched is None:
            continue
        for qualname, new in patched.functions.items():
            old = base.functions.get(qualname)
            if old is None or (args and not _names_in_module(args[0], qualname, change.path)):
                continue
            if not (old.span & change.removed_lines or new.span & change.added_lines):
                continue
            problems = _signature_problems(_params(base, old.node), _params(patched, new.node))
            if not problems:
                continue
            own = range(new.first, new.last + 1)
            callers = _callers(repo_sources, _call_names(qualname), change.path, own)
            if not callers:
                continue
            header_added = sorted(set(new.header) & change.added_lines)
            path, line = callers[0]
            more = f" and {len(callers) - 1} more" if len(callers) > 1 else ""
            hits.append(
                Hit(
                    "signature-changed",
                    change.path,
                    header_added[0] if header_added else new.def_line,
                    f"the signature of '{qualname}' changed ({'; '.join(problems)}) while it is "
                    f"still called at {path}:{line}{more}",
                )
            )
    return hits


# --- removed-symbol -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Symbol:
    name: str
    kind: str  # function, class, name
    line: int


def _target_names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, cst.Tuple | cst.List):
        return [name for element in target.elements for name in _target_names(element.value)]
    return []


def _public_symbols(parsed: _Parsed) -> list[_Symbol]:
    found: list[_Symbol] = []
    for statement in parsed.module.body:
        if isinstance(statement, cst.FunctionDef):
            found.append(_Symbol(statement.name.value, "function", parsed.line(statement.name)))
        elif isinstance(statement, cst.ClassDef):
            found.append(_Symbol(statement.name.value, "class", parsed.line(statement.name)))
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                targets: list[cst.BaseExpression] = []
                if isinstance(small, cst.Assign):
                    targets = [t.target for t in small.targets]
                elif isinstance(small, cst.AnnAssign) and small.value is not None:
                    targets = [small.target]
                for target in targets:
                    found += [
                        _Symbol(name, "name", parsed.line(small)) for name in _target_names(target)
                    ]
    return [symbol for symbol in found if not symbol.name.startswith("_")]


def _module_bindings(parsed: _Parsed) -> frozenset[str] | None:
    """Every name the module binds at module level; None when a star import may bind any."""
    for node in _all_nodes(parsed.module):
        if isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar):
            return None
    try:
        scope = parsed.wrapper.resolve(ScopeProvider)[parsed.module]
    except Exception:  # why: scope analysis of arbitrary code must not crash a review
        return None
    if scope is None:
        return None
    return frozenset(assignment.name for assignment in scope.assignments)


def _removed_symbols(change: FileChange, base: _Parsed, patched: _Parsed | None) -> list[_Symbol]:
    bound: frozenset[str] | None = frozenset()
    if patched is not None:
        bound = _module_bindings(patched)
    if bound is None:
        return []
    return [
        symbol
        for symbol in _public_symbols(base)
        if symbol.name not in bound and symbol.line in change.removed_lines
    ]


def _import_origin(path: str, node: ast.ImportFrom) -> list[str]:
    named = node.module.split(".") if node.module else []
    if node.level == 0:
        return named
    package = path.split("/")[:-1]
    up = node.level - 1
    if up > len(package):
        return []
    return package[: len(package) - up] + named


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner is not None else None
    return None


def _references(
    repo_sources: Mapping[str, str], name: str, target_path: str
) -> list[tuple[str, int]]:
    """Where the patched tree still uses ``name`` from the module at ``target_path``.

    Counted: ``from <module> import name``, ``<module alias>.name``, and a bare ``name`` in a file
    that star-imports the module or in the module itself when nothing there binds it. A bare
    ``name`` elsewhere is not counted: it is some other object of the same name.
    """
    target = _module_parts(target_path)
    found: list[tuple[str, int]] = []
    for path in sorted(repo_sources):
        index = _index(path, repo_sources[path])
        if index is None:
            continue
        aliases = {bound for parts, bound in index.imports if _is_suffix(parts, target)}
        star = False
        for origin, imported, bound, line in index.from_imports:
            if imported == "*":
                star = star or _is_suffix(origin, target)
            elif imported == name and _is_suffix(origin, target):
                found.append((path, line))
            elif _is_suffix([*origin, imported], target):
                aliases.add(bound)
        found += [
            (path, line) for owner, line in index.attributes.get(name, ()) if owner in aliases
        ]
        if star or (path == target_path and name not in index.bound):
            found += [(path, line) for line in index.loads.get(name, ())]
    return sorted(found)


@dataclass(frozen=True, slots=True)
class _FileIndex:
    """What the repository-wide checks read from one file, gathered in one walk of its tree."""

    calls: Mapping[str, list[int]]  # called function or method name -> lines
    loads: Mapping[str, list[int]]  # bare name read -> lines
    attributes: Mapping[str, list[tuple[str, int]]]  # attribute -> (dotted owner, line)
    imports: list[tuple[list[str], str]]  # import a.b [as m] -> (module parts, name bound)
    from_imports: list[tuple[list[str], str, str, int]]  # (origin parts, name, bound, line)
    bound: frozenset[str]  # every name bound anywhere in the file


@functools.lru_cache(maxsize=4096)
def _index(path: str, source: str) -> _FileIndex | None:
    tree = _ast_parse(source)
    if tree is None:
        return None
    calls: dict[str, list[int]] = {}
    loads: dict[str, list[int]] = {}
    attributes: dict[str, list[tuple[str, int]]] = {}
    imports: list[tuple[list[str], str]] = []
    from_imports: list[tuple[list[str], str, str, int]] = []
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                calls.setdefault(func.id, []).append(node.lineno)
            elif isinstance(func, ast.Attribute):
                calls.setdefault(func.attr, []).append(node.lineno)
        elif isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                loads.setdefault(node.id, []).append(node.lineno)
            else:
                bound.add(node.id)
        elif isinstance(node, ast.Attribute):
            owner = _dotted(node.value)
            if owner is not None:
                attributes.setdefault(node.attr, []).append((owner, node.lineno))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                imports.append((alias.name.split("."), alias.asname or alias.name))
                bound.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            origin = _import_origin(path, node)
            for alias in node.names:
                from_imports.append((origin, alias.name, alias.asname or alias.name, node.lineno))
                bound.add(alias.asname or alias.name)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return _FileIndex(calls, loads, attributes, imports, from_imports, frozenset(bound))


def _validate_removed_symbol(
    args: tuple[str, ...], changes: Sequence[FileChange], repo_sources: Mapping[str, str]
) -> str | None:
    if len(args) > 1:
        return f"the check takes at most one argument, a symbol's name (got {len(args)})"
    if not args:
        return None
    for change, base, patched in _sides(changes):
        if base is None:
            continue
        for symbol in _removed_symbols(change, base, patched):
            if _names_in_module(args[0], symbol.name, change.path):
                return None
    return f"argument {args[0]!r} is not a public top-level symbol the edit removes"


def _run_removed_symbol(
    changes: Sequence[FileChange], args: tuple[str, ...], repo_sources: Mapping[str, str]
) -> list[Hit]:
    hits: list[Hit] = []
    for change, base, patched in _sides(changes):
        if base is None:
            continue
        for symbol in _removed_symbols(change, base, patched):
            if args and not _names_in_module(args[0], symbol.name, change.path):
                continue
            references = _references(repo_sources, symbol.name, change.path)
            if not references:
                continue
            path, line = references[0]
            more = f" and {len(references) - 1} more" if len(references) > 1 else ""
            hits.append(
                Hit(
                    "removed-symbol",
                    change.path,
                    symbol.line,
                    f"the public {symbol.kind} '{symbol.name}' (base line {symbol.line}) is "
                    f"removed by the edit but still referenced at {path}:{line}{more}",
                )
            )
    return hits


# --- mutable-default ------------------------------------------------------------------------

_MUTABLE_FACTORIES = frozenset(
    {"list", "dict", "set", "bytearray", "defaultdict", "OrderedDict", "Counter", "deque"}
)


def _is_mutable(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.List | cst.Dict | cst.Set | cst.ListComp | cst.DictComp | cst.SetComp):
        return True
    return isinstance(node, cst.Call) and _callee_name(node.func) in _MUTABLE_FACTORIES


def _all_params(function: cst.FunctionDef) -> list[cst.Param]:
    params = function.params
    return [*params.posonly_params, *params.params, *params.kwonly_params]


def _run_mutable_default(
    changes: Sequence[FileChange], args: tuple[str, ...], repo_sources: Mapping[str, str]
) -> list[Hit]:
    hits: list[Hit] = []
    for change, base, patched in _sides(changes):
        if patched is None:
            continue
        for qualname, function in patched.functions.items():
            old = base.functions.get(qualname) if base is not None else None
            already = (
                {
                    p.name.value
                    for p in _all_params(old.node)
                    if p.default is not None and _is_mutable(p.default)
                }
                if old is not None
                else set()
            )
            for param in _all_params(function.node):
                default = param.default
                if default is None or not _is_mutable(default):
                    continue
                line = patched.line(default)
                if line not in change.added_lines or param.name.value in already:
                    continue
                hits.append(
                    Hit(
                        "mutable-default",
                        change.path,
                        line,
                        f"the parameter '{param.name.value}' of '{qualname}' gets the mutable "
                        f"default `{_short(patched.code(default), 40)}`, one object shared by "
                        "every call",
                    )
                )
    return hits


# --- undefined-name -------------------------------------------------------------------------

#: Bound by the import system or the class machinery rather than by the module's code.
_IMPLICIT = frozenset(
    {
        "__file__",
        "__builtins__",
        "__cached__",
        "__loader__",
        "__path__",
        "__spec__",
        "__annotations__",
        "__package__",
        "__module__",
        "__qualname__",
        "__class__",
    }
)


def _undefined(parsed: _Parsed) -> list[tuple[int, str, str]] | None:
    """(line, name, enclosing function) of every name bound nowhere; None if that is unknowable."""
    # libcst resolves the iterable of a comprehension's second and later `for` clauses in the
    # enclosing scope, so a name bound by an earlier clause looks unbound there: collect those.
    in_comprehension: set[int] = set()
    for node in _all_nodes(parsed.module):
        if isinstance(node, cst.ImportFrom) and isinstance(node.names, cst.ImportStar):
            return None
        if isinstance(node, cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp):
            targets: set[str] = set()
            clause: cst.CompFor | None = node.for_in
            while clause is not None:
                targets.update(_target_names(clause.target))
                clause = clause.inner_for_in
            in_comprehension.update(
                id(name)
                for name in _all_nodes(node)
                if isinstance(name, cst.Name) and name.value in targets
            )
    try:
        scopes = parsed.wrapper.resolve(ScopeProvider)
    except Exception:  # why: scope analysis of arbitrary code must not crash a review
        return None
    unique = {id(scope): scope for scope in scopes.values() if scope is not None}
    found: list[tuple[int, str, str]] = []
    for scope in unique.values():
        for access in scope.accesses:
            node = access.node
            if (
                not isinstance(node, cst.Name)
                or node.value in _IMPLICIT
                or access.referents
                or id(node) in in_comprehension
            ):
                continue
            line = parsed.line(node)
            found.append((line, node.value, parsed.function_at(line)))
    return found


def _run_undefined_name(
    changes: Sequence[FileChange], args: tuple[str, ...], repo_sources: Mapping[str, str]
) -> list[Hit]:
    hits: list[Hit] = []
    for change, base, patched in _sides(changes):
        if patched is None:
            continue
        undefined = _undefined(patched)
        before = _undefined(base) if base is not None else []
        if undefined is None or before is None:
            continue
        already = {(name, where) for _, name, where in before}
        for line, name, where in undefined:
            if line in change.added_lines and (name, where) not in already:
                hits.append(
                    Hit(
                        "undefined-name",
                        change.path,
                        line,
                        f"the name '{name}' used in '{where or '<module>'}' is bound nowhere in "
                        "scope (no local, enclosing, module, import or builtin binding)",
                    )
                )
    return hits


# --- unreachable-code -----------------------------------------------------------------------


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


# --- the built-in checks and their examples -------------------------------------------------

_GUARDED_DISPLAY = """\
def display_name(user):
    if user is None:
        return "anonymous"
    return user.name.title()
"""

_CART = """\
class Cart:
    def __init__(self):
        self.items = {}

    def add(self, item, qty):
        if not isinstance(qty, int):
            raise TypeError("qty must be an int")
        self.items[item] = self.items.get(item, 0) + qty
"""

_WITHDRAW = """\
def withdraw(account, amount):
    if amount > account.balance:
        raise ValueError("insufficient funds")
    account.balance -= amount
    return account.balance
"""

_TALLY = """\
def tally(words, counts=None):
    if counts is None:
        counts = {}
    words = [word.strip().lower() for word in words]
    words = [word for word in words if word]
    words.sort()
    for word in words:
        counts[word] = counts.get(word, 0) + 1
    return counts
"""

_GREET = """\
def greet(name=None):
    name = name or "world"
    return f"hello, {name}!"
"""

_CONNECT = """\
DEFAULT_TIMEOUT = 5.0


def connect(host, timeout=None):
    timeout = DEFAULT_TIMEOUT if timeout is None else timeout
    return (host, timeout)
"""

_REMOVED_GUARD = Check(
    name="removed-guard",
    description="a None/falsy/isinstance guard (early exit or `x = x or ...`-style "
    "normalisation), early return or raise the edit removes",
    run=_run_removed_guard,
    valid=(
        Example(
            base=_WITHDRAW,
            patched=_WITHDRAW.replace(
                '"insufficient funds"', 'f"cannot withdraw {amount}: insufficient funds"'
            ).replace("account.balance -= amount", "account.balance = account.balance - amount"),
        ),
        Example(
            base="""\
def find(items, key):
    key = key.strip() if isinstance(key, str) else key
    if key is None:
        return None
    for item in items:
        if item.key == key:
            return item
    return None
""",
            patched="""\
def find(items, key):
    if key is None:
        return None
    key = key.strip() if isinstance(key, str) else key
    for item in items:
        if item.key == key:
            return item
    return None
""",
        ),
        Example(
            base="""\
def ratio(done, total):
    return done / total
""",
            patched="""\
def ratio(done, total):
    return round(done / total, 2)
""",
        ),
        # The normalisation moves down past the cleaning (its lines are removed and added
        # again): still there.
        Example(
            base=_TALLY,
            patched="""\
def tally(words, counts=None):
    words = [word.strip().lower() for word in words]
    words = [word for word in words if word]
    words.sort()
    if counts is None:
        counts = {}
    for word in words:
        counts[word] = counts.get(word, 0) + 1
    return counts
""",
        ),
        # Rewritten, and still filling in the missing name.
        Example(
            base=_GREET,
            patched="""\
def greet(name=None):
    name = (name or "world").strip()
    return f"hello, {name}!"
""",
        ),
        # Respelled as an `if`: `timeout` is still fixed up when missing.
        Example(
            base=_CONNECT,
            patched=_CONNECT.replace(
                "    timeout = DEFAULT_TIMEOUT if timeout is None else timeout\n",
                "    if timeout is None:\n        timeout = DEFAULT_TIMEOUT\n",
            ),
        ),
    ),
    invalid=(
        Example(
            base=_GUARDED_DISPLAY,
            patched="""\
def display_name(user):
    return user.name.title()
""",
        ),
        Example(
            base=_CART,
            patched=_CART.replace(
                '        if not isinstance(qty, int):\n            raise TypeError("qty must be an '
                'int")\n',
                "",
            ),
        ),
        Example(
            base=_WITHDRAW,
            patched=_WITHDRAW.replace(
                '        raise ValueError("insufficient funds")\n', "        pass\n"
            ),
        ),
        # No early exit: the guard fills in a missing argument, and the patch drops it.
        Example(
            base=_TALLY,
            patched=_TALLY.replace("    if counts is None:\n        counts = {}\n", ""),
        ),
        Example(
            base=_GREET,
            patched=_GREET.replace('    name = name or "world"\n', ""),
        ),
        Example(
            base=_CONNECT,
            patched=_CONNECT.replace(
                "    timeout = DEFAULT_TIMEOUT if timeout is None else timeout\n", ""
            ),
        ),
    ),
)

_LOADER = """\
import json


def load_config(path):
    with open(path) as handle:
        return json.load(handle)
"""

_SWALLOWED_EXCEPTION = Check(
    name="swallowed-exception",
    description="a new bare/Exception/BaseException handler that neither re-raises, logs nor "
    "uses the exception",
    run=_run_swallowed_exception,
    valid=(
        Example(
            base=_LOADER,
            patched="""\
import json
import logging

logger = logging.getLogger(__name__)


def load_config(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except Exception:
        logger.exception("cannot load the configuration %s", path)
        return {}
""",
        ),
        Example(
            base=_LOADER,
            patched="""\
import json


class ConfigError(Exception):
    pass


def load_config(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except Exception as exc:
        raise ConfigError(path) from exc
""",
        ),
        Example(
            base=_LOADER,
            patched="""\
import json


def load_config(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except FileNotFoundError:
        return {}
""",
        ),
        Example(
            base="""\
def close_quietly(conn):
    try:
        conn.close()
    except Exception:
        pass
""",
            patched="""\
def close_quietly(conn):
    if conn is None:
        return
    try:
        conn.close()
    except Exception:
        pass
""",
        ),
    ),
    invalid=(
        Example(
            base=_LOADER,
            patched="""\
import json


def load_config(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except Exception:
        pass
""",
        ),
        Example(
            base="""\
def parse_port(text):
    return int(text)
""",
            patched="""\
def parse_port(text):
    try:
        return int(text)
    except:
        return None
""",
        ),
        Example(
            base="""\
def send(client, message):
    try:
        client.post(message)
    except Exception:
        raise
""",
            patched="""\
def send(client, message):
    try:
        client.post(message)
    except Exception:
        return False
""",
        ),
    ),
)

_INVENTORY = """\
class Inventory:
    def __init__(self):
        self.stock = {}

    def remove(self, sku, qty):
        self.stock[sku] -= qty
"""

_INVENTORY_APP = {
    "app.py": """\
from mod import Inventory

inventory = Inventory()
inventory.stock["apple"] = 5
inventory.remove("apple", 2)
"""
}

_CONNECT_APP = {
    "client.py": """\
from mod import connect

session = connect("db.local", 5432, 10)
"""
}

_SIGNATURE_CHANGED = Check(
    name="signature-changed",
    description="a called function's parameters removed, renamed, reordered, made keyword-only "
    "or given other defaults",
    run=_run_signature_changed,
    validate_args=_validate_signature_changed,
    valid=(
        Example(
            base="""\
def total(prices, tax=0.0):
    return sum(prices) * (1 + tax)
""",
            patched="""\
def total(prices, tax=0.0, discount=0.0):
    return sum(prices) * (1 + tax) - discount
""",
            repo={"shop.py": "from mod import total\n\nprint(total([1.0, 2.0], 0.2))\n"},
        ),
        Example(
            base="""\
def _fmt(value, width):
    return str(value).rjust(width)
""",
            patched="""\
def _fmt(value, *, width):
    return str(value).rjust(width)
""",
        ),
        Example(
            base=_INVENTORY,
            patched=_INVENTORY.replace(
                "        self.stock[sku] -= qty\n",
                "        self.stock[sku] = max(0, self.stock.get(sku, 0) - qty)\n",
            ),
            args=("Inventory.remove",),
            repo=_INVENTORY_APP,
        ),
    ),
    invalid=(
        Example(
            base=_INVENTORY,
            patched=_INVENTORY.replace(
                "def remove(self, sku, qty):", "def remove(self, sku):"
            ).replace("-= qty", "= 0"),
            args=("Inventory.remove",),
            repo=_INVENTORY_APP,
        ),
        Example(
            base="""\
def connect(host, port, timeout=5):
    return (host, port, timeout)
""",
            patched="""\
def connect(host, port, *, timeout=5):
    return (host, port, timeout)
""",
            repo=_CONNECT_APP,
        ),
        Example(
            base="""\
def fetch(url, retries=3):
    return [url] * retries
""",
            patched="""\
def fetch(url, retries=0):
    return [url] * retries
""",
            args=("mod.fetch",),
            repo={"jobs.py": "import mod\n\npages = mod.fetch('https://example.org')\n"},
        ),
    ),
)

_SLUG = """\
import re


def slugify(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def title_case(text):
    return text.title()
"""

_REMOVED_SYMBOL = Check(
    name="removed-symbol",
    description="a public top-level function, class or name the edit removes that the "
    "repository still references",
    run=_run_removed_symbol,
    validate_args=_validate_removed_symbol,
    valid=(
        Example(
            base=_SLUG,
            patched=_SLUG.replace("\n\ndef title_case(text):\n    return text.title()\n", ""),
            repo={"views.py": "from mod import slugify\n\nprint(slugify('Hello World'))\n"},
        ),
        Example(
            base="""\
def _normalize(text):
    return text.strip().lower()


def key(text):
    return _normalize(text)
""",
            patched="""\
def key(text):
    return text.strip().lower()
""",
            repo={"util.py": "def _normalize(text):\n    return text\n"},
        ),
        Example(
            base=_SLUG,
            patched="from textutil import slugify\n\n\ndef title_case(text):\n"
            "    return text.title()\n",
            repo={
                "textutil.py": _SLUG.split("\n\ndef title_case")[0] + "\n",
                "views.py": "from mod import slugify\n\nprint(slugify('Hello World'))\n",
            },
        ),
    ),
    invalid=(
        Example(
            base=_SLUG,
            patched="def title_case(text):\n    return text.title()\n",
            args=("slugify",),
            repo={"views.py": "from mod import slugify\n\nprint(slugify('Hello World'))\n"},
        ),
        Example(
            base="""\
DEFAULT_TIMEOUT = 30


def timeout_for(host):
    return DEFAULT_TIMEOUT
""",
            patched="""\
def timeout_for(host):
    return 30
""",
            repo={"client.py": "import mod\n\nprint(mod.DEFAULT_TIMEOUT)\n"},
        ),
    ),
)

_MUTABLE_DEFAULT = Check(
    name="mutable-default",
    description="a new parameter default that is a list, dict or set (literal or constructor "
    "call), shared by every call",
    run=_run_mutable_default,
    valid=(
        Example(
            base="""\
def register(name, registry):
    registry.append(name)
    return registry
""",
            patched="""\
def register(name, registry=None):
    registry = [] if registry is None else registry
    registry.append(name)
    return registry
""",
        ),
        Example(
            base="""\
def add(item, bucket=[]):
    bucket.append(item)
    return bucket
""",
            patched="""\
def add(item, bucket=[], unique=False):
    if not (unique and item in bucket):
        bucket.append(item)
    return bucket
""",
        ),
        Example(
            base="""\
def tags(*names):
    return list(names)
""",
            patched="""\
def tags(*names, extra=()):
    return [*names, *extra]
""",
        ),
    ),
    invalid=(
        Example(
            base="",
            patched="""\
def register(name, handlers=[]):
    handlers.append(name)
    return handlers
""",
        ),
        Example(
            base="""\
def walk(node, seen=None):
    seen = set() if seen is None else seen
    seen.add(node)
    return seen
""",
            patched="""\
def walk(node, seen=set()):
    seen.add(node)
    return seen
""",
        ),
        Example(
            base="""\
class Request:
    def __init__(self, url):
        self.url = url
""",
            patched="""\
from collections import defaultdict


class Request:
    def __init__(self, url, *, headers=defaultdict(list)):
        self.url = url
        self.headers = headers
""",
        ),
    ),
)

_UNDEFINED_NAME = Check(
    name="undefined-name",
    description="a name used on an added line that is bound nowhere in scope",
    run=_run_undefined_name,
    valid=(
        Example(
            base="""\
import json


def dump(data):
    return json.dumps(data)
""",
            patched="""\
import json


def dump(data, indent=None):
    keys = sorted(k for k in data)
    return json.dumps({k: data[k] for k in keys}, indent=indent)
""",
        ),
        Example(
            base="""\
def report(rows):
    return render(rows)
""",
            patched="""\
def report(rows):
    return render(sorted(rows))
""",
        ),
        Example(
            base="""\
def counter():
    count = 0

    def bump():
        return count + 1

    return bump
""",
            patched="""\
def counter():
    count = 0

    def bump():
        nonlocal count
        count += 1
        return count

    return bump
""",
        ),
    ),
    invalid=(
        Example(
            base="""\
def total(prices):
    result = sum(prices)
    return result
""",
            patched="""\
def total(prices):
    result = sum(prices)
    return reslt
""",
        ),
        Example(
            base="""\
def dump(data):
    return str(data)
""",
            patched="""\
def dump(data):
    return json.dumps(data)
""",
        ),
    ),
)

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

for _check in (
    _REMOVED_GUARD,
    _SWALLOWED_EXCEPTION,
    _SIGNATURE_CHANGED,
    _REMOVED_SYMBOL,
    _MUTABLE_DEFAULT,
    _UNDEFINED_NAME,
    _UNREACHABLE_CODE,
):
    REGISTRY.register(_check)
del _check
