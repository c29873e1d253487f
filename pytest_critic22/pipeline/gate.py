"""The gate at session end: typed results -> a verdict, the exit status, and the
INCOMPLETE error item when the review could not look."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import pytest

from pytest_critic22.model.inert import inert
from pytest_critic22.model.results import Disposition
from pytest_critic22.pipeline.review import preservation_id
from pytest_critic22.verification.decide import gate

if TYPE_CHECKING:
    from pytest_critic22.config.settings import ReviewOptions
    from pytest_critic22.pipeline.review import Review
    from pytest_critic22.state.ledger import Ledger
    from pytest_critic22.verification.procedures import FindingResult


class GatedRun(Protocol):
    """What the gate reads of the run (the session's plugin object is one)."""

    config: pytest.Config
    opts: ReviewOptions
    ledger: Ledger
    review: Review | None
    results: dict[str, FindingResult]
    reported: set[str]
    notes: list[str]
    stopped: bool  # Ctrl-C or pytest.exit()

    @property
    def built_trees(self) -> bool: ...


__all__ = ["apply_gate"]


def apply_gate(plugin: GatedRun, session: pytest.Session, exitstatus: int) -> Disposition:
    review = plugin.review
    if review is None:
        raise RuntimeError("critic22: the gate ran before the review was built")
    results = plugin.results
    outcomes = [
        (w.finding_id, w.finding.severity, r.outcome)
        for w in review.wrapped
        if (r := results.get(w.finding_id)) is not None
    ]
    # A verified regression of a preservation obligation rejects as surely as a verified
    # finding: it is the deterministic validator speaking, no critic involved.
    outcomes += [
        (key, "blocking", r.outcome)
        for key in sorted(preservation_id(g) for g in review.preservation)
        if (r := results.get(key)) is not None
    ]
    interrupted = exitstatus == pytest.ExitCode.INTERRUPTED or bool(
        plugin.stopped or session.shouldfail or session.shouldstop
    )
    problems = list(review.problems)
    missing = [i for i in review.expected_items() if i not in results]
    crashed = [i for i in missing if review.item_name(i) in plugin.reported]
    if crashed:
        problems.append("did not complete (an internal error): " + ", ".join(crashed))
    unrun = [i for i in missing if i not in crashed]
    if unrun and interrupted:
        problems.append("interrupted before these ran: " + ", ".join(unrun))
    elif unrun and exitstatus in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR):
        # an unknown hook in a conftest, say: pytest stopped before collection was done
        ended = f"pytest ended with exit status {int(exitstatus)} before these ran: "
        problems.append(ended + ", ".join(unrun))
    elif unrun:
        plugin.notes.append("not run (deselected): " + ", ".join(unrun))
    disposition = gate(outcomes, problems=problems, interrupted=interrupted)
    if plugin.built_trees:  # --collect-only reviews nothing: it leaves no ledger event
        plugin.ledger.append(
            "disposition",
            {
                "verdict": disposition.verdict,
                "verified": list(disposition.verified),
                "reason": disposition.reason,
                "problems": list(disposition.problems),
                "interrupted": disposition.interrupted,
            },
        )
    allowed = plugin.opts.allow_incomplete
    if disposition.verdict == "incomplete" and not allowed:
        _report_incomplete(plugin.config, review.patch_path.name, disposition)
    failing = disposition.verdict == "reject" or (
        disposition.verdict == "incomplete" and not allowed
    )
    if failing and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if (
        plugin.opts.only
        and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
        and disposition.verdict != "reject"
    ):
        # A review-only run with no blocking finding is a review that found nothing to
        # verify: the answer is "proceed", not "no tests ran".
        session.exitstatus = pytest.ExitCode.OK
    return disposition


def _report_incomplete(config: pytest.Config, patch_name: str, disposition: Disposition) -> None:
    """INCOMPLETE is an error item, ``patch.diff::review``, that says why."""
    nodeid = f"{patch_name}::review"
    location = (patch_name, None, "critic22 review")
    longrepr = "\n".join(
        [
            "critic22: INCOMPLETE — the review could not look, so it cannot say PROCEED:",
            *(f"  - {inert(p)}" for p in disposition.problems),
            "(--critic22-allow-incomplete accepts this; the verdict stays INCOMPLETE)",
        ]
    )
    hook = config.hook
    hook.pytest_runtest_logstart(nodeid=nodeid, location=location)
    report = pytest.TestReport(
        nodeid=nodeid,
        location=location,
        keywords={"critic22": 1},
        outcome="failed",
        longrepr=longrepr,
        when="setup",
        user_properties=[("critic22_verdict", "incomplete")],
    )
    hook.pytest_runtest_logreport(report=report)
    hook.pytest_runtest_logfinish(nodeid=nodeid, location=location)
