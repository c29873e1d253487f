"""What a test needs to see, extracted from sources: the code the packet shows the critic.

Pure: sources in, text and records out (libcst; no subprocess, no pytest import). The I/O —
reading the trees, the cache — is in :mod:`pytest_critic22.evidence.gather`.

- :func:`symbol_source`: the full source of a touched function or class, with the header
  line(s) of the classes around it (a method is shown whole, under its class's header);
- :func:`signature_of`: the verbatim ``def``/``class`` header of a definition and its docstring
  (for the symbols the patch calls);
- :func:`conftest_fixtures`: the fixtures a ``conftest.py`` defines (``@pytest.fixture``,
  ``@pytest.fixture(...)``, ``@fixture``; ``name=``, ``scope=`` and ``autouse=`` honoured), and
  :func:`conftest_chain` / :func:`available_fixtures`: which conftests apply to a test folder and
  which fixture a name means there (the closest conftest wins, as in pytest);
- :func:`choose_usage_example`: the one existing test shown per touched symbol, by a fixed rule.

Where a source's functions and classes are (:class:`Block`, :func:`definitions`) and its
imports (:func:`module_imports`) is :mod:`pytest_critic22.evidence.codeblocks`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from pytest_critic22.evidence.codeblocks import Block, definitions

__all__ = [
    "BUILTIN_FIXTURES",
    "CONTEXT_VERSION",
    "Fixture",
    "available_fixtures",
    "builtin_fixtures_note",
    "choose_usage_example",
    "conftest_chain",
    "conftest_fixtures",
    "find_block",
    "fixture_digest",
    "fixtures_from_dicts",
    "fixtures_to_dicts",
    "nodeid_source",
    "signature_of",
    "symbol_source",
    "unit_of",
]

# Part of every fixture cache key: bump it whenever what is extracted from a conftest changes.
CONTEXT_VERSION = 1

#: pytest's own fixtures, available to every test (``pytest --fixtures`` without plugins).
BUILTIN_FIXTURES: tuple[str, ...] = (
    "cache",
    "capfd",
    "capfdbinary",
    "caplog",
    "capsys",
    "capsysbinary",
    "doctest_namespace",
    "monkeypatch",
    "pytestconfig",
    "record_property",
    "record_testsuite_property",
    "record_xml_attribute",
    "recwarn",
    "tmp_path",
    "tmp_path_factory",
    "tmpdir",
    "tmpdir_factory",
)


@dataclass(frozen=True, slots=True)
class Fixture:
    name: str  # as tests request it: ``name=`` when the decorator gives one
    scope: str  # "function" unless ``scope=`` says otherwise ("dynamic" for a callable)
    doc: str  # the docstring's first line
    line: int
    function: str = ""  # the function's own name, when ``name=`` differs from it
    autouse: bool = False
    returns: str = ""  # the return annotation, as written


# -- definitions ------------------------------------------------------------------------------


def find_block(blocks: Sequence[Block], qualname: str, line: int | None = None) -> Block | None:
    """The definition of ``qualname`` (the one around ``line`` when given), else None."""
    named = [b for b in blocks if b.qualname == qualname]
    if line is not None:
        around = [b for b in named if b.start <= line <= b.end]
        named = around or named
    return named[-1] if named else None


def unit_of(blocks: Sequence[Block], qualname: str, line: int | None = None) -> Block | None:
    """The definition shown for a touched symbol: the outermost function around it (a nested
    function is shown inside its function, a method as the method), else the class itself."""
    block = find_block(blocks, qualname, line)
    if block is None:
        return None
    parts = qualname.split(".")
    for cut in range(1, len(parts)):
        outer = find_block(blocks, ".".join(parts[:cut]), block.line)
        if outer is not None and outer.kind == "function":
            return outer
    return block


def symbol_source(
    source: str,
    qualname: str,
    blocks: Sequence[Block] | None = None,
    line: int | None = None,
) -> tuple[int, int, str] | None:
    """(first line, last line, text) of a definition, verbatim, under the header line(s) of the
    classes around it (up to the first function around it, if any); a gap between a header and
    what follows is marked with one comment line. None when ``qualname`` is not defined in
    ``source``."""
    blocks = definitions(source) if blocks is None else blocks
    block = find_block(blocks, qualname, line)
    if block is None:
        return None
    lines = source.splitlines()
    parts = qualname.split(".")
    chain = [find_block(blocks, ".".join(parts[:cut]), block.line) for cut in range(1, len(parts))]
    out: list[str] = []
    for index, outer in enumerate(chain):
        following = chain[index + 1] if index + 1 < len(chain) else block
        if outer is None or outer.kind != "class" or following is None:
            break  # inside a function: only the classes around it have headers to show
        out.extend(lines[outer.start - 1 : outer.header_end])
        if following.start > outer.header_end + 1:
            indent = _indent(lines[following.line - 1])
            gap = f"lines {outer.header_end + 1}-{following.start - 1}"
            out.append(f"{indent}# ... ({gap} not shown)")
    out.extend(lines[block.start - 1 : block.end])
    return block.start, block.end, "\n".join(out) + "\n"


def signature_of(
    source: str,
    qualname: str,
    blocks: Sequence[Block] | None = None,
    line: int | None = None,
) -> tuple[str, str] | None:
    """(header, docstring) of a definition: the ``def``/``class`` line(s) as written, decorators
    included and dedented; for a class, its ``__init__`` header follows. The docstring is the
    class's, else its ``__init__``'s. None when ``qualname`` is not defined in ``source``."""
    blocks = definitions(source) if blocks is None else blocks
    block = find_block(blocks, qualname, line)
    if block is None:
        return None
    lines = source.splitlines()
    header = lines[block.start - 1 : block.header_end]
    docstring = block.docstring
    if block.kind == "class":
        init = find_block(blocks, f"{qualname}.__init__", block.line)
        if init is not None and block.start <= init.line <= block.end:
            header += lines[init.start - 1 : init.header_end]
            docstring = docstring or init.docstring
    return _dedent(header), docstring


def nodeid_source(
    source: str, nodeid: str, blocks: Sequence[Block] | None = None
) -> tuple[int, int, str] | None:
    """The source of the test a node id names (``path::test_f``, ``path::TestC::test_m``;
    a parametrization suffix is ignored)."""
    names = [n.split("[", 1)[0] for n in nodeid.split("::")[1:]]
    return symbol_source(source, ".".join(names), blocks) if names else None


def choose_usage_example(tests: Iterable[str], exists: Callable[[str], bool]) -> str | None:
    """The usage example of a symbol: the first, in node id order, of the tests that reach it
    and exist on the base tree (``exists``)."""
    for nodeid in sorted(set(tests)):
        if exists(nodeid):
            return nodeid
    return None


# -- fixtures ---------------------------------------------------------------------------------


def conftest_chain(test_dir: str) -> list[str]:
    """The ``conftest.py`` files that apply to a test in ``test_dir`` (repository-relative),
    the repository root's first and the closest last."""
    parts = [p for p in test_dir.replace("\\", "/").strip("/").split("/") if p and p != "."]
    return ["/".join([*parts[:depth], "conftest.py"]) for depth in range(len(parts) + 1)]


def fixture_digest(path: str, source: str) -> str:
    material = f"fixtures\0{CONTEXT_VERSION}\0{path}\0{source}".encode("utf-8", "surrogateescape")
    return hashlib.sha256(material).hexdigest()


def conftest_fixtures(source: str) -> tuple[Fixture, ...]:
    """The module-level fixtures of a conftest, in source order; ``()`` when it does not parse."""
    try:
        module = cst.parse_module(source)
    except Exception:
        return ()
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    found: list[Fixture] = []
    for statement in wrapper.module.body:
        if not isinstance(statement, cst.FunctionDef):
            continue
        for decorator in statement.decorators:
            options = _fixture_options(decorator.decorator)
            if options is None:
                continue
            function = statement.name.value
            name = options.get("name")
            scope = options.get("scope")
            doc = statement.get_docstring(clean=True) or ""
            returns = statement.returns
            found.append(
                Fixture(
                    name=name if isinstance(name, str) else function,
                    scope=scope if isinstance(scope, str) else "function",
                    doc=(doc.strip().splitlines() or [""])[0],
                    line=positions[statement].start.line,
                    function=function if isinstance(name, str) and name != function else "",
                    autouse=options.get("autouse") is True,
                    returns=module.code_for_node(returns.annotation) if returns else "",
                )
            )
            break
    return tuple(found)


def fixtures_to_dicts(fixtures: Iterable[Fixture]) -> list[dict[str, Any]]:
    return [
        {
            "name": f.name,
            "scope": f.scope,
            "doc": f.doc,
            "line": f.line,
            "function": f.function,
            "autouse": f.autouse,
            "returns": f.returns,
        }
        for f in fixtures
    ]


def fixtures_from_dicts(data: Iterable[Mapping[str, Any]]) -> tuple[Fixture, ...]:
    return tuple(
        Fixture(
            name=str(d["name"]),
            scope=str(d["scope"]),
            doc=str(d["doc"]),
            line=int(d["line"]),
            function=str(d.get("function", "")),
            autouse=bool(d.get("autouse", False)),
            returns=str(d.get("returns", "")),
        )
        for d in data
    )


def available_fixtures(chain: Sequence[tuple[str, Sequence[Fixture]]]) -> list[dict[str, Any]]:
    """The fixtures a test beside the last conftest of ``chain`` can request, by name: a closer
    conftest's fixture overrides a farther one's of the same name (and a later definition in one
    file an earlier one). Sorted by name; the keys with default values are left out."""
    by_name: dict[str, dict[str, Any]] = {}
    for path, fixtures in chain:
        for fixture in fixtures:
            record: dict[str, Any] = {
                "name": fixture.name,
                "scope": fixture.scope,
                "doc": fixture.doc,
                "conftest": f"{path}:{fixture.line}",
            }
            if fixture.returns:
                record["returns"] = fixture.returns
            if fixture.autouse:
                record["autouse"] = True
            by_name[fixture.name] = record
    return [by_name[name] for name in sorted(by_name)]


def builtin_fixtures_note() -> str:
    return "pytest's builtin fixtures are available too: " + ", ".join(BUILTIN_FIXTURES)


# -- internals --------------------------------------------------------------------------------


def _fixture_options(decorator: cst.BaseExpression) -> dict[str, object] | None:
    """The literal options of a fixture decorator (``name``, ``scope``, ``autouse``); None when
    the decorator is not a fixture decorator."""
    call = decorator if isinstance(decorator, cst.Call) else None
    func = call.func if call is not None else decorator
    if not _is_fixture_name(func):
        return None
    options: dict[str, object] = {}
    if call is None:
        return options
    for index, arg in enumerate(call.args):
        keyword = arg.keyword.value if arg.keyword is not None else None
        if keyword is None and index == 0:
            keyword = "scope"  # pytest < 8 took the scope positionally
        if keyword is None:
            continue
        value = arg.value
        if isinstance(value, cst.SimpleString | cst.ConcatenatedString):
            evaluated = value.evaluated_value
            options[keyword] = evaluated if isinstance(evaluated, str) else None
        elif isinstance(value, cst.Name) and value.value in ("True", "False"):
            options[keyword] = value.value == "True"
        elif keyword == "scope":
            options[keyword] = "dynamic"
    return options


def _is_fixture_name(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Name):
        return node.value == "fixture"
    return isinstance(node, cst.Attribute) and node.attr.value == "fixture"


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _dedent(lines: Sequence[str]) -> str:
    if not lines:
        return ""
    cut = len(_indent(lines[0]))
    return "\n".join(line[cut:] if line[:cut].strip() == "" else line for line in lines)
