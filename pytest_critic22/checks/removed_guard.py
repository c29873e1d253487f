"""The ``removed-guard`` check: a guard, early return or raise the edit removes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import libcst as cst

from pytest_critic22.checks.base import Check, Example, FileChange, Hit
from pytest_critic22.checks.parsing import (
    _all_nodes,
    _callee_name,
    _own_nodes,
    _Parsed,
    _short,
    _sides,
)

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


# --- the check and its examples --------------------------------------------------------------

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
