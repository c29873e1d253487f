"""Where a source's functions and classes are, by line, and how it imports: what the packet
shows of a file is cut along these (pure: sources in, values out).

- :func:`definitions`: every function and class (:class:`Block`), as libcst reads them;
- :func:`module_imports`: the module-level ``import`` lines, as written;
- :func:`source_context`: both at once (:class:`SourceContext`), cacheable by content
  (:func:`context_digest`, :func:`context_to_dict`, :func:`context_from_dict`).

libcst is the reference, and slow: on an 8,000-line module its parse and position metadata
take seconds where Python's own parser takes a tenth of one. :func:`source_context` reads the
blocks with :mod:`ast` and the headers with :mod:`tokenize`, and asks libcst wherever the two
might not tell the same (a source Python cannot parse, carriage returns, form feeds, a
byte-order mark, a header the tokens do not confirm).
"""

from __future__ import annotations

import ast
import hashlib
import tokenize
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

__all__ = [
    "BLOCKS_VERSION",
    "Block",
    "SourceContext",
    "context_digest",
    "context_from_dict",
    "context_to_dict",
    "definitions",
    "module_imports",
    "source_context",
]

# Part of every source-context cache key: bump it whenever what is read from a source changes.
BLOCKS_VERSION = 1


@dataclass(frozen=True, slots=True)
class Block:
    """One function or class of a source, by line (1-based, inclusive)."""

    qualname: str  # "f", "Cls", "Cls.method", "outer.inner"
    kind: str  # "function" | "class"
    start: int  # the first line, decorators included
    line: int  # the ``def``/``class`` line
    header_end: int  # the line of the header's colon
    end: int
    docstring: str  # cleaned; "" when there is none


def definitions(source: str) -> tuple[Block, ...]:
    """Every function and class of ``source``, in source order; ``()`` when it does not parse.

    A qualname can occur twice (a property's getter and setter, a definition in both branches
    of an ``if``): :mod:`pytest_critic22.evidence.context` takes a line to tell them apart, else the
    last one wins, as it would when the module runs."""
    module = _parse(source)
    return _blocks_of(module) if module is not None else ()


def module_imports(source: str) -> str:
    """The module-level ``import`` statements of a source, as written (how its tests import)."""
    module = _parse(source)
    return _imports_of(module) if module is not None else ""


@dataclass(frozen=True, slots=True)
class SourceContext:
    """What the packet can show of one source: its blocks and its module-level imports."""

    blocks: tuple[Block, ...]
    imports: str


def source_context(source: str, parses: bool | None = None) -> SourceContext:
    """``SourceContext(definitions(source), module_imports(source))``, computed fast.

    ``parses`` says whether libcst parses ``source`` (the code graph knows: a file it could
    not parse has a ``parse_error``): False gives the empty context, as libcst would; True
    lets Python's parser and tokenizer do the work where they tell the same as libcst;
    None (not known) asks libcst."""
    if parses is False:
        return SourceContext((), "")
    fast = _fast_context(source) if parses else None
    if fast is not None:
        return fast
    module = _parse(source)
    if module is None:
        return SourceContext((), "")
    return SourceContext(_blocks_of(module), _imports_of(module))


def context_digest(source: str) -> str:
    """The cache key of a source's context: its text alone (a file's path does not change
    its blocks), so an unchanged file shares one entry across the trees."""
    material = f"source-context\0{BLOCKS_VERSION}\0{source}"
    return hashlib.sha256(material.encode("utf-8", "surrogateescape")).hexdigest()


def context_to_dict(context: SourceContext) -> dict[str, Any]:
    return {
        "blocks": [
            [b.qualname, b.kind, b.start, b.line, b.header_end, b.end, b.docstring]
            for b in context.blocks
        ],
        "imports": context.imports,
    }


def context_from_dict(data: Mapping[str, Any]) -> SourceContext:
    """The context a cache entry holds; raises (KeyError, TypeError, ValueError) on a malformed
    one, which the caller then rebuilds."""
    blocks = []
    for qualname, kind, start, line, header_end, end, docstring in data["blocks"]:
        numbers = (start, line, header_end, end)
        if not all(type(n) is int for n in numbers):
            raise ValueError("a block's lines are not integers")
        if not isinstance(qualname, str) or kind not in ("function", "class"):
            raise ValueError("a block's name or kind is malformed")
        if not isinstance(docstring, str):
            raise ValueError("a block's docstring is not text")
        blocks.append(Block(qualname, kind, start, line, header_end, end, docstring))
    imports = data["imports"]
    if not isinstance(imports, str):
        raise ValueError("the imports are not text")
    return SourceContext(tuple(blocks), imports)


# -- internals --------------------------------------------------------------------------------


def _parse(source: str) -> cst.Module | None:
    try:
        return cst.parse_module(source)
    except Exception:  # libcst's ParserSyntaxError, or anything else: nothing to show
        return None


def _blocks_of(module: cst.Module) -> tuple[Block, ...]:
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    collector = _Blocks()
    wrapper.visit(collector)
    return tuple(collector.blocks)


def _imports_of(module: cst.Module) -> str:
    kept = []
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine) and all(
            isinstance(s, cst.Import | cst.ImportFrom) for s in statement.body
        ):
            text = module.code_for_node(statement.with_changes(leading_lines=()))
            kept.append(text.rstrip("\n"))
    return "\n".join(kept) + ("\n" if kept else "")


class _Blocks(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        super().__init__()
        self.blocks: list[Block] = []
        self.stack: list[str] = []

    def _add(self, node: cst.FunctionDef | cst.ClassDef, kind: str) -> None:
        name = node.name.value
        qualname = ".".join([*self.stack, name])
        position = self.get_metadata(PositionProvider, node)
        start = position.start.line
        if node.decorators:
            start = self.get_metadata(PositionProvider, node.decorators[0]).start.line
        # The header as written, up to its colon: the node with a one-line body and no
        # decorators is exactly the header's lines plus " ..." after the colon.
        bare = node.with_changes(
            decorators=(),
            leading_lines=(),
            body=cst.SimpleStatementSuite([cst.Expr(cst.Ellipsis())]),
        )
        header_lines = len(cst.Module([]).code_for_node(bare).rstrip("\n").split("\n"))
        self.blocks.append(
            Block(
                qualname=qualname,
                kind=kind,
                start=start,
                line=position.start.line,
                header_end=position.start.line + header_lines - 1,
                end=position.end.line,
                docstring=node.get_docstring(clean=True) or "",
            )
        )
        self.stack.append(name)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._add(node, "class")

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.stack.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._add(node, "function")

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.stack.pop()


# What Python's parser cannot be trusted to see as libcst does: line ends other than "\n"
# (libcst keeps "\r\n" in the text it shows), form feeds in indentation, a byte-order mark.
_UNSURE = ("\r", "\f", "\ufeff", "\0")

_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _fast_context(source: str) -> SourceContext | None:
    """The context as libcst gives it, from :mod:`ast` and :mod:`tokenize`; None when that
    cannot be told for sure (the caller asks libcst). A source libcst cannot parse must not
    come here: Python's parser accepts some of them."""
    if any(mark in source for mark in _UNSURE):
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, UnicodeError):
        return None
    lines = source.split("\n")
    blocks: list[Block] = []
    for node, qualname in _walk_definitions(tree.body, ()):
        block = _fast_block(node, qualname, lines)
        if block is None:
            return None
        blocks.append(block)
    imports = _fast_imports(tree, lines)
    if imports is None:
        return None
    return SourceContext(tuple(blocks), imports)


def _walk_definitions(
    body: Sequence[ast.stmt], outer: tuple[str, ...]
) -> Iterator[tuple[_Definition, str]]:
    """Every function and class in source order, outer before inner, with its qualname (the
    names of the functions and classes around it, as :class:`_Blocks` names it). Only
    statements can hold a definition, so expressions are not walked."""
    for statement in body:
        if isinstance(statement, _Definition):
            names = (*outer, statement.name)
            yield statement, ".".join(names)
            yield from _walk_definitions(statement.body, names)
            continue
        for field in statement._fields:
            value = getattr(statement, field, None)
            if not isinstance(value, list):
                continue
            for item in value:
                if isinstance(item, ast.stmt):
                    yield from _walk_definitions([item], outer)
                elif isinstance(item, ast.ExceptHandler | ast.match_case):
                    yield from _walk_definitions(item.body, outer)


def _fast_block(node: _Definition, qualname: str, lines: Sequence[str]) -> Block | None:
    """One :class:`Block` as :class:`_Blocks` makes it: its header read off the tokens from
    its first decorator to the colon; None when the tokens do not confirm what ast says."""
    start = node.lineno
    if node.decorator_list:
        # The "@" is on the decorator's line, or above it when the decorator is wrapped.
        start = node.decorator_list[0].lineno
        while start > 1 and not lines[start - 1].lstrip().startswith("@"):
            start -= 1
    header = _header(lines, start, bool(node.decorator_list))
    if header is None:
        return None
    keyword_line, colon_line, after_decorators = header
    if keyword_line != node.lineno or node.end_lineno is None:
        return None
    return Block(
        qualname=qualname,
        kind="class" if isinstance(node, ast.ClassDef) else "function",
        start=start,
        line=node.lineno,
        # libcst writes the lines between the last decorator and the ``def`` with the header
        # even when the decorators are left out, so _Blocks counts them in: so does this.
        header_end=colon_line + after_decorators,
        end=node.end_lineno,
        docstring=ast.get_docstring(node, clean=True) or "",
    )


def _header(lines: Sequence[str], start: int, decorated: bool) -> tuple[int, int, int] | None:
    """(the ``def``/``class`` keyword's line, the header colon's line, the lines between the
    last decorator and the keyword), from the tokens of the lines from ``start`` on."""
    readline = (lines[i] + "\n" for i in range(start - 1, len(lines))).__next__
    depth = 0
    keyword = 0
    decorator_end = 0
    expect_at = decorated
    try:
        for token in tokenize.generate_tokens(readline):
            kind, text, (row, _col) = token.type, token.string, token.start
            line = start + row - 1
            if kind in (tokenize.INDENT, tokenize.DEDENT, tokenize.NL, tokenize.COMMENT):
                continue
            if expect_at:  # the first token must be the first decorator's "@"
                if (kind, text) != (tokenize.OP, "@"):
                    return None
                expect_at = False
            if kind == tokenize.OP and text in "([{":
                depth += 1
            elif kind == tokenize.OP and text in ")]}":
                depth -= 1
            elif depth:
                continue
            elif kind == tokenize.NEWLINE and not keyword:
                decorator_end = line
            elif kind == tokenize.NAME and text in ("def", "class", "async") and not keyword:
                keyword = line
            elif kind == tokenize.OP and text == ":" and keyword:
                between = keyword - decorator_end - 1 if decorated else 0
                return keyword, line, between
            elif kind == tokenize.ENDMARKER:
                return None
    except (tokenize.TokenError, SyntaxError, StopIteration):
        return None
    return None


def _fast_imports(tree: ast.Module, lines: Sequence[str]) -> str | None:
    """The module-level import lines as :func:`module_imports` gives them: each logical line
    whose statements are all imports, verbatim; None when a line is continued with a
    backslash after its last statement (libcst would join what ast sees apart)."""
    groups: list[list[ast.stmt]] = []
    for statement in tree.body:
        previous = groups[-1][-1] if groups else None
        if previous is not None and statement.lineno == previous.end_lineno:
            groups[-1].append(statement)  # ``import a; import b``: one line
        else:
            groups.append([statement])
    kept = []
    for group in groups:
        last = group[-1]
        if last.end_lineno is None or last.end_col_offset is None:
            return None
        end_line = lines[last.end_lineno - 1]
        rest = end_line.encode("utf-8", "surrogateescape")[last.end_col_offset :]
        if rest.split(b"#", 1)[0].rstrip().endswith(b"\\"):
            return None
        if all(isinstance(s, ast.Import | ast.ImportFrom) for s in group):
            kept.append("\n".join(lines[group[0].lineno - 1 : last.end_lineno]))
    return "\n".join(kept) + ("\n" if kept else "")
