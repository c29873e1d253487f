"""Gathering impact evidence from the trees (I/O): the code graph, cached by content, and
what a test needs to see (touched source, callees, fixtures, usage examples; extracted by
:mod:`pytest_critic22.evidence.context` from each file's blocks, cached by content too).
Changed-line coverage of the preservation tests on the patched tree is
:mod:`pytest_critic22.evidence.coverage` (re-exported here)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_critic22.child.protocol import GENERATED_PREFIX
from pytest_critic22.evidence.codeblocks import (
    Block,
    SourceContext,
    context_digest,
    context_from_dict,
    context_to_dict,
    source_context,
)
from pytest_critic22.evidence.codefacts import (
    FileFacts,
    facts_digest,
    facts_from_dict,
    facts_to_dict,
    is_test_path,
)
from pytest_critic22.evidence.codescan import scan_file
from pytest_critic22.evidence.context import (
    Fixture,
    available_fixtures,
    builtin_fixtures_note,
    choose_usage_example,
    conftest_chain,
    conftest_fixtures,
    fixture_digest,
    fixtures_from_dicts,
    fixtures_to_dicts,
    nodeid_source,
    signature_of,
    symbol_source,
    unit_of,
)
from pytest_critic22.evidence.impact import (
    SymbolImpact,
    blast_radius,
    callees,
    edit_impact,
    module_tests,
)
from pytest_critic22.execution.child_files import read_tree_file
from pytest_critic22.execution.git import git
from pytest_critic22.execution.statedir import read_file, write_file
from pytest_critic22.model.patch import ParsedPatch

__all__ = [
    "Impact",
    "build_graph",
    "default_test_dir",
    "fixture_evidence",
    "gather_impact",
    "python_files",
]

#: The name the critic's test file gets in the test folder.
GENERATED_TEST = f"{GENERATED_PREFIX}<finding id>.py"


@dataclass(frozen=True, slots=True)
class Impact:
    evidence: dict[str, Any]  # what goes into the packet (before size bounding)
    symbols: Mapping[str, tuple[SymbolImpact, ...]]  # edit id -> touched symbols
    preservation_tests: tuple[str, ...]  # existing tests (on the base) that reach them
    radius: Mapping[str, int] = field(default_factory=dict)
    unparsed: tuple[str, ...] = ()
    scanned: int = 0
    cache_hits: int = 0
    context_built: int = 0  # files whose blocks the packet's context needed, built now
    context_hits: int = 0  # ... and read from the cache
    base_graph: Mapping[str, FileFacts] = field(default_factory=dict)  # the base's code graph


def python_files(tree: Path) -> list[str]:
    """Tracked and new (untracked, not ignored) .py files of a tree, repo-relative."""
    done = git(["ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "*.py"], tree)
    return sorted({p for p in done.stdout.split("\0") if p and (tree / p).is_file()})


def build_graph(
    tree: Path, cache_dir: Path | None, paths: Sequence[str] | None = None
) -> tuple[dict[str, FileFacts], int]:
    """Facts of every Python file of ``tree``; a file whose text the cache knows is not parsed."""
    graph: dict[str, FileFacts] = {}
    hits = 0
    for path in paths if paths is not None else python_files(tree):
        try:
            source = read_tree_file(tree, path).decode("utf-8", "surrogateescape")
        except OSError:
            continue
        digest = facts_digest(path, source)
        cached = _read_cached(cache_dir, digest)
        if cached is not None:
            graph[path] = cached
            hits += 1
            continue
        facts = scan_file(path, source)
        graph[path] = facts
        _write_cached(cache_dir, digest, facts)
    return graph, hits


def gather_impact(
    patch: ParsedPatch,
    base_tree: Path,
    patched_tree: Path,
    cache_dir: Path | None,
    *,
    test_dir: str | None = None,
    testpaths: Sequence[str] = (),
) -> Impact:
    """The impact evidence of a patch. ``test_dir`` is where the critic's test will be written
    (default: :func:`default_test_dir`); the fixtures listed are those available there."""
    patched_graph, hits_p = build_graph(patched_tree, cache_dir)
    base_graph, hits_b = build_graph(base_tree, cache_dir)
    symbols: dict[str, tuple[SymbolImpact, ...]] = {}
    edits: dict[str, Any] = {}
    for edit in patch.edits:
        if not edit.path.endswith(".py"):
            continue
        base_facts = base_graph.get(edit.old_path or "")
        patched_facts = patched_graph.get(edit.new_path or "")
        found = edit_impact(
            edit.path,
            base_facts,
            patched_facts,
            edit.removed_lines,
            edit.added_lines,
            patched_graph,
        )
        symbols[edit.edit_id] = tuple(found)
        known = patched_facts or base_facts
        edits[edit.edit_id] = {
            "file": edit.path,
            "module": known.module if known is not None else "",
            "symbols": [s.to_dict() for s in found],
        }
    # Preservation tests are tests that exist on the base and reach a touched symbol there;
    # an edit that touches no function or class reaches the tests that import its module.
    preservation: list[str] = []
    reached = [
        [test for symbol in found for test in symbol.tests]
        if found or is_test_path(edits[edit_id]["file"]) or not edits[edit_id]["module"]
        else module_tests(edits[edit_id]["module"], base_graph)
        for edit_id, found in symbols.items()
    ]
    for tests in reached:
        for test in tests:
            if _defined(base_graph, test) and test not in preservation:
                preservation.append(test)
    radius = blast_radius(symbols, files=len(patch.files), edited=[e.path for e in patch.edits])
    unparsed = tuple(sorted(p for p, f in patched_graph.items() if f.parse_error))
    evidence: dict[str, Any] = {
        "edits": edits,
        "blast_radius": radius,
        "preservation_tests": list(preservation),
        "unparsed_files": list(unparsed),
    }
    sources = _Sources((patched_tree, base_tree), (patched_graph, base_graph), cache_dir)
    touched = touched_source(patch, symbols, patched_tree, patched_graph, sources)
    evidence["touched_source"] = [t.record() for t in touched]
    evidence["callees"] = callee_evidence(patch, touched, patched_tree, patched_graph, sources)
    evidence["usage_examples"] = usage_examples(patch, symbols, base_tree, base_graph, sources)
    if test_dir is None:
        test_dir = default_test_dir(base_tree, preservation, testpaths)
    evidence["fixtures"] = fixture_evidence(base_tree, test_dir, cache_dir)
    return Impact(
        evidence=evidence,
        symbols=symbols,
        preservation_tests=tuple(preservation),
        radius=radius,
        unparsed=unparsed,
        scanned=len(patched_graph) + len(base_graph),
        cache_hits=hits_p + hits_b,
        context_built=sources.built,
        context_hits=sources.hits,
        base_graph=base_graph,
    )


@dataclass(slots=True)
class _Sources:
    """Files read once per gathering; each file's context (its blocks and module imports)
    built only for the files the packet shows something of, once, and cached by content."""

    roots: tuple[Path, ...]  # the trees it reads
    graphs: tuple[Mapping[str, FileFacts], ...] = ()  # each root's code graph, in that order
    cache_dir: Path | None = None
    text: dict[Path, str | None] = field(default_factory=dict)
    contexts: dict[Path, SourceContext] = field(default_factory=dict)
    built: int = 0  # contexts built from a source
    hits: int = 0  # contexts read from the cache

    def read(self, path: Path) -> str | None:
        """A tree's file (a path below one of the trees), read only inside its tree."""
        if path not in self.text:
            try:
                root = next(r for r in self.roots if r in path.parents)
                data = read_tree_file(root, path.relative_to(root))
                self.text[path] = data.decode("utf-8", "surrogateescape")
            except (OSError, StopIteration):
                self.text[path] = None
        return self.text[path]

    def blocks(self, path: Path) -> tuple[Block, ...]:
        return self.context(path).blocks

    def context(self, path: Path) -> SourceContext:
        """The file's blocks and imports; from the cache when it holds the file's text."""
        if path in self.contexts:
            return self.contexts[path]
        source, parses = self.read(path), self._parses(path)
        context = SourceContext((), "")  # what libcst gives a file it cannot parse
        if source is not None and parses is not False:
            digest = context_digest(source)
            try:
                context = context_from_dict(_read_json(self.cache_dir, digest))
                self.hits += 1
            except (KeyError, TypeError, ValueError):  # none, or malformed: built and written
                context = source_context(source, parses)
                self.built += 1
                _write_json(self.cache_dir, digest, context_to_dict(context))
        self.contexts[path] = context
        return context

    def _parses(self, path: Path) -> bool | None:
        """Whether libcst parses the file, as its tree's code graph found; None: not known."""
        for root, graph in zip(self.roots, self.graphs, strict=False):
            facts = graph.get(path.relative_to(root).as_posix()) if root in path.parents else None
            if facts is not None:
                return not facts.parse_error
        return None


@dataclass(slots=True)
class _Unit:
    """A touched function or class as shown in the packet."""

    symbol: str
    path: str
    block: Block
    source: str
    edits: list[str]

    def contains(self, other: _Unit) -> bool:
        return (
            self.path == other.path
            and self.block.start <= other.block.start
            and other.block.end <= self.block.end
        )

    def record(self) -> dict[str, Any]:
        return {
            "symbol": self.symbol,
            "file": self.path,
            "lines": [self.block.start, self.block.end],
            "edits": list(self.edits),
            "source": self.source,
        }


def _qualname(name: str, module: str) -> str:
    return name[len(module) + 1 :] if module and name.startswith(module + ".") else name


def touched_source(
    patch: ParsedPatch,
    symbols: Mapping[str, Sequence[SymbolImpact]],
    patched_tree: Path,
    graph: Mapping[str, FileFacts],
    sources: _Sources,
) -> list[_Unit]:
    """The full patched source of each touched function or class, in edit order: a method with
    its class's header, a nested function inside its outermost function; a unit inside another
    touched unit is shown once, as part of it. Removed symbols and module-level edits outside
    any definition add nothing (the hunk shows them)."""
    units: list[_Unit] = []
    for edit in patch.edits:
        facts = graph.get(edit.new_path or "")
        if facts is None or not edit.new_path:
            continue
        path = patched_tree / edit.new_path
        source = sources.read(path)
        blocks = sources.blocks(path)
        if source is None:
            continue
        for symbol in symbols.get(edit.edit_id, ()):
            qualname = _qualname(symbol.name, facts.module)
            hint = next(
                (
                    line
                    for line in edit.added_lines
                    for b in blocks
                    if b.qualname == qualname and b.start <= line <= b.end
                ),
                None,
            )
            unit = unit_of(blocks, qualname, hint)
            if unit is None:
                continue
            shown = symbol_source(source, unit.qualname, blocks, unit.line)
            if shown is None:  # pragma: no cover - unit_of found it in the same blocks
                continue
            name = f"{facts.module}.{unit.qualname}" if facts.module else unit.qualname
            new = _Unit(name, edit.new_path, unit, shown[2], [edit.edit_id])
            holder = next((u for u in units if u.contains(new)), None)
            if holder is not None:
                if edit.edit_id not in holder.edits:
                    holder.edits.append(edit.edit_id)
                continue
            inner = [u for u in units if new.contains(u)]
            for u in inner:
                new.edits = sorted(set(new.edits) | set(u.edits), key=_edit_order)
                units.remove(u)
            units.append(new)
    return units


def _edit_order(edit_id: str) -> tuple[int, str]:
    digits = edit_id.lstrip("e")
    return (int(digits) if digits.isdigit() else 0, edit_id)


def callee_evidence(
    patch: ParsedPatch,
    touched: Sequence[_Unit],
    patched_tree: Path,
    graph: Mapping[str, FileFacts],
    sources: _Sources,
) -> list[dict[str, Any]]:
    """Signature and docstring of each repository function or class the added lines use, in
    order of first use (edit order, then line); those whose source is shown already are not."""
    edits = [e for e in patch.edits if e.new_path and e.new_path in graph]
    found = callees(graph, [(e.new_path or "", e.added_lines) for e in edits])
    records: dict[str, dict[str, Any]] = {}
    for edit, items in zip(edits, found, strict=True):
        for name, path, definition in items:
            if name in records:
                if edit.edit_id not in records[name]["edits"]:
                    records[name]["edits"].append(edit.edit_id)
                continue
            if any(
                u.path == path and u.block.start <= definition.start <= u.block.end for u in touched
            ):
                continue
            source = sources.read(patched_tree / path)
            if source is None:
                continue
            blocks = sources.blocks(patched_tree / path)
            signature = signature_of(source, definition.qualname, blocks, definition.start)
            if signature is None:
                continue
            records[name] = {
                "name": name,
                "kind": definition.kind,
                "file": f"{path}:{definition.start}",
                "signature": signature[0],
                "docstring": signature[1],
                "edits": [edit.edit_id],
            }
    return list(records.values())


def usage_examples(
    patch: ParsedPatch,
    symbols: Mapping[str, Sequence[SymbolImpact]],
    base_tree: Path,
    base_graph: Mapping[str, FileFacts],
    sources: _Sources,
) -> list[dict[str, Any]]:
    """One existing test per touched symbol, as a usage example: the first, in node id order, of
    the tests that reach the symbol and exist on the base tree; its source as on the base, with
    its module's imports. A test chosen for several symbols is shown once."""

    examples: dict[str, dict[str, Any]] = {}
    for edit in patch.edits:
        for symbol in symbols.get(edit.edit_id, ()):
            nodeid = choose_usage_example(symbol.tests, lambda t: _defined(base_graph, t))
            if nodeid is None:
                continue
            if nodeid in examples:
                if symbol.name not in examples[nodeid]["exercises"]:
                    examples[nodeid]["exercises"].append(symbol.name)
                continue
            path = base_tree / nodeid.split("::", 1)[0]
            source = sources.read(path)
            shown = nodeid_source(source, nodeid, sources.blocks(path)) if source else None
            if source is None or shown is None:
                continue
            examples[nodeid] = {
                "test": nodeid,
                "exercises": [symbol.name],
                "imports": sources.context(path).imports,
                "source": shown[2],
            }
    return list(examples.values())


def default_test_dir(tree: Path, tests: Sequence[str], testpaths: Sequence[str] = ()) -> str:
    """Where the critic's test is written, relative to a tree: the folder of the first test
    that reaches the touched code, else the first ``testpaths`` entry, else ``tests/``, else
    the root ("")."""
    candidates = [str(Path(t.split("::", 1)[0]).parent) for t in tests]
    candidates += [*testpaths, "tests"]
    for candidate in candidates:
        path = Path(candidate)
        if candidate in ("", ".") or path.is_absolute() or ".." in path.parts:
            continue
        if (tree / path).is_dir() and not (tree / path).is_symlink():
            return path.as_posix()
    return ""


def fixture_evidence(tree: Path, test_dir: str, cache_dir: Path | None) -> dict[str, Any]:
    """The fixtures a test written in ``test_dir`` can request: those of the conftest.py files
    that apply there (the root's, then each folder's down to ``test_dir``), a closer one
    overriding a farther one, plus a note naming pytest's builtin fixtures. Each conftest's
    fixtures are cached by its content."""
    chain: list[tuple[str, tuple[Fixture, ...]]] = []
    for path in conftest_chain(test_dir):
        file = tree / path
        if not file.is_file():
            continue
        try:
            source = read_tree_file(tree, path).decode("utf-8", "surrogateescape")
        except OSError:
            continue
        digest = fixture_digest(path, source)
        cached = _read_json(cache_dir, digest)
        try:
            fixtures = fixtures_from_dicts(cached) if isinstance(cached, list) else None
        except (KeyError, TypeError, ValueError):
            fixtures = None
        if fixtures is None:
            fixtures = conftest_fixtures(source)
            _write_json(cache_dir, digest, fixtures_to_dicts(fixtures))
        chain.append((path, fixtures))
    folder = test_dir or "."
    return {
        "directory": folder,
        "test_file": f"{test_dir}/{GENERATED_TEST}" if test_dir else GENERATED_TEST,
        "conftests": [path for path, _ in chain],
        "available": available_fixtures(chain),
        "builtin": builtin_fixtures_note(),
    }


def _defined(graph: Mapping[str, FileFacts], nodeid: str) -> bool:
    """The test ``nodeid`` is defined in a file of ``graph``."""
    path, *names = nodeid.split("::")
    facts = graph.get(path)
    return facts is not None and any(d.qualname == ".".join(names) for d in facts.definitions)


def _read_cached(cache_dir: Path | None, digest: str) -> FileFacts | None:
    data = _read_json(cache_dir, digest)
    if data is None:
        return None
    try:
        return facts_from_dict(data)
    except (ValueError, KeyError, TypeError):
        return None


def _write_cached(cache_dir: Path | None, digest: str, facts: FileFacts) -> None:
    _write_json(cache_dir, digest, facts_to_dict(facts))


def _read_json(cache_dir: Path | None, digest: str) -> Any:
    if cache_dir is None:
        return None
    try:
        return json.loads(read_file(cache_dir / f"{digest}.json").decode("utf-8"))
    except (OSError, ValueError):
        return None


def _write_json(cache_dir: Path | None, digest: str, data: Any) -> None:
    if cache_dir is None:
        return
    # Atomic, and no link followed inside .critic22/ (the folders on the way, the file).
    write_file(cache_dir / f"{digest}.json", json.dumps(data))
