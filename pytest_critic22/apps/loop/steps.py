"""One round's executions: the review itself, the debate turn, the second critic, and the
verification of fixes. Every one is the plugin's own pipeline
(:func:`pytest_critic22.apps.api.review`, a pytest child that dies with the loop); nothing here
decides a status.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pytest_critic22.apps.loop.model import DebateTurn, ItemResult
from pytest_critic22.apps.loop.rounds import decisive_output, find, items_of, split_test
from pytest_critic22.execution.statedir import check, make_folder, write_file

__all__ = ["Reviewer", "RunSpec"]


@dataclass(frozen=True, slots=True)
class RunSpec:
    """What every review of this loop shares."""

    repo: Path  # the repository's top folder (git, the state folder)
    base: str
    cwd: Path | None = None  # where reviews run (the user's folder: relative options hold)
    plugin_args: tuple[str, ...] = ()
    model: str | None = None
    api_base: str | None = None
    engage: str | None = None
    timeout: float = 1800.0
    env: Mapping[str, str] | None = None


@dataclass
class Reviewer:
    """Runs the reviews of one round, writing what they produce under ``trace_dir``."""

    spec: RunSpec
    trace_dir: Path
    notes: list[str] = field(default_factory=list)

    def review(
        self,
        candidate: Path,
        name: str,
        *,
        findings: Path | None = None,
        model: str | None = None,
        extra: Sequence[str] = (),
        engage: str | None = None,
    ) -> dict[str, Any] | None:
        """One plugin review of ``candidate``; its JSON report, or None (the reason noted)."""
        from pytest_critic22.apps.api import review

        make_folder(self.trace_dir)  # no link followed inside .critic22/
        report_path = self.trace_dir / f"{name}.report.json"
        result = review(
            self.spec.cwd or self.spec.repo,
            candidate,
            findings=findings,
            model=None if findings is not None else model,
            api_base=None if findings is not None else self.spec.api_base,
            base=self.spec.base,
            engage=engage,
            extra_args=[*self.spec.plugin_args, *extra],
            report_path=report_path,
            timeout=self.spec.timeout,
            env=self.spec.env,
            die_with_parent=True,
        )
        write_file(self.trace_dir / f"{name}.output.txt", result.output)
        if result.report is None:
            self.notes.append(
                f"{name}: no report ({result.error or 'exit ' + str(result.exit_status)})"
            )
            return None
        critic = result.report.get("critic") or {}
        traces = critic.get("traces")
        if isinstance(traces, str) and Path(traces).is_dir():
            copy = self.trace_dir / f"{name}.critic"
            check(copy)  # copytree would write through a link standing there
            shutil.copytree(traces, copy, dirs_exist_ok=True)
        return result.report

    def replay(
        self, candidate: Path, name: str, findings: Sequence[Mapping[str, Any]]
    ) -> dict[str, Any] | None:
        """Execute findings the loop wrote (a revision, a fix to verify) on ``candidate``:
        a replayed critic, no preservation groups (the candidate's own review ran them)."""
        path = self.trace_dir / f"{name}.findings.json"
        write_file(path, json.dumps(list(findings), indent=2))
        return self.review(
            candidate, name, findings=path, extra=["--critic22-preservation=off"], engage="always"
        )


def critic_raw(report: Mapping[str, Any], findings: Path | None) -> str:
    """The critic's raw answer, verbatim: the replayed file, or the model's chosen answer."""
    critic = report.get("critic") or {}
    path = findings if findings is not None else critic.get("answer")
    if not path:
        return ""
    try:
        return Path(str(path)).read_text(encoding="utf-8")
    except OSError:
        return ""


def finding_record(item: ItemResult, falsification: str, evidence: str) -> dict[str, Any]:
    return {
        "location": item.location or "whole-patch",
        "claim": item.claim,
        "severity": "blocking",
        "evidence": evidence,
        "falsification": falsification,
        "confidence": 0.5,
    }


def item_test(item: ItemResult) -> str | None:
    """The test of a verified item: a ``test:`` finding's source, or a scar item's."""
    if item.procedure == "scar" and item.falsification.startswith("scar:"):
        return item.falsification.split("\n", 1)[1] if "\n" in item.falsification else None
    found = split_test(item.falsification)
    return None if found is None else found[0]


def debate(
    reviewer: Reviewer,
    items: tuple[ItemResult, ...],
    report: Mapping[str, Any],
    candidate: Path,
    settings: Any,
    complete: Any = None,
) -> tuple[tuple[ItemResult, ...], tuple[DebateTurn, ...]]:
    """``hard``: one more turn for up to 3 blocking critic findings that ended inconclusive
    or refuted. A ruling is recorded; only an executed revision changes an item's status."""
    from pytest_critic22.apps.loop.asking import ask, debate_messages, parse_ruling

    chosen = [i for i in items if i.source == "critic" and i.status in ("inconclusive", "refuted")]
    chosen = chosen[:3]
    if not chosen:
        return items, ()
    text = candidate.read_text(encoding="utf-8")
    rulings = []
    for item in chosen:
        record = find(report, item.id) or {}
        messages = debate_messages(item, decisive_output(record), text)
        raw, why = ask(messages, settings, reviewer.trace_dir, f"debate-{item.id}", complete)
        if raw is None:
            reviewer.notes.append(f"debate on {item.id}: no answer ({why})")
        rulings.append((item, parse_ruling(raw)))
    revised = [(item, r) for item, r in rulings if r.ruling == "revise"]
    outcomes: dict[str, tuple[str, str]] = {}
    if revised:
        records = [
            finding_record(item, r.falsification, "revised in the debate after execution")
            for item, r in revised
        ]
        out = reviewer.replay(candidate, "debate", records)
        for number, (item, _r) in enumerate(revised, 1):
            got = (out and find(out, f"F{number}")) or {}
            outcome = got.get("outcome") or {}
            status = str(outcome.get("status", "inconclusive"))
            if status not in ("verified", "refuted", "inconclusive"):
                status = "inconclusive"
            outcomes[item.id] = (status, str(outcome.get("reason", "the revision did not run")))
    turns = []
    by_id = {}
    for item, r in rulings:
        status, reason = outcomes.get(item.id, (item.status, ""))
        if item.id in outcomes and status != "verified":
            # Only a verified revision changes the round: a revision that passes would let
            # the critic withdraw an inconclusive concern by choosing a test, not by execution.
            turns.append(
                DebateTurn(
                    item.id,
                    item.status,
                    r.ruling,
                    r.argument,
                    item.status,
                    f"the revision was {status}: {reason}; the outcome stands",
                )
            )
            continue
        turns.append(DebateTurn(item.id, item.status, r.ruling, r.argument, status, reason))
        if item.id in outcomes:
            falsification = next(x.falsification for i, x in revised if i.id == item.id)
            by_id[item.id] = replace(
                item,
                source="debate",
                status=status,
                reason=f"revised in the debate: {reason}",
                falsification=falsification,
            )
    return tuple(by_id.get(i.id, i) for i in items), tuple(turns)


def second_critic(
    reviewer: Reviewer, candidate: Path, model: str
) -> tuple[tuple[ItemResult, ...], str]:
    """``nightmare``: an independent critic in a fresh context (no memory, no scar tissue)
    that reads the touched modules in full; its findings are executed like the first's."""
    report = reviewer.review(
        candidate,
        "second-critic",
        model=model,
        extra=["--critic22-full-source", "--critic22-preservation=off"],
        engage="always",
    )
    if report is None:
        return (), ""
    return items_of(report, prefix="N", source="second-critic"), critic_raw(report, None)


def verify_fixes(
    reviewer: Reviewer, candidate: Path, name: str, proposals: Sequence[tuple[ItemResult, str, str]]
) -> list[tuple[bool, str]]:
    """Each ``(item, test, diff)`` executed like a critic's repair: the test fails on the
    candidate and passes once the diff is applied, and the acceptance test and obligations
    still hold. ``(True, why)`` when that was verified."""
    if not proposals:
        return []
    records = [
        finding_record(item, f"test:\n{test}\nrepair:\n{diff}", "a fix to verify")
        for item, test, diff in proposals
    ]
    out = reviewer.replay(candidate, name, records)
    results = []
    for number in range(1, len(proposals) + 1):
        got = (out and find(out, f"F{number}")) or {}
        outcome = got.get("outcome") or {}
        status = str(outcome.get("status", "not run"))
        reason = str(outcome.get("reason", "the verification did not run"))
        results.append((status == "verified", f"{status}: {reason}"))
    return results
