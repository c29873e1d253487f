"""``--critic22-sarif=FILE``: the review as SARIF 2.1.0, for code scanning.

One run of the tool ``pytest-critic22``; one rule per procedure kind (``test``,
``counterfactual``, ``static``, ``trace``, ``property`` and what plugins register), one per
static check (``static/removed-guard``), plus ``preservation`` and ``advisory``; one result per
finding that reached an outcome:

    error    a verified blocking finding, or a verified preservation regression
    warning  an inconclusive blocking finding, or an inconclusive preservation group
    note     an advisory finding (never run)

Every result is of ``kind`` ``fail``, a problem at its level: SARIF 2.1.0 §3.27.10 gives any
other kind (``review`` for an unverified remark, say) the level ``none``. Each rule's
descriptions are the kind's or the check's own sentence (``description``), never the prompt.

Refuted findings and findings that were not run are not results. Each result is located at
the added lines of its edit in the patched file (for a pure deletion, the line where the lines
were; for ``whole-patch``, the first edit), a preservation group's at the ``def`` line of its
failing test in the patched file (line 1 when the base's file cannot be read), and
fingerprinted by the edit's content and the claim: the same finding on the same edit has the
same ``primaryLocationLineHash`` in every run.

Everything but the hook at the end is pure; :func:`locate` and :func:`outcome_of` are shared
with the GitHub format.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib.metadata import version
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest

from pytest_critic22.checks import REGISTRY
from pytest_critic22.kinds import builtin_kinds
from pytest_critic22.model.patch import WHOLE_PATCH, ParsedPatch
from pytest_critic22.model.procedure import Procedure, StaticData, kind_description
from pytest_critic22.pipeline.review import preservation_id
from pytest_critic22.report.formats.locations import (
    Location,
    Sources,
    failing_tests,
    hunk_body,
    locate,
    locate_test,
)

if TYPE_CHECKING:
    from pytest_critic22.model.results import Disposition
    from pytest_critic22.pipeline.review import Review, RoutedFinding, RunInfo
    from pytest_critic22.verification.procedures import FindingResult

__all__ = [
    "LEVELS",
    "RESULT_KIND",
    "Outcome",
    "all_outcomes",
    "fingerprint",
    "outcome_of",
    "preservation_outcomes",
    "pytest_critic22_review_finished",
    "rule_for",
    "rules",
    "sarif_document",
]

SCHEMA_URI = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
INFORMATION_URI = "https://pypi.org/project/pytest-critic22/"
TOOL_NAME = "pytest-critic22"

#: outcome -> SARIF level (and GitHub annotation level, see formats.github).
LEVELS: Mapping[str, str] = {"verified": "error", "inconclusive": "warning", "advisory": "note"}
#: Every result's ``kind``: a problem, at its level. §3.27.10: with any other kind (``review``
#: for an unverified remark, say) the level SHALL be ``none``: no problem, nothing to show.
RESULT_KIND = "fail"

_DECIDED = (
    "Verified (error) when the procedure fails on the patched tree in every rerun and passes "
    "on the counterfactual tree (the patch without the located edit; the base for whole-patch; "
    "the patched tree plus the critic's repair when one is given). Inconclusive (warning) when "
    "it cannot say: flaky, fails on both trees, a tree that cannot be built, a timeout. A "
    "refuted finding (the procedure passes on the patched tree) is not reported."
)


@dataclass(frozen=True, slots=True)
class Outcome:
    """A finding's or preservation group's reportable outcome (refuted and "not run" have none)."""

    result_id: str  # "F1" or "preserve[tests/test_x.py]"
    kind: str  # "verified" | "inconclusive" | "advisory"
    reason: str  # the decisive line: the outcome's reason, or why it was never run
    procedure: str  # the procedure kind; "preservation"; "" for an advisory without one
    rule_id: str
    claim: str
    location: Location
    fingerprint: str
    counterfactual: str = ""  # the counterfactual tree's name, when it ran

    @property
    def level(self) -> str:
        return LEVELS[self.kind]

    @property
    def message(self) -> str:
        return f"{self.claim} ({self.result_id} {self.kind}: {self.reason})"


# -- fingerprints ----------------------------------------------------------------------------


def fingerprint(patch: ParsedPatch, location: str, claim: str) -> str:
    """sha256 of (the located edit's file and hunk lines, the claim): the same in every run
    of the same finding on the same edit, whatever the run id, the time or the folder. The
    hunk header is left out, so moving the edit within its file keeps the fingerprint."""
    edits = [e for e in patch.edits if e.edit_id == location]
    if location == WHOLE_PATCH or not edits:
        edits = list(patch.edits)
    digest = hashlib.sha256()
    for edit in edits:
        digest.update(_utf8(edit.path) + b"\0")
        digest.update(_utf8("\n".join(hunk_body(edit))) + b"\0")
    digest.update(b"claim\0" + _utf8(claim))
    return digest.hexdigest()


def _utf8(text: str) -> bytes:
    """Text as the bytes a fingerprint hashes: an undecodable byte of a file (carried as a
    ``surrogateescape`` surrogate) as that byte; any other lone surrogate (JSON can carry
    one) as its backslash escape, never an error."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace")


# -- outcomes --------------------------------------------------------------------------------


def rule_for(wrapped: RoutedFinding) -> str:
    procedure = wrapped.procedure
    if procedure is None:
        return "advisory"
    check = _static_check(procedure)
    return f"static/{check}" if check else procedure.kind


def _static_check(procedure: Procedure | None) -> str:
    """The check a ``static:`` procedure runs, by its payload ("" for any other)."""
    data = procedure.data if procedure is not None else None
    return data.check if isinstance(data, StaticData) else ""


def outcome_of(
    review: Review, wrapped: RoutedFinding, results: Mapping[str, FindingResult]
) -> Outcome | None:
    """A finding's reportable outcome, derived as the JSON report does (advisory, not run,
    or the result's outcome); None when refuted or not run."""
    finding = wrapped.finding
    result = results.get(wrapped.finding_id)
    if finding.severity != "blocking":
        kind = "advisory"
        reason = f"never run: {wrapped.route_reason}" if wrapped.route_reason else "never run"
    elif result is None or result.outcome.kind == "refuted":
        return None
    else:
        kind, reason = result.outcome.kind, result.outcome.reason
    where, claim = finding.location, finding.claim
    kind_name = wrapped.procedure.kind if wrapped.procedure is not None else ""
    tree = result.counterfactual if result is not None else ""
    located, digest = locate(review.patch, where), fingerprint(review.patch, where, claim)
    return Outcome(
        wrapped.finding_id, kind, reason, kind_name, rule_for(wrapped), claim, located, digest, tree
    )


def preservation_outcomes(
    review: Review, results: Mapping[str, FindingResult], sources: Sources | None = None
) -> Iterator[Outcome]:
    """Verified or inconclusive preservation groups, located at the ``def`` of the group's
    first failing test in the patched file (:func:`locate_test`)."""
    for group, tests in review.preservation.items():
        result = results.get(preservation_id(group))
        if result is None or result.outcome.kind not in ("verified", "inconclusive"):
            continue
        claim = f"the patch breaks existing tests in {group}"
        if result.outcome.kind != "verified":
            claim = f"existing tests in {group} could not be judged on the patch"
        digest = hashlib.sha256(_utf8("\0".join(["preservation", group, *tests])))
        kind, reason, tree = result.outcome.kind, result.outcome.reason, result.counterfactual
        yield Outcome(
            preservation_id(group),
            kind,
            reason,
            "preservation",
            "preservation",
            claim,
            locate_test(review.patch, group, failing_tests(tests, result), sources),
            digest.hexdigest(),
            tree or "base",
        )


def all_outcomes(
    review: Review, results: Mapping[str, FindingResult], sources: Sources | None = None
) -> list[Outcome]:
    """Every reportable outcome; ``sources`` reads the base's files (preservation groups are
    located at their failing test: :func:`locate_test`)."""
    found = [o for w in review.wrapped if (o := outcome_of(review, w, results)) is not None]
    return found + list(preservation_outcomes(review, results, sources))


# -- rules -----------------------------------------------------------------------------------

_TYPE_ERRORS = "errors mypy reports on the edit's added lines that the base does not have"
_STATIC_HELP = (
    "Verified (error) when the check reports a hit the located edit introduces: on its added "
    "lines in the patched file, or its removed lines in the base's."
)
_PRESERVATION_HELP = (
    "Verified (error) when a test passes on the base and fails on the patched tree in every "
    "rerun; a test that already fails on the base is not blamed on the patch."
)
_ADVISORY = (  # id, short, full, help, level
    "advisory",
    "A remark of the critic that nothing ran: it never blocks the patch.",
    "A remark of the critic that nothing ran: marked advisory, or with no executable check.",
    "Advisory findings never fail anything: they are the critic's unverified remarks.",
    "note",
)


def _rule(rule_id: str, short: str, full: str, help_text: str, level: str) -> dict[str, Any]:
    return {
        "id": rule_id,
        "name": rule_id,
        "shortDescription": {"text": short},
        "fullDescription": {"text": full},
        "help": {"text": help_text},
        "defaultConfiguration": {"level": level},
    }


def _sentence(text: str) -> str:
    """A check's description (a lowercase phrase) as a sentence."""
    text = " ".join(text.split()).rstrip(".")
    return f"{text[:1].upper()}{text[1:]}." if text else ""


def rules(
    review: Review, results: Mapping[str, FindingResult], kinds: Any, checks: Any
) -> list[dict[str, Any]]:
    """The driver's rules: every kind of the registry and the review (a plugin's included),
    every static check (the registry's and those the findings name), ``preservation``,
    ``advisory``. Each is described by the kind's ``description`` or the check's."""
    described = {k.name: kind_description(k) for k in kinds}
    offered = [k.name for k in kinds if k.grammar]
    seen = [w.procedure.kind for w in review.wrapped if w.procedure is not None]
    seen += [r.kind for r in results.values() if r.kind]
    names = [n for n in dict.fromkeys([*offered, *seen]) if n not in ("preservation", "advisory")]
    out = []
    for name in names:
        text = described.get(name) or kind_description(name)
        out.append(_rule(name, text, text, _DECIDED, "error"))
    checked = {n: checks.get(n).description for n in checks.names()}
    checked["type-errors"] = _TYPE_ERRORS
    used = [check for w in review.wrapped if (check := _static_check(w.procedure))]
    for name in dict.fromkeys([*sorted(checked), *used]):
        short = _sentence(checked.get(name, "")) or f"Findings of the static check {name}."
        full = f"{short} Static check {name}: a hit counts only where the edit introduces it."
        out.append(_rule(f"static/{name}", short, full, _STATIC_HELP, "error"))
    text = described.get("preservation") or kind_description("preservation")
    out.append(_rule("preservation", text, text, _PRESERVATION_HELP, "error"))
    out.append(_rule(*_ADVISORY))
    return out


# -- the document ----------------------------------------------------------------------------


def _uri(path: str) -> str:
    """A path as a URI: an undecodable byte of a file name percent-encoded as that byte."""
    try:
        return quote(path, safe="/", errors="surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that was no byte: its escape, encoded
        return quote(path, safe="/", errors="backslashreplace")


def _timestamp(seconds: float) -> str:
    moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _trees(outcome: Outcome) -> dict[str, str]:
    """The trees the outcome was decided on (none for an advisory finding: never run)."""
    if outcome.kind == "advisory":
        return {}
    trees = {"patched": "patched"}
    if outcome.counterfactual:
        trees["counterfactual"] = outcome.counterfactual
    return trees


def _result(outcome: Outcome, rule_index: int, run_id: str) -> dict[str, Any]:
    where = {"artifactLocation": {"uri": _uri(outcome.location.path)}}
    return {
        "ruleId": outcome.rule_id,
        "ruleIndex": rule_index,
        "kind": RESULT_KIND,
        "level": outcome.level,
        "message": {"text": outcome.message},
        "locations": [{"physicalLocation": {**where, "region": outcome.location.region()}}],
        "partialFingerprints": {"primaryLocationLineHash": outcome.fingerprint},
        "properties": {
            "finding_id": outcome.result_id,
            "procedure_kind": outcome.procedure or None,
            "outcome": outcome.kind,
            "trees": _trees(outcome),
            "run_id": run_id,
        },
    }


def sarif_document(
    review: Review,
    results: Mapping[str, FindingResult],
    disposition: Disposition,
    run: RunInfo,
    *,
    kinds: Iterable[Any] | None = None,
    checks: Any = None,
    sources: Sources | None = None,
) -> dict[str, Any]:
    """The SARIF log of one review. ``kinds`` and ``checks`` are the run's registries
    (default: the built-in kinds and checks); ``sources`` reads the base's files."""
    kinds = builtin_kinds() if kinds is None else kinds
    rule_list = rules(review, results, kinds, REGISTRY if checks is None else checks)
    index = {rule["id"]: i for i, rule in enumerate(rule_list)}
    invocation: dict[str, Any] = {"executionSuccessful": disposition.verdict != "incomplete"}
    if run.started:
        invocation["startTimeUtc"] = _timestamp(run.started)
        invocation["endTimeUtc"] = _timestamp(run.started + max(run.seconds, 0.0))
    if disposition.verdict == "incomplete":
        invocation["toolExecutionNotifications"] = [
            {"level": "error", "message": {"text": f"the review could not look: {problem}"}}
            for problem in disposition.problems or (disposition.reason,)
        ]
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": TOOL_NAME,
                        "semanticVersion": version("pytest-critic22"),
                        "informationUri": INFORMATION_URI,
                        "rules": rule_list,
                    }
                },
                "automationDetails": {"id": f"critic22/{run.run_id}"},
                "invocations": [invocation],
                "columnKind": "utf16CodeUnits",
                "results": [
                    _result(o, index[o.rule_id], run.run_id)
                    for o in all_outcomes(review, results, sources)
                ],
                "properties": {
                    "verdict": disposition.verdict,
                    "reason": disposition.reason,
                    "verified": list(disposition.verified),
                    "problems": list(disposition.problems),
                    "patch": review.patch_path.name,
                    "base": review.base_commit,
                },
            }
        ],
    }


@pytest.hookimpl
def pytest_critic22_review_finished(
    review: Review,
    results: dict[str, FindingResult],
    disposition: Disposition,
    run: RunInfo,
    config: pytest.Config,
) -> None:
    from pytest_critic22.model.inert import inert_data
    from pytest_critic22.report.formats import base_sources, isolated, output_path, write_output

    path = output_path(config, "critic22_sarif")
    if path is None:
        return
    with isolated(config, "SARIF report"):
        document = sarif_document(
            review,
            results,
            disposition,
            run,
            kinds=run.kinds,
            checks=run.checks,
            sources=base_sources(run.repo, review),
        )
        # Code scanning's JSON reader rejects an escaped lone surrogate: show it as text.
        write_output(path, json.dumps(inert_data(document), indent=2) + "\n")
