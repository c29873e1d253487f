"""Gathering impact evidence from the trees (I/O): the code graph, cached by content,
and changed-line coverage of the preservation tests on the patched tree."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_critic22.diffparse import ParsedPatch
from pytest_critic22.gitio import git
from pytest_critic22.impact import (
    FileFacts,
    SymbolImpact,
    blast_radius,
    edit_impact,
    facts_digest,
    facts_from_dict,
    facts_to_dict,
    is_test_path,
    scan_file,
    statement_lines,
)
from pytest_critic22.runner import run_pytest

__all__ = ["Impact", "build_graph", "changed_line_coverage", "gather_impact", "python_files"]


@dataclass(frozen=True, slots=True)
class Impact:
    evidence: dict[str, Any]  # what goes into the packet (before size bounding)
    symbols: Mapping[str, tuple[SymbolImpact, ...]]  # edit id -> touched symbols
    preservation_tests: tuple[str, ...]  # existing tests (on the base) that reach them
    radius: Mapping[str, int] = field(default_factory=dict)
    unparsed: tuple[str, ...] = ()
    scanned: int = 0
    cache_hits: int = 0


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
            source = (tree / path).read_bytes().decode("utf-8", "surrogateescape")
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
    patch: ParsedPatch, base_tree: Path, patched_tree: Path, cache_dir: Path | None
) -> Impact:
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
    # Preservation tests are tests that exist on the base and reach a touched symbol there.
    preservation: list[str] = []
    for items in symbols.values():
        for symbol in items:
            for test in symbol.tests:
                test_path = test.split("::", 1)[0]
                on_base = test_path in base_graph and _defined(base_graph[test_path], test)
                if on_base and test not in preservation:
                    preservation.append(test)
    radius = blast_radius(symbols, files=len(patch.files), edited=[e.path for e in patch.edits])
    unparsed = tuple(sorted(p for p, f in patched_graph.items() if f.parse_error))
    evidence = {
        "edits": edits,
        "blast_radius": radius,
        "preservation_tests": list(preservation),
        "unparsed_files": list(unparsed),
    }
    return Impact(
        evidence=evidence,
        symbols=symbols,
        preservation_tests=tuple(preservation),
        radius=radius,
        unparsed=unparsed,
        scanned=len(patched_graph) + len(base_graph),
        cache_hits=hits_p + hits_b,
    )


def changed_line_coverage(
    patch: ParsedPatch,
    patched_tree: Path,
    tests: Sequence[str],
    *,
    timeout: float,
    pythonpath: Sequence[Path],
) -> tuple[dict[str, list[int]], dict[str, list[int]], str]:
    """Run ``tests`` on the patched tree under coverage.py, the way diff-cover counts:
    added executable lines by new-file number, a multi-line statement as a whole.

    Returns (covered, uncovered, status) where status is the tests' run status
    ("passed", "failed", "error: ...").
    """
    executable: dict[str, list[int]] = {}
    for edit in patch.edits:
        if not edit.new_path or not edit.new_path.endswith(".py") or is_test_path(edit.new_path):
            continue
        source = (patched_tree / edit.new_path).read_text(encoding="utf-8", errors="replace")
        starts = statement_lines(source)
        lines = sorted({starts[ln] for ln in edit.added_lines if ln in starts})
        if lines:
            executable.setdefault(edit.new_path, [])
            executable[edit.new_path] = sorted(set(executable[edit.new_path]) | set(lines))
    if not executable:
        return {}, {}, "passed"
    if not tests:
        return {}, executable, "no preservation tests"
    try:
        import coverage  # noqa: F401  # a runtime dependency; the child imports it too
    except ImportError:  # pragma: no cover - declared as a dependency
        return {}, executable, "error: coverage.py is not installed"
    with tempfile.TemporaryDirectory(prefix="critic22-cov-") as tmp:
        data_file = Path(tmp) / ".coverage"
        include = ",".join(str(patched_tree / p) for p in executable)
        result = run_pytest(
            patched_tree,
            list(tests),
            timeout=timeout,
            pythonpath=pythonpath,
            module=["coverage", "run", f"--data-file={data_file}", f"--include={include}", "-m"],
        )
        executed = _executed_lines(data_file, patched_tree, executable)
    covered: dict[str, list[int]] = {}
    uncovered: dict[str, list[int]] = {}
    for path, lines in executable.items():
        hit = [ln for ln in lines if ln in executed.get(path, set())]
        miss = [ln for ln in lines if ln not in executed.get(path, set())]
        if hit:
            covered[path] = hit
        if miss:
            uncovered[path] = miss
    status = result.status if result.status != "error" else f"error: {result.reason}"
    return covered, uncovered, status


def _executed_lines(
    data_file: Path, tree: Path, paths: Mapping[str, list[int]]
) -> dict[str, set[int]]:
    from coverage import CoverageData

    if not data_file.exists():
        return {}
    data = CoverageData(basename=str(data_file))
    data.read()
    out: dict[str, set[int]] = {}
    measured = {os.path.realpath(f): f for f in data.measured_files()}
    for path in paths:
        real = os.path.realpath(tree / path)
        if real in measured:
            out[path] = set(data.lines(measured[real]) or ())
    return out


def _defined(facts: FileFacts, nodeid: str) -> bool:
    names = nodeid.split("::")[1:]
    qual = ".".join(names)
    return any(d.qualname == qual for d in facts.definitions)


def _read_cached(cache_dir: Path | None, digest: str) -> FileFacts | None:
    if cache_dir is None:
        return None
    try:
        data = json.loads((cache_dir / f"{digest}.json").read_text(encoding="utf-8"))
        return facts_from_dict(data)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_cached(cache_dir: Path | None, digest: str, facts: FileFacts) -> None:
    if cache_dir is None:
        return
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = cache_dir / f"{digest}.json.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(facts_to_dict(facts)), encoding="utf-8")
    os.replace(tmp, cache_dir / f"{digest}.json")
