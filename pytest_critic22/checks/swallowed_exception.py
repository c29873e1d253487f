"""The ``swallowed-exception`` check: a new broad handler that hides every exception."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

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


# --- the check and its examples --------------------------------------------------------------

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
