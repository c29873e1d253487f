"""Per-test outcomes of a run (pure): JUnit names as node ids, and collection problems.

The runner reads outcomes from JUnit XML, where a test is ``classname::name`` with the
module written in dots (``tests.test_x.TestA::test_b[1]``). Knowing the tree's Python files,
that is turned back into the node id pytest takes (``tests/test_x.py::TestA::test_b[1]``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pytest_critic22.model.nodeids import check_nodeid

__all__ = ["as_nodeids", "collection_problem", "junit_to_nodeid"]


def junit_to_nodeid(name: str, files: Iterable[str]) -> str | None:
    """The node id of a JUnit ``classname::name`` given the tree's ``.py`` files (None: it
    names none of them, or is not a safe node id)."""
    classname, _, test = name.partition("::")
    if not classname or not test:
        return None
    best: tuple[str, str] | None = None
    for path in files:
        if not path.endswith(".py"):
            continue
        module = path[: -len(".py")].replace("/", ".")
        if (classname == module or classname.startswith(module + ".")) and (
            best is None or len(module) > len(best[1])
        ):
            best = (path, module)
    if best is None:
        return None
    path, module = best
    classes = [c for c in classname[len(module) :].split(".") if c]
    nodeid = "::".join([path, *classes, test])
    return nodeid if check_nodeid(nodeid) is None else None


def as_nodeids(tests: Mapping[str, str], files: Iterable[str]) -> dict[str, str]:
    """JUnit name -> status, as node id -> status; a name with no node id keeps its JUnit
    name (prefixed ``junit:``), so it is still compared, never silently dropped."""
    known = sorted(set(files))
    out: dict[str, str] = {}
    for name, status in tests.items():
        nodeid = junit_to_nodeid(name, known)
        out[nodeid if nodeid is not None else f"junit:{name}"] = status
    return out


def collection_problem(exit_code: int | None, reason: str, tests: Mapping[str, str]) -> str | None:
    """Why a run's per-test outcomes say nothing (None: they do): a timeout, a module that
    cannot be collected, or a run that collected no test at all."""
    if exit_code is None:
        return reason or "timed out"
    broken = sorted(name[2:] for name in tests if name.startswith("::"))
    if broken:
        return f"{broken[0]} cannot be collected"
    if exit_code in (2, 3, 4, 5) or not tests:
        return reason or f"pytest exited with {exit_code}"
    return None
