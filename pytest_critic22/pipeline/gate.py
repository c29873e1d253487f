"""The gate at session end: typed results -> a verdict (pure), then the exit status and the
INCOMPLETE error item when the review could not look. It takes values, not the plugin."""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import TYPE_CHECKING

import pytest

from pytest_critic22.model.inert import inert
from pytest_critic22.model.results import Disposition
from pytest_critic22.pipeline.review import preservation_id
from pytest_critic22.verification.decide import gate

if TYPE_CHECKING:
    from pytest_critic22.pipeline.review import Review
    from pytest_critic22.verification.procedures import FindingResult


__all__ = ["decide_disposition", "disposition_record", "settle_exit_status"]


def decide_disposition(
    review: Review,
    results: Mapping[str, FindingResult],
    reported: Set[str],
    *,
    exitstatus: int,
    interrupted: bool,
) -> tuple[Disposition, list[str]]:
    """The verdict from the typed results (pure), and the notes it adds to the run's: the
    items that owed a result and gave none say why the review could not look."""
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
    problems = list(review.problems)
    notes: list[str] = []
    missing = [i for i in review.expected_items() if i not in results]
    crashed = [i for i in missing if review.item_name(i) in reported]
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
        notes.append("not run (deselected): " + ", ".join(unrun))
    return gate(outcomes, problems=problems, interrupted=interrupted), notes


def disposition_record(disposition: Disposition) -> dict[str, object]:
    """The ledger's ``disposition`` event."""
    return {
        "verdict": disposition.verdict,
        "verified": list(disposition.verified),
        "reason": disposition.reason,
        "problems": list(disposition.problems),
        "interrupted": disposition.interrupted,
    }


def settle_exit_status(
    session: pytest.Session,
    review: Review,
    disposition: Disposition,
    *,
    allow_incomplete: bool,
    only: bool,
) -> None:
    """The verdict where CI looks: REJECT (and INCOMPLETE, unless allowed) fails the run;
    INCOMPLETE is an error item that says why."""
    if disposition.verdict == "incomplete" and not allow_incomplete:
        _report_incomplete(session.config, review.patch_path.name, disposition)
    failing = disposition.verdict == "reject" or (
        disposition.verdict == "incomplete" and not allow_incomplete
    )
    if failing and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if (
        only
        and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
        and disposition.verdict != "reject"
    ):
        # A review-only run with no blocking finding is a review that found nothing to
        # verify: the answer is "proceed", not "no tests ran".
        session.exitstatus = pytest.ExitCode.OK


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
