"""The code a ``property:`` finding runs in a tree's child: a Hypothesis search, and the
pytest test that replays its frozen counterexample. Pure: text in, text out.

Nothing here is critic-written: the critic's strategies arrive re-emitted from their checked
AST (``property.parse_given``), names are checked identifiers, and every other value enters
the source as ``repr`` of a ``str`` or as checked literal source, in one substitution pass.
What a child reports back is hostile data (``property_run.read_search`` validates it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

__all__ = [
    "DOTTED",
    "HELPER_PREFIX",
    "IDENT",
    "MAX_EXAMPLES",
    "NAME",
    "SHOW",
    "example_line",
    "replay_test",
    "search_script",
]

NAME = "property"
MAX_EXAMPLES = 200  # per search, per tree
#: Names the generated code uses for itself; a function parameter may not take one.
HELPER_PREFIX = "_c22"
SHOW = 300  # characters of a repr kept for the report
DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # ASCII: what the generated code may name
_MARKER = re.compile(r"__([A-Z][A-Z_]*)__")

_RUNTIME = r'''
import base64 as _c22_base64
import copy as _c22_copy
import hashlib as _c22_hashlib
import importlib as _c22_importlib
import inspect as _c22_inspect
import pickle as _c22_pickle
import re as _c22_re

_C22_ADDRESS = _c22_re.compile(r"(<[^<>]* at )0x[0-9A-Fa-f]+")
_C22_SHOW = __SHOW__


def _c22_resolve(path):
    """The object at a dotted path: the longest importable module prefix, then attributes."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:cut])
        try:
            found = _c22_importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name and (module == exc.name or module.startswith(exc.name + ".")):
                continue  # not a module: try a shorter prefix
            raise  # the module exists and imports something that does not
        for name in parts[cut:]:
            found = getattr(found, name)
        return found
    raise ModuleNotFoundError(f"No module named {parts[0]!r}", name=parts[0])


def _c22_repr(value):
    try:
        text = repr(value)
    except Exception as exc:
        text = "<repr raised " + type(exc).__name__ + ">"
    return _C22_ADDRESS.sub(r"\g<1>0x?", text)


def _c22_short(value):
    text = _c22_repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _c22_digest(text):
    return _c22_hashlib.sha256(text.encode("utf-8", "backslashreplace")).hexdigest()


def _c22_load(blob):
    return _c22_pickle.loads(_c22_base64.b64decode(blob))


def _c22_call(func, kwargs):
    """func(**kwargs), positional-only parameters passed by position."""
    try:
        params = _c22_inspect.signature(func).parameters
    except (TypeError, ValueError):
        params = {}
    args, named = [], {}
    for name, value in kwargs.items():
        param = params.get(name)
        if param is not None and param.kind is param.POSITIONAL_ONLY:
            args.append(value)
        else:
            named[name] = value
    return func(*args, **named)


def _c22_behaviour(func, kwargs, raises_only):
    try:
        value = _c22_call(func, kwargs)
    except Exception as exc:
        return "raises " + type(exc).__qualname__
    return "returns" if raises_only else "returns " + _c22_repr(value)


def _c22_relation(relation, func, inverse, kwargs, label, inverse_label):
    """(holds, what happened) for idempotent and roundtrip; an exception breaks it."""
    [(name, value)] = kwargs.items()
    try:
        original = _c22_copy.deepcopy(value)
    except Exception:
        original = value
    try:
        once = _c22_call(func, kwargs)
        if relation == "idempotent":
            again = _c22_call(func, {name: once})
            shown = f"{label}(x) = {_c22_short(once)}, {label}({label}(x)) = {_c22_short(again)}"
            return bool(again == once), shown
        back = inverse(once)
        shown = f"{label}(x) = {_c22_short(once)}, {inverse_label}(...) = {_c22_short(back)}"
        return bool(back == original), shown
    except Exception as exc:
        return False, f"raises {type(exc).__qualname__}: {str(exc)[:120]}"
'''

_SEARCH = r'''
import json
import sys
import typing

_C22_OUT = sys.argv[1]
_C22_CONFIG = json.loads(__CONFIG__)
_C22_LABEL = _C22_CONFIG["target"].rsplit(".", 1)[-1]
_C22_INVERSE_LABEL = (_C22_CONFIG["inverse"] or ".").rsplit(".", 1)[-1]


def _c22_finish(record):
    with open(_C22_OUT, "w", encoding="utf-8") as fh:
        json.dump(record, fh)
    sys.exit(0)


def _c22_fail(error, message, missing=None):
    _c22_finish({"status": "error", "error": error, "message": message[:500], "missing": missing})


class _C22Refused(Exception):
    pass


def _c22_plan(func, given, st):
    """A strategy per parameter: the given one, else from its annotation (builds-style:
    parameters with a default are left to it unless given)."""
    label = _C22_LABEL
    try:
        signature = _c22_inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise _C22Refused(f"cannot read the signature of {label}: {exc}") from None
    try:
        hints = typing.get_type_hints(func)
    except Exception:
        hints = {}
    params = signature.parameters
    variadic = (_c22_inspect.Parameter.VAR_POSITIONAL, _c22_inspect.Parameter.VAR_KEYWORD)
    unknown = [n for n in given if n not in params or params[n].kind in variadic]
    if unknown:
        raise _C22Refused(f"given: {', '.join(unknown)}: not a parameter of {label}{signature}")
    plan = {}
    for name, param in params.items():
        if param.kind in variadic:
            continue
        if name in given:
            plan[name] = given[name]
        elif param.default is not param.empty:
            continue
        elif name in hints:
            plan[name] = st.from_type(hints[name])
        else:
            raise _C22Refused(
                f"parameter {name!r} of {label}{signature} has no type annotation and no "
                "given: strategy"
            )
    if not plan:
        raise _C22Refused(f"{label}{signature} takes no parameter to generate")
    if _C22_CONFIG["relation"] in ("idempotent", "roundtrip") and len(plan) != 1:
        raise _C22Refused(
            f"{_C22_CONFIG['relation']} needs one generated argument; {label}{signature} "
            f"gets {len(plan)}: {', '.join(plan)}"
        )
    bad = [n for n in plan if n.startswith("_c22")]
    if bad:
        raise _C22Refused(f"parameter names reserved by the generated code: {bad}")
    return plan


def _c22_serialise(value):
    """The value for the report (repr) and for replay: literal source when it reads back
    equal, else a base64 pickle (read only by the replaying child, never the controller)."""
    import ast

    text = repr(value)
    out = {"repr": _c22_repr(value)[:_C22_SHOW]}
    try:
        if len(text) <= 20000 and ast.literal_eval(text) == value:
            if repr(ast.literal_eval(text)) == text:
                out["literal"] = text
                return out
    except Exception:
        pass
    try:
        blob = _c22_base64.b64encode(_c22_pickle.dumps(value, protocol=4)).decode("ascii")
        if len(blob) <= 60000:
            out["pickle"] = blob
    except Exception:
        pass
    return out


try:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st
except Exception as exc:
    _c22_fail("hypothesis", f"{type(exc).__name__}: {exc}")

try:
    _c22_target = _c22_resolve(_C22_CONFIG["target"])
    _c22_inverse = _c22_resolve(_C22_CONFIG["inverse"]) if _C22_CONFIG["inverse"] else None
except Exception as exc:
    missing = exc.name if isinstance(exc, ImportError) else None
    _c22_fail("import", f"{type(exc).__name__}: {exc}", missing)

try:
    _c22_given = {__GIVEN__}
    _c22_strategies = _c22_plan(_c22_target, _c22_given, st)
except _C22Refused as exc:
    _c22_fail("signature", str(exc))
except Exception as exc:
    _c22_fail("strategy", f"{type(exc).__name__}: {exc}")

_c22_records = []
_C22_RELATION = _C22_CONFIG["relation"]


@settings(
    derandomize=True,
    database=None,
    max_examples=_C22_CONFIG["max_examples"],
    deadline=None,
    phases=[Phase.generate],
    suppress_health_check=list(HealthCheck),
    print_blob=False,
)
@given(**_c22_strategies)
def _c22_search(**kwargs):
    if len(_c22_records) >= _C22_CONFIG["max_examples"]:
        return
    entry = {"input": {n: _c22_serialise(v) for n, v in kwargs.items()}}
    entry["call"] = f"{_C22_LABEL}(" + ", ".join(
        f"{n}={_c22_short(v)}" for n, v in kwargs.items()
    ) + ")"
    if _C22_RELATION in ("equivalent", "raises-same"):
        shown = _c22_behaviour(_c22_target, kwargs, _C22_RELATION == "raises-same")
        entry["holds"] = None
    else:
        entry["holds"], shown = _c22_relation(
            _C22_RELATION, _c22_target, _c22_inverse, kwargs, _C22_LABEL, _C22_INVERSE_LABEL
        )
    entry["shown"] = shown[:_C22_SHOW]
    entry["digest"] = _c22_digest(shown)
    _c22_records.append(entry)


try:
    _c22_search()
except Exception as exc:
    _c22_fail("search", f"{type(exc).__name__}: {exc}")
_c22_finish({"status": "ok", "examples": _c22_records})
'''

_REPLAY = r"""
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

_C22_RELATION = __RELATION__
_C22_EXPECTED = __EXPECTED__  # digest of the counterfactual tree's behaviour on this input
_C22_EXPECTED_SHOWN = __SHOWN__
_c22_target = _c22_resolve(__TARGET__)
_c22_inverse = __INVERSE_RESOLVED__


@settings(
    phases=[Phase.explicit],
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
@example(__EXAMPLE__)
@given(__PLACEHOLDERS__)
def test_critic22_property(__PARAMS__):
    kwargs = {__KWARGS__}
    if _C22_RELATION in ("equivalent", "raises-same"):
        got = _c22_behaviour(_c22_target, kwargs, _C22_RELATION == "raises-same")
        same = _c22_digest(got) == _C22_EXPECTED
        assert same, f"{got[:_C22_SHOW]}, where the counterfactual tree gave {_C22_EXPECTED_SHOWN}"
    else:
        holds, shown = _c22_relation(
            _C22_RELATION, _c22_target, _c22_inverse, kwargs, __LABEL__, __INVERSE_LABEL__
        )
        assert holds, f"{_C22_RELATION} does not hold: {shown}"
"""


def _fill(template: str, values: dict[str, str]) -> str:
    """One pass over the template: a value is never scanned again for markers (a child's
    text that holds ``__TARGET__`` stays text)."""
    return _MARKER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def search_script(
    target: str,
    relation: str,
    inverse: str,
    given: Sequence[tuple[str, str]],
    max_examples: int,
) -> str:
    """The search run in each tree: ``python SCRIPT RESULT_JSON``. ``given`` holds
    (checked name, strategy source re-emitted from its checked AST)."""
    config = {
        "target": target,
        "relation": relation,
        "inverse": inverse,
        "max_examples": int(max_examples),
    }
    strategies = ", ".join(f"{name!r}: {source}" for name, source in given)
    head = '"""critic22 property search (generated)."""\n'
    runtime = _fill(_RUNTIME, {"SHOW": str(SHOW)})
    return (
        head + runtime + _fill(_SEARCH, {"CONFIG": repr(json.dumps(config)), "GIVEN": strategies})
    )


def replay_test(
    finding_id: str,
    target: str,
    relation: str,
    inverse: str,
    example: Sequence[tuple[str, str]],
    expected_digest: str,
    expected_shown: str,
) -> str:
    """The pytest module that replays one frozen input. ``example`` holds (checked name,
    checked expression source: a literal, or ``_c22_load('BASE64')``)."""
    names = [name for name, _ in example]
    head = f'"""critic22: the frozen counterexample of {finding_id}\'s property (generated)."""\n'
    runtime = _fill(_RUNTIME, {"SHOW": str(SHOW)})
    body = _fill(
        _REPLAY,
        {
            "RELATION": repr(relation),
            "EXPECTED": repr(expected_digest),
            "SHOWN": repr(expected_shown),
            "TARGET": repr(target),
            "INVERSE_RESOLVED": f"_c22_resolve({inverse!r})" if inverse else "None",
            "LABEL": repr(target.rsplit(".", 1)[-1]),
            "INVERSE_LABEL": repr(inverse.rsplit(".", 1)[-1]),
            "EXAMPLE": ", ".join(f"{name}={source}" for name, source in example),
            "PLACEHOLDERS": ", ".join(f"{name}=st.just(None)" for name in names),
            "PARAMS": ", ".join(names),
            "KWARGS": ", ".join(f"{name!r}: {name}" for name in names),
        },
    )
    return head + runtime + body


def example_line(example: Sequence[tuple[str, str]]) -> str:
    """The ``@example(...)`` line as it stands in the replay test."""
    return "@example(" + ", ".join(f"{name}={source}" for name, source in example) + ")"
