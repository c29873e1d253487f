"""``property:`` — a Hypothesis property of one function, checked differentially on the
patched tree and its counterfactual, and decided by a frozen replay.

    property:        MODULE.FUNC [RELATION]     equivalent (default) | raises-same
                     [given: NAME=st.STRATEGY(...), ...]   | idempotent | roundtrip INVERSE

The gate writes every line that runs (:mod:`.property_script`); the critic gives a dotted
target, a relation word, and strategies limited to allow-listed ``st.NAME(...)`` calls with
literal arguments. A parameter without ``given:`` gets ``st.from_type`` of its annotation;
one with neither makes the finding inconclusive at execution (the child reads the real
signature: decorators and re-exports make the source a poor guide at validation).

One derandomized search per tree (same script, so the same inputs), compared in order; the
first input the patch changes (or on which it breaks the relation while the counterfactual
keeps it) is frozen into a pytest test with ``@example(...)``, replayed on both trees with
reruns, and that replay alone decides (:func:`pytest_critic22.verification.decide.decide`).
"""

from __future__ import annotations

import ast
import importlib.util
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_critic22.execution.trees import TreeError, Variant
from pytest_critic22.kinds.property_run import execute
from pytest_critic22.kinds.property_script import (
    DOTTED,
    HELPER_PREFIX,
    IDENT,
    MAX_EXAMPLES,
    NAME,
)
from pytest_critic22.model.procedure import NotExecutable, Procedure, PropertyData
from pytest_critic22.verification.procedures import Scope

if TYPE_CHECKING:
    from pytest_critic22.model.procedure import FindingLike
    from pytest_critic22.verification.procedures import ExecutionContext, FindingResult

__all__ = [
    "GRAMMAR",
    "KIND",
    "RELATIONS",
    "PropertyData",
    "PropertyKind",
    "Spec",
    "parse",
]

RELATIONS = ("equivalent", "raises-same", "idempotent", "roundtrip")
GRAMMAR = """\
  property:        MODULE.FUNC [RELATION]  a property of one function that the patch breaks,
                   checked with generated inputs on the patched tree against the tree without
                   your located edit (the base for whole-patch). RELATION: equivalent (the
                   default: the same result, or the same exception type, as without the edit),
                   raises-same (the same exception type; results not compared), idempotent
                   (f(f(x)) == f(x)), roundtrip INVERSE (INVERSE(f(x)) == x).
                   Optional lines "given: NAME=st.STRATEGY(...), ..." give Hypothesis
                   strategies for parameters (literal arguments only); any other parameter
                   needs a type annotation.
                   Example:
                   property: pkg.text.slugify equivalent
                   given: text=st.text(alphabet="ab -_", max_size=12)
"""

_GIVEN = re.compile(r"^\s*given\s*:", re.IGNORECASE)
_MAX_GIVEN = 16
_MAX_STRATEGY = 2000
_MAX_DEPTH = 12
#: ``hypothesis.strategies`` functions a ``given:`` may call (literal arguments only).
STRATEGIES = frozenset(
    {
        *("binary", "booleans", "characters", "complex_numbers", "dates", "datetimes"),
        *("decimals", "dictionaries", "emails", "fixed_dictionaries", "floats", "fractions"),
        *("from_regex", "frozensets", "integers", "ip_addresses", "iterables", "just", "lists"),
        *("none", "one_of", "permutations", "sampled_from", "sets", "slices", "text"),
        *("timedeltas", "times", "tuples", "uuids"),
    }
)


@dataclass(frozen=True, slots=True)
class Spec:
    """A property procedure's content. In the :class:`Procedure` it travels as
    :class:`PropertyData`: ``args`` = (target, relation[, inverse]) and ``given`` = one
    ``NAME=STRATEGY`` line per parameter, and is checked again when read back (a procedure
    may come from a record)."""

    target: str
    relation: str = "equivalent"
    inverse: str = ""
    given: tuple[tuple[str, str], ...] = ()  # (parameter, checked strategy source)

    def procedure(self) -> Procedure:
        args = (self.target, self.relation, *([self.inverse] if self.inverse else []))
        given = "".join(f"{name}={strategy}\n" for name, strategy in self.given)
        return Procedure(NAME, PropertyData(args, given))

    @property
    def relation_text(self) -> str:
        return f"{self.relation} {self.inverse}".strip()

    @staticmethod
    def of(procedure: Procedure) -> Spec | NotExecutable:
        data = procedure.payload(PropertyData)
        head = " ".join(data.args)
        lines = [f"given: {line}" for line in data.given.splitlines() if line.strip()]
        return parse_spec("\n".join([head, *lines]))


def parse(rest: str) -> Procedure | NotExecutable:
    """The text after ``property:`` -> a procedure; strategies are checked, never evaluated."""
    spec = parse_spec(rest)
    return spec if isinstance(spec, NotExecutable) else spec.procedure()


def parse_spec(rest: str) -> Spec | NotExecutable:
    lines = [ln for ln in rest.splitlines() if ln.strip() and not ln.strip().startswith("```")]
    inline = re.search(r"\sgiven\s*:", lines[0], re.IGNORECASE) if lines else None
    if inline is not None and not _GIVEN.match(lines[0]):  # "f equivalent given: x=..."
        lines[0:1] = [lines[0][: inline.start()], lines[0][inline.start() :]]
    if not lines or _GIVEN.match(lines[0]):
        return _refuse("names no function (MODULE.FUNC)")
    words = lines[0].split()
    target, relation, extra = words[0], (words[1:2] or ["equivalent"])[0].lower(), words[2:]
    problem = _dotted_problem(target)
    if problem:
        return _refuse(problem)
    if relation not in RELATIONS:
        return _refuse(f"unknown relation {relation[:40]!r} (known: {', '.join(RELATIONS)})")
    inverse = ""
    if relation == "roundtrip":
        if not extra:
            return _refuse("roundtrip needs its INVERSE (roundtrip MODULE.FUNC)")
        inverse, extra = extra[0], extra[1:]
        problem = _dotted_problem(inverse)
        if problem:
            return _refuse(f"roundtrip INVERSE: {problem}")
    if extra:
        return _refuse(f"unexpected {' '.join(extra)[:60]!r} after {relation}")
    given: list[tuple[str, str]] = []
    for line in lines[1:]:
        match = _GIVEN.match(line)
        if match is None:
            return _refuse(f"unexpected line {line.strip()[:60]!r} (only given: lines follow)")
        found = parse_given(line[match.end() :])
        if isinstance(found, str):
            return _refuse(f"given: {found}")
        given.extend(found)
    names = [name for name, _ in given]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        return _refuse(f"given: {', '.join(duplicated)} given twice")
    if len(given) > _MAX_GIVEN:
        return _refuse(f"given: at most {_MAX_GIVEN} parameters")
    return Spec(target, relation, inverse, tuple(given))


def _refuse(reason: str) -> NotExecutable:
    return NotExecutable(f"{NAME}: {reason}", NAME)


def _dotted_problem(path: str) -> str | None:
    import keyword

    if not DOTTED.match(path):
        return f"{path[:60]!r} is not a dotted MODULE.FUNC path"
    for part in path.split("."):
        if part.startswith("__") and part.endswith("__"):
            return f"{path!r}: dunder names are not targets"
        if keyword.iskeyword(part):
            return f"{path!r}: {part!r} is a keyword, not a name"
    return None


def parse_given(text: str) -> list[tuple[str, str]] | str:
    """``NAME=STRATEGY, ...`` -> [(name, re-emitted source)], or why it is refused."""
    if not text.strip():
        return "names no strategy"
    try:
        tree = ast.parse(f"_({text.strip()})", mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return f"does not parse as NAME=STRATEGY, ...: {getattr(exc, 'msg', exc)}"
    call = tree.body
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "_"):
        return "write NAME=STRATEGY, separated by commas"
    if call.args:
        return "write NAME=STRATEGY (a strategy without a parameter name)"
    out = []
    for keyword in call.keywords:
        if keyword.arg is None:
            return "** is not allowed"
        if not IDENT.match(keyword.arg) or keyword.arg.startswith((HELPER_PREFIX, "__")):
            return f"{keyword.arg!r} is not a parameter name this kind accepts"
        problem = strategy_problem(keyword.value, 0)
        if problem:
            return f"{keyword.arg}: {problem}"
        source = ast.unparse(keyword.value)
        if len(source) > _MAX_STRATEGY:
            return f"{keyword.arg}: the strategy is longer than {_MAX_STRATEGY} characters"
        out.append((keyword.arg, source))
    return out


def strategy_problem(node: ast.expr, depth: int) -> str | None:
    """None when ``node`` is an allow-listed ``st.NAME(...)`` call with literal arguments."""
    if depth > _MAX_DEPTH:
        return "nested too deeply"
    if not isinstance(node, ast.Call):
        return f"{_show(node)} is not a call of st.NAME(...)"
    func = node.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return f"{_show(node)}: only st.NAME(...) calls are allowed (no chained calls)"
    if func.value.id != "st" or func.attr not in STRATEGIES:
        return f"{_show(func)} is not an allowed strategy (st.{', st.'.join(sorted(STRATEGIES))})"
    for arg in [*node.args, *(k.value for k in node.keywords)]:
        if isinstance(arg, ast.Starred):
            return f"{_show(node)}: * is not allowed"
        problem = _argument_problem(arg, depth + 1)
        if problem:
            return problem
    if any(k.arg is None for k in node.keywords):
        return f"{_show(node)}: ** is not allowed"
    return None


def _argument_problem(node: ast.expr, depth: int) -> str | None:
    if depth > _MAX_DEPTH:
        return "nested too deeply"
    if isinstance(node, ast.Constant):
        if isinstance(node.value, int | float | complex | str | bytes | bool) or node.value is None:
            return None
        return f"{_show(node)} is not a literal"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = node.operand
        if isinstance(inner, ast.Constant) and type(inner.value) in (int, float, complex):
            return None
        return f"{_show(node)}: only a number may be negated"
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        for element in node.elts:
            problem = _argument_problem(element, depth + 1)
            if problem:
                return problem
        return None
    if isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                return f"{_show(node)}: ** is not allowed"
            problem = _argument_problem(key, depth + 1) or _argument_problem(value, depth + 1)
            if problem:
                return problem
        return None
    if isinstance(node, ast.Call):
        return strategy_problem(node, depth)
    return f"{_show(node)} is not a literal or an st.NAME(...) call"


def _show(node: ast.AST) -> str:
    try:
        text = ast.unparse(node)
    except Exception:  # a malformed tree: say what it is
        text = type(node).__name__
    return repr(text if len(text) <= 60 else text[:57] + "...")


def validate(procedure: Procedure, scope: Scope) -> str | None:
    """Why it cannot run here (None: it can): Hypothesis must be installed, and the target's
    top-level module must be the project's (at the patched tree's root, in ``src/``, or one
    folder down)."""
    spec = Spec.of(procedure)
    if isinstance(spec, NotExecutable):
        return spec.reason
    if importlib.util.find_spec("hypothesis") is None:
        return f"{NAME}: needs hypothesis installed in the project's environment"
    try:
        tree = scope.trees.get(Variant.patched(scope.patch))
    except TreeError:
        return None  # the item will say the tree cannot be built
    spots = [tree, *(p for p in sorted(tree.iterdir()) if p.is_dir() and p.name != ".git")]
    for path in filter(None, (spec.target, spec.inverse)):
        top = path.split(".")[0]
        if not any((d / f"{top}.py").is_file() or (d / top).is_dir() for d in spots):
            return f"{NAME}: {path}: no module {top!r} in the project"
    return None


class PropertyKind:
    """The registry's entry for ``property:``; ``max_examples`` per search."""

    name = NAME
    grammar = GRAMMAR
    description = "Generated inputs show that the patch changes what a function returns or raises."

    def __init__(self, max_examples: int = MAX_EXAMPLES) -> None:
        self.max_examples = max_examples

    def parse(self, rest: str) -> Procedure | NotExecutable:
        return parse(rest)

    def validate(self, finding: FindingLike, procedure: Procedure, scope: Scope) -> str | None:
        return validate(procedure, scope)

    def execute(
        self,
        finding_id: str,
        finding: FindingLike | None,
        procedure: Procedure,
        ctx: ExecutionContext,
    ) -> FindingResult:
        assert finding is not None
        spec = Spec.of(procedure)
        return execute(finding_id, finding, procedure, spec, ctx, self.max_examples)


KIND = PropertyKind()
