"""The pipeline's evidence stage: impact evidence and preservation obligations into the
packet, changed-line coverage, and the deterministic engage decision.

Never fatal: a tree that cannot be built leaves the packet without impact evidence and
says so in the notes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_critic22.execution.git import GitError
from pytest_critic22.model.nodeids import is_nodeid
from pytest_critic22.model.packet import ReviewPacket

if TYPE_CHECKING:
    from pytest_critic22.config.settings import ReviewOptions
    from pytest_critic22.critic.engage import EngageDecision
    from pytest_critic22.execution.ledger import Ledger
    from pytest_critic22.model.patch import ParsedPatch
    from pytest_critic22.pipeline.services import Services

__all__ = ["Evidence", "engage_decision", "gather_evidence", "group_by_file", "test_dir_for"]


@dataclass(frozen=True, slots=True)
class Evidence:
    packet: ReviewPacket
    preservation: dict[str, tuple[str, ...]] = field(default_factory=dict)
    test_dir: str = ""
    uncovered: dict[str, list[int]] = field(default_factory=dict)
    coverage_status: str = ""
    radius: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def test_dir_for(
    preservation: dict[str, tuple[str, ...]], testpaths: tuple[str, ...], repo: Path
) -> str:
    """Where the critic's tests go, relative to a tree: the folder of the tests that reach
    the touched code, else the first ``testpaths`` entry, else ``tests/``, else the root."""
    candidates = [str(Path(group).parent) for group in preservation]
    candidates += list(testpaths)
    candidates.append("tests")
    for candidate in candidates:
        path = Path(candidate)
        if candidate in ("", ".") or path.is_absolute() or ".." in path.parts:
            continue
        if (repo / path).is_dir() and not (repo / path).is_symlink():
            return path.as_posix()
    return ""


def gather_evidence(
    opts: ReviewOptions,
    patch: ParsedPatch,
    packet: ReviewPacket,
    svc: Services,
    *,
    with_coverage: bool,
) -> Evidence:
    """Impact evidence and preservation obligations into the packet."""
    from pytest_critic22.evidence.bounding import bound_evidence
    from pytest_critic22.evidence.coverage import changed_line_coverage
    from pytest_critic22.evidence.gather import fixture_evidence, gather_impact
    from pytest_critic22.evidence.measured import Selection
    from pytest_critic22.execution.runner import detect_pythonpath
    from pytest_critic22.execution.trees import TreeError, Variant
    from pytest_critic22.model.packet import blind

    explicit = list(packet.preservation_obligations)
    try:
        base_tree = svc.trees.get(Variant.base())
        patched_tree = svc.trees.get(Variant.patched(patch))
        state = svc.state_dir()
        impact = gather_impact(patch, base_tree, patched_tree, state / "cache" / "graph")
    except (TreeError, GitError, OSError) as exc:
        svc.ledger.append("impact", {"error": str(exc)})
        test_dir = test_dir_for({}, opts.testpaths, svc.repo)
        return Evidence(packet, test_dir=test_dir, notes=(f"impact evidence unavailable: {exc}",))
    from pytest_critic22.evidence.measured import select_tests

    pythonpath = detect_pythonpath(base_tree, opts.pythonpath)
    try:
        selection = select_tests(
            opts.preservation,
            patch,
            impact.preservation_tests,
            impact.base_graph,
            repo=svc.repo,
            base_commit=svc.trees.base_commit,
            base_tree=base_tree,
            cache_dir=state / "cache" / "impact",
            budget=opts.impact_budget,
            pythonpath=pythonpath,
            sandbox=svc.sandbox,
            scratch=svc.trees.scratch,
            testpaths=opts.testpaths,
        )
    except (GitError, OSError) as exc:
        selection = Selection(
            impact.preservation_tests,
            dict.fromkeys(impact.preservation_tests, "graph"),
            (f"preservation by the code graph only: no measured map ({exc})",),
        )
    if selection.record is not None:
        svc.ledger.append("impact-map", dict(selection.record))
    auto = [t for t in selection.tests if t not in explicit]
    tests = [o for o in explicit if is_nodeid(o)] + auto if opts.preservation != "off" else []
    preservation = group_by_file(tests)
    evidence = dict(impact.evidence)
    if opts.preservation not in ("explicit", "off"):
        evidence["preservation_tests"] = list(selection.tests)
        # How each test was found: the code graph, coverage.py's measured map, or both.
        evidence["preservation_found_by"] = dict(selection.found_by)
    # The fixtures shown are those of the folder the critic's test is written to.
    test_dir = test_dir_for(preservation, opts.testpaths, svc.repo)
    if evidence.get("fixtures", {}).get("directory") != (test_dir or "."):
        evidence["fixtures"] = fixture_evidence(base_tree, test_dir, state / "cache" / "graph")
    uncovered: dict[str, list[int]] = {}
    coverage_status = ""
    if with_coverage:
        _covered, uncovered, coverage_status = changed_line_coverage(
            patch,
            patched_tree,
            tests,
            sandbox=svc.sandbox,
            scratch=svc.trees.scratch,
            timeout=opts.timeout,
            pythonpath=detect_pythonpath(patched_tree, opts.pythonpath),
        )
        evidence["uncovered_lines"] = uncovered
    without = len(replace(packet, impact_evidence={}).canonical_json())
    evidence, cut = bound_evidence(evidence, max(0, opts.max_packet_chars - without))
    packet, _ = blind(
        replace(
            packet,
            impact_evidence=evidence,
            preservation_obligations=tuple(explicit + auto),
        )
    )
    svc.ledger.append(
        "impact",
        {
            "blast_radius": impact.radius,
            "symbols": {k: [s.name for s in v] for k, v in impact.symbols.items()},
            "preservation_tests": tests,
            "unparsed_files": list(impact.unparsed),
            "files_scanned": impact.scanned,
            "cache_hits": impact.cache_hits,
            "truncated": cut,
            "packet_digest": packet.digest,
        },
    )
    notes = list(selection.notes)
    if impact.unparsed:
        notes.append("files that do not parse: " + ", ".join(impact.unparsed))
    if cut:
        notes.append(f"impact evidence cut to fit the packet: {cut}")
    return Evidence(
        packet,
        preservation,
        test_dir,
        dict(uncovered),
        coverage_status,
        dict(impact.radius),
        tuple(notes),
    )


def engage_decision(opts: ReviewOptions, evidence: Evidence, ledger: Ledger) -> EngageDecision:
    from pytest_critic22.critic.engage import decide_engage as decide

    decision = decide(
        radius=evidence.radius,
        uncovered=evidence.uncovered,
        preservation_status=evidence.coverage_status or "not run",
        thresholds=opts.engage_thresholds(),
    )
    record: dict[str, Any] = {
        **decision.to_dict(),
        "blast_radius": evidence.radius,
        "uncovered_lines": evidence.uncovered,
        "preservation": evidence.coverage_status,
    }
    ledger.append("engage", record)
    return decision


def group_by_file(tests: list[str]) -> dict[str, tuple[str, ...]]:
    """One preservation group per test file, in first-seen order."""
    groups: dict[str, list[str]] = {}
    for test in tests:
        group = groups.setdefault(test.split("::", 1)[0], [])
        if test not in group:
            group.append(test)
    return {k: tuple(v) for k, v in groups.items()}
