"""What one Python file holds, for the code graph: its definitions, imports and references
(:class:`FileFacts`, made by :func:`pytest_critic22.evidence.codescan.scan_file`).

Pure. The facts depend only on the file's path and text, so they are cached by content digest
(:func:`facts_digest`, :func:`facts_to_dict`, :func:`facts_from_dict`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FACTS_VERSION",
    "Definition",
    "FileFacts",
    "Reference",
    "facts_digest",
    "facts_from_dict",
    "facts_to_dict",
    "is_test_path",
    "module_name",
]

# Part of every cache key: bump it whenever the facts (or how a file is scanned) change, so a
# cache written by an older version is never read as current.
FACTS_VERSION = 3


@dataclass(frozen=True, slots=True)
class Definition:
    qualname: str  # within the module: "f", "Cls", "Cls.method"
    kind: str  # "function" | "class"
    start: int
    end: int
    signature: str  # "f(a, b=1, *, c)"; "" for classes


@dataclass(frozen=True, slots=True)
class Reference:
    target: str  # a fully qualified name, best effort: "pkg.mod.Cls.method"
    line: int
    scope: str  # qualname of the enclosing function/class ("" at module level)
    kind: str  # "call" | "attribute" | "name" | "import"


@dataclass(frozen=True, slots=True)
class FileFacts:
    path: str
    module: str
    definitions: tuple[Definition, ...] = ()
    references: tuple[Reference, ...] = ()
    parse_error: str = ""
    exports: tuple[tuple[str, str], ...] = ()  # module-level imports: (local name, target)
    stars: tuple[tuple[str, int], ...] = ()  # ``from M import *``: (absolute M, line)
    # A literal ``__all__`` (list/tuple of strings); None when absent or not a literal.
    dunder_all: tuple[str, ...] | None = None


def module_name(path: str) -> str:
    """``src/pkg/mod.py`` -> ``pkg.mod``; ``pkg/__init__.py`` -> ``pkg``."""
    parts = path.replace("\\", "/").split("/")
    if parts and parts[0] in ("src", "lib") and len(parts) > 1:
        parts = parts[1:]
    if parts[-1].endswith(".py"):
        parts[-1] = parts[-1][:-3]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(p for p in parts if p)


def is_test_path(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
        or "/tests/" in f"/{path}"
        or "/test/" in f"/{path}"
    )


def facts_digest(path: str, source: str) -> str:
    material = f"{FACTS_VERSION}\0{path}\0{source}".encode("utf-8", "surrogateescape")
    return hashlib.sha256(material).hexdigest()


def facts_to_dict(facts: FileFacts) -> dict[str, Any]:
    return {
        "path": facts.path,
        "module": facts.module,
        "parse_error": facts.parse_error,
        "definitions": [
            [d.qualname, d.kind, d.start, d.end, d.signature] for d in facts.definitions
        ],
        "references": [[r.target, r.line, r.scope, r.kind] for r in facts.references],
        "exports": [list(e) for e in facts.exports],
        "stars": [list(s) for s in facts.stars],
        "dunder_all": list(facts.dunder_all) if facts.dunder_all is not None else None,
    }


def facts_from_dict(data: Mapping[str, Any]) -> FileFacts:
    return FileFacts(
        path=data["path"],
        module=data["module"],
        parse_error=data.get("parse_error", ""),
        definitions=tuple(Definition(*d) for d in data["definitions"]),
        references=tuple(Reference(*r) for r in data["references"]),
        exports=tuple((a, b) for a, b in data.get("exports", [])),
        stars=tuple((m, int(line)) for m, line in data.get("stars", [])),
        dunder_all=None if data.get("dunder_all") is None else tuple(data["dunder_all"]),
    )
