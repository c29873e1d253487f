"""Measured test impact (I/O): which of the base's tests *execute* which lines.

The static graph cannot see a call through a receiver it cannot type (``self.obj.method()``
where a fixture set ``obj``, a base class reached through a subclass's construction). So the
base's suite runs once per base commit under coverage.py with its ``test_function`` dynamic
contexts, in the sandbox, on the pristine base tree; the map (file -> line -> tests) is
cached under ``.critic22/cache/impact/``, keyed by the base commit and the digest of the
base's test files. pytest-testmon selects tests the same way; coverage.py is the tracer.

A touched line selects the tests that run the innermost function (or else class) around it
on the base: a change in one branch may reach a test that only ran the other one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_critic22.evidence.codefacts import is_test_path
from pytest_critic22.execution.child_files import child_tempdir, private_copy
from pytest_critic22.execution.git import GitError, git
from pytest_critic22.execution.statedir import read_file, write_file
from pytest_critic22.model.nodeids import is_nodeid

if TYPE_CHECKING:
    from pytest_critic22.evidence.codefacts import FileFacts
    from pytest_critic22.execution.sandbox import Sandbox
    from pytest_critic22.model.patch import AtomicEdit, ParsedPatch

__all__ = [
    "ImpactMap",
    "MapUnavailable",
    "base_lines",
    "map_key",
    "measured_tests",
    "obtain_map",
]

FORMAT = 1
# Measured mode asked for by name: the suite runs to its end, within this bound (seconds).
MEASURED_TIMEOUT = 3600.0


@dataclass(frozen=True, slots=True)
class ImpactMap:
    """The base's tests (node ids) and, per file and line, the indices of those that ran it."""

    tests: tuple[str, ...]
    lines: Mapping[str, Mapping[int, tuple[int, ...]]]
    seconds: float  # how long recording took
    status: str  # the recording run's status ("passed", "failed")

    def tests_for(self, path: str, lines: Iterable[int]) -> list[str]:
        by_line = self.lines.get(path, {})
        found = sorted({i for ln in lines for i in by_line.get(ln, ())})
        return [self.tests[i] for i in found]

    def to_dict(self) -> dict[str, object]:
        return {
            "format": FORMAT,
            "tests": list(self.tests),
            "lines": {p: {str(k): list(v) for k, v in m.items()} for p, m in self.lines.items()},
            "seconds": round(self.seconds, 3),
            "status": self.status,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> ImpactMap:
        if data.get("format") != FORMAT:
            raise ValueError("another format")
        tests = tuple(str(t) for t in data["tests"])  # type: ignore[attr-defined]
        raw = data["lines"]
        assert isinstance(raw, dict)
        lines = {
            str(p): {int(k): tuple(int(i) for i in v) for k, v in m.items()} for p, m in raw.items()
        }
        return cls(tests, lines, float(data["seconds"]), str(data["status"]))  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class MapUnavailable:
    """Why there is no map: the suite is over the budget, or it could not be recorded."""

    reason: str
    over_budget: float = 0.0  # > 0: the budget (seconds) the suite did not fit in


def map_key(repo: Path, base_commit: str) -> str:
    """The cache key: the base commit and the digest of its test files (blob ids)."""
    listing = git(["ls-tree", "-r", "--full-tree", base_commit], repo).stdout
    digest = hashlib.sha256(base_commit.encode())
    for line in sorted(listing.splitlines()):
        meta, _, path = line.partition("\t")
        if is_test_path(path):
            digest.update(f"{meta.split()[-1]} {path}\n".encode())
    return digest.hexdigest()[:32]


def obtain_map(
    key: str,
    cache_dir: Path,
    base_tree: Path,
    *,
    budget: float,
    pythonpath: Sequence[Path],
    sandbox: Sandbox | None,
    scratch: Path | None,
    testpaths: Sequence[str] = (),
) -> tuple[ImpactMap | MapUnavailable, bool]:
    """The cached map, else one recorded now within ``budget`` seconds (and cached: a suite
    over the budget is remembered too, until a larger budget is given). Returns the map (or
    why none) and whether it came from the cache."""
    cached = _read(cache_dir, key)
    if isinstance(cached, ImpactMap):
        return cached, True
    if isinstance(cached, MapUnavailable) and cached.over_budget >= budget:
        return cached, True
    found = record_map(
        base_tree,
        budget=budget,
        pythonpath=pythonpath,
        sandbox=sandbox,
        scratch=scratch,
        testpaths=testpaths,
    )
    if isinstance(found, ImpactMap) or found.over_budget:
        _write(cache_dir, key, found)
    return found, False


def record_map(
    base_tree: Path,
    *,
    budget: float,
    pythonpath: Sequence[Path],
    sandbox: Sandbox | None,
    scratch: Path | None,
    testpaths: Sequence[str] = (),
) -> ImpactMap | MapUnavailable:
    """Run the base's suite under coverage.py's ``test_function`` contexts, sandboxed."""
    from pytest_critic22.execution.runner import run_pytest

    if scratch is not None:
        scratch.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with child_tempdir("critic22-impact-", scratch) as tmp:
        data_file = Path(tmp) / ".coverage"
        rcfile = Path(tmp) / "coveragerc"
        rcfile.write_text(
            "[run]\ndynamic_context = test_function\n"
            f"data_file = {data_file}\ninclude =\n    {base_tree}/*\n"
        )
        result = run_pytest(
            base_tree,
            [*testpaths],
            timeout=budget,
            pythonpath=pythonpath,
            module=["coverage", "run", f"--rcfile={rcfile}", "-m"],
            sandbox=sandbox,
            writable=[Path(tmp)],
            scratch=scratch,
        )
        seconds = time.monotonic() - started
        if result.exit_code is None:  # out of time
            return MapUnavailable(f"the suite takes longer than {budget:g} s", budget)
        if result.status == "error" and not result.tests:
            return MapUnavailable(f"the base's suite did not run: {result.reason}")
        contexts = _contexts(data_file, base_tree)
    if contexts is None:
        return MapUnavailable("the base's suite ran but left no coverage data")
    return _as_map(contexts, _test_files(base_tree), seconds, result.status)


def base_lines(edit: AtomicEdit, facts: FileFacts | None) -> list[int]:
    """The base's lines a touched edit reaches: the lines of the innermost function (or
    else class) around each removed line or insertion point, else those lines themselves."""
    from pytest_critic22.evidence.impact import enclosing

    touched = set(edit.removed_lines) or set(_insertion_points(edit))
    if facts is None:
        return sorted(touched)
    lines = set(touched)
    for definition in enclosing(facts, touched):
        lines.update(range(definition.start, definition.end + 1))
    return sorted(lines)


def measured_tests(
    patch: ParsedPatch, impact_map: ImpactMap, graph: Mapping[str, FileFacts]
) -> list[str]:
    """The base's tests that execute what the patch touches (edits of test files aside)."""
    found: list[str] = []
    for edit in patch.edits:
        path = edit.old_path
        if not path or not path.endswith(".py") or is_test_path(path):
            continue
        for test in impact_map.tests_for(path, base_lines(edit, graph.get(path))):
            if test not in found:
                found.append(test)
    return found


def _insertion_points(edit: AtomicEdit) -> list[int]:
    """An insertion's base neighbours: the old lines just before and after the first '+'."""
    old = edit.old_start
    for line in edit.hunk.splitlines()[1:]:
        if line.startswith("+"):
            return [n for n in (old - 1, old) if n >= 1]
        if line.startswith((" ", "-")) or line == "":
            old += 1
    return [edit.old_start] if edit.old_start >= 1 else []


def _contexts(data_file: Path, tree: Path) -> dict[str, dict[int, list[str]]] | None:
    from coverage import CoverageData

    # The child wrote it: read a private copy of a regular file (no link followed).
    with tempfile.TemporaryDirectory(prefix="critic22-impactdata-") as private:
        copy = private_copy(data_file, Path(private), ".coverage")
        if copy is None:
            return None
        data = CoverageData(basename=str(copy))
        data.read()
        root = os.path.realpath(tree)
        out: dict[str, dict[int, list[str]]] = {}
        for measured in data.measured_files():
            real = os.path.realpath(measured)
            if not real.startswith(root + os.sep):
                continue
            relative = Path(os.path.relpath(real, root)).as_posix()
            if is_test_path(relative):
                continue
            by_line = {
                ln: [c for c in ctxs if c] for ln, ctxs in data.contexts_by_lineno(measured).items()
            }
            out[relative] = {ln: c for ln, c in by_line.items() if c}
        return out


def _test_files(tree: Path) -> list[str]:
    try:
        listing = git(["ls-files", "-z"], tree).stdout
    except GitError:
        return []
    return [p for p in listing.split("\0") if p.endswith(".py") and is_test_path(p)]


def _as_map(
    contexts: Mapping[str, Mapping[int, Sequence[str]]],
    test_files: Sequence[str],
    seconds: float,
    status: str,
) -> ImpactMap:
    """coverage.py's contexts (``pkg.tests.test_x.TestC.test_m``) as pytest node ids."""
    modules: dict[str, str] = {}
    for path in sorted(test_files, key=lambda p: -p.count("/")):
        dotted = path[: -len(".py")].split("/")
        for start in range(len(dotted)):
            modules.setdefault(".".join(dotted[start:]), path)
    tests: list[str] = []
    index: dict[str, int] = {}
    named: dict[str, int | None] = {}
    lines: dict[str, dict[int, tuple[int, ...]]] = {}
    for path, by_line in sorted(contexts.items()):
        for line, names in sorted(by_line.items()):
            found: set[int] = set()
            for name in names:
                if name not in named:
                    nodeid = _nodeid(name, modules)
                    if nodeid is not None and nodeid not in index:
                        index[nodeid] = len(tests)
                        tests.append(nodeid)
                    named[name] = index[nodeid] if nodeid is not None else None
                if named[name] is not None:
                    found.add(named[name])  # type: ignore[arg-type]
            if found:
                lines.setdefault(path, {})[line] = tuple(sorted(found))
    return ImpactMap(tuple(tests), lines, seconds, status)


def _nodeid(context: str, modules: Mapping[str, str]) -> str | None:
    """``tests.test_x.TestC.test_m`` -> ``tests/test_x.py::TestC::test_m`` (the longest
    module name that is a test file wins); None for a name of no test file."""
    nodeid = _dotted_nodeid(context, modules)
    return nodeid if nodeid is not None and is_nodeid(nodeid) else None


def _dotted_nodeid(context: str, modules: Mapping[str, str]) -> str | None:
    parts = context.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        path = modules.get(".".join(parts[:cut]))
        if path is None:
            continue
        rest = parts[cut:]
        if len(rest) == 1 and rest[0].startswith("test"):
            return f"{path}::{rest[0]}"
        if len(rest) == 2 and rest[1].startswith(("test", "runTest")):
            return f"{path}::{rest[0]}::{rest[1]}"
        return None
    return None


def _read(cache_dir: Path, key: str) -> ImpactMap | MapUnavailable | None:
    try:
        data = json.loads(read_file(cache_dir / f"{key}.json").decode("utf-8"))
    except (OSError, ValueError):
        return None
    try:
        if data.get("unavailable"):
            return MapUnavailable(str(data["unavailable"]), float(data["over_budget"]))
        return ImpactMap.from_dict(data)
    except (AttributeError, KeyError, TypeError, ValueError, AssertionError):
        return None


def _write(cache_dir: Path, key: str, found: ImpactMap | MapUnavailable) -> None:
    if isinstance(found, ImpactMap):
        data: dict[str, object] = found.to_dict()
    else:
        data = {"format": FORMAT, "unavailable": found.reason, "over_budget": found.over_budget}
    with contextlib.suppress(OSError):  # a cache not written is a cache miss next time
        write_file(cache_dir / f"{key}.json", json.dumps(data))


@dataclass(frozen=True, slots=True)
class Selection:
    """The existing tests that guard a patch, and how each was found."""

    tests: tuple[str, ...]
    found_by: Mapping[str, str]  # test -> "graph" | "measured" | "graph+measured" | "all"
    notes: tuple[str, ...] = ()
    record: Mapping[str, object] | None = None  # for the ledger


def select_tests(
    mode: str,
    patch: ParsedPatch,
    graph_tests: Sequence[str],
    graph: Mapping[str, FileFacts],
    *,
    repo: Path,
    base_commit: str,
    base_tree: Path,
    cache_dir: Path,
    budget: float,
    pythonpath: Sequence[Path],
    sandbox: Sandbox | None,
    scratch: Path | None,
    testpaths: Sequence[str] = (),
) -> Selection:
    """``--critic22-preservation``: graph, measured (graph + the map), auto (measured when
    the map is cached or the suite fits ``budget``, else graph, with a note), all (every
    test of the base), explicit or off (none). ``graph`` is the base's code graph."""
    if mode in ("explicit", "off"):
        return Selection((), {})
    found: dict[str, str] = {t: "graph" for t in graph_tests}
    if mode == "all":
        for test in every_test(graph):
            found.setdefault(test, "all")
        return Selection(tuple(found), found)
    if mode == "graph":
        return Selection(tuple(found), found)
    key = map_key(repo, base_commit)
    got, cached = obtain_map(
        key,
        cache_dir,
        base_tree,
        budget=budget if mode == "auto" else MEASURED_TIMEOUT,
        pythonpath=pythonpath,
        sandbox=sandbox,
        scratch=scratch,
        testpaths=testpaths,
    )
    if isinstance(got, MapUnavailable):
        setting = " (ini critic22_impact_budget)" if got.over_budget else ""
        note = f"preservation by the code graph only: {got.reason}{setting}"
        return Selection(tuple(found), found, (note,), {"map": key, "unavailable": got.reason})
    for test in measured_tests(patch, got, graph):
        found[test] = "graph+measured" if found.get(test) == "graph" else "measured"
    record = {
        "map": key,
        "cached": cached,
        "tests": len(got.tests),
        "seconds": round(got.seconds, 3),
    }
    return Selection(tuple(found), found, (), record)


def every_test(graph: Mapping[str, FileFacts]) -> list[str]:
    """Every test function and test method of the base's test files, as node ids."""
    from pytest_critic22.evidence.impact import file_tests

    tests = [
        test
        for path in sorted(graph)
        if is_test_path(path) and path.rsplit("/", 1)[-1] != "conftest.py"
        for test in file_tests(path, graph[path])
    ]
    return list(dict.fromkeys(tests))
