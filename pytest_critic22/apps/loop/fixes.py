"""Phase C: which verified fixes make the next candidate.

A verified ``test:`` finding with a ``repair:`` has a fix that was itself executed. One
without: with ``--fixer-model`` a separate model proposes a diff, which is executed like a
repair before it is used; without a fixer the loop stops ``not ready``. With
``--checkpoint`` a person may skip fixes, stop, or bring their own (verified the same way).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from pytest_critic22.apps.loop.model import Fix, ItemResult, Origin
from pytest_critic22.apps.loop.options import LoopOptions
from pytest_critic22.apps.loop.rounds import decisive_output, find, split_test
from pytest_critic22.apps.loop.steps import Reviewer, item_test, verify_fixes

__all__ = ["FixContext", "plan_fixes"]

Proposal = tuple[ItemResult, Origin, str]  # (the verified item, where the fix came from, diff)


@dataclass(frozen=True, slots=True)
class FixContext:
    opts: LoopOptions
    repo: Path
    base: str
    stdin: TextIO
    out: TextIO


def plan_fixes(
    ctx: FixContext,
    reviewer: Reviewer,
    number: int,
    items: Sequence[ItemResult],
    report: Mapping[str, Any],
    candidate: Path,
    text: str,
    score: int,
    verdict: str,
    earlier: Mapping[str, str] | None = None,
) -> tuple[str, tuple[Fix, ...], str]:
    """``(status, fixes, next candidate)``; status ``continue``, ``no-fix`` or ``stopped``.

    ``earlier`` maps the test of a finding verified in an earlier round to its repair: a
    scar item (that test failing again) is fixed by the same repair when it still applies
    and is verified again on this candidate.
    """
    verified = [i for i in items if i.status == "verified"]
    findings = [i for i in verified if i.source != "validator"]
    if not verified:
        return "continue", (), text  # nothing to fix: the next round looks again
    proposals: list[Proposal] = []  # (item, origin, diff)
    missing: list[ItemResult] = []
    for item in findings:
        found = split_test(item.falsification)
        if found is not None and found[1]:
            proposals.append((item, "repair", found[1]))
        else:
            missing.append(item)
    # A scar item whose test a repair of this round answers needs no fix of its own.
    answered = {item_test(i) for i, _, _ in proposals}
    missing = [i for i in missing if not (i.source == "scar" and item_test(i) in answered)]
    refused: list[Fix] = []
    known = earlier or {}
    again: list[tuple[ItemResult, str, str]] = []
    for item in missing:
        test = item_test(item)
        if test is not None and test in known:
            again.append((item, test, known[test]))
    if again:
        results = verify_fixes(reviewer, candidate, "earlier-repairs", again)
        for (item, _test, diff), (ok, why) in zip(again, results, strict=True):
            if ok:
                proposals.append((item, "repair", diff))
                missing.remove(item)
            else:
                refused.append(Fix(item.id, "repair", diff, "refused", f"re-verified: {why}"))
    if missing and ctx.opts.fixer_model:
        fixed, more = _fixer(ctx, reviewer, missing, report, candidate, text)
        refused += more
        proposals += fixed
        done = {item.id for item, _, _ in fixed}
        missing = [i for i in missing if i.id not in done]
    skipped: list[Fix] = []
    blocked = ""
    if missing:
        blocked = "no verified fix for " + ", ".join(i.id for i in missing)
    elif not proposals:
        blocked = "nothing to apply: only existing tests fail (" + verified[0].id + ")"
    if ctx.opts.checkpoint:
        outcome = _checkpoint(ctx, reviewer, number, findings, proposals, candidate, score, verdict)
        if isinstance(outcome, str):
            return "stopped", (*refused, *_waiting(proposals, outcome)), text
        chosen, skipped = outcome
        if any(origin == "user" for _, origin, _ in chosen):
            blocked = ""  # the person's own fix, verified against every verified test
        proposals = chosen
    if blocked:
        return (
            "no-fix",
            (*refused, *skipped, *_waiting(proposals, "the loop stopped: " + blocked)),
            text,
        )
    return _compose(ctx, reviewer, proposals, [*refused, *skipped], text)


def _waiting(proposals: Sequence[Proposal], why: str) -> list[Fix]:
    return [Fix(i.id, o, d, "skipped", why) for i, o, d in proposals]


def _compose(
    ctx: FixContext, reviewer: Reviewer, proposals: Sequence[Proposal], fixes: list[Fix], text: str
) -> tuple[str, tuple[Fix, ...], str]:
    from pytest_critic22.apps.loop.compose import ComposeError, compose

    try:
        composed = compose(ctx.repo, ctx.base, text, [(i.id, d) for i, _, d in proposals])
    except ComposeError as exc:
        reviewer.notes.append(str(exc))
        return "no-fix", (*fixes, *_waiting(proposals, str(exc))), text
    why_skipped = dict(composed.skipped)
    for item, origin, diff in proposals:
        if item.id in composed.applied:
            fixes.append(Fix(item.id, origin, diff, "applied"))
        else:
            fixes.append(Fix(item.id, origin, diff, "skipped", why_skipped.get(item.id, "")))
    if not composed.applied:
        return "no-fix", tuple(fixes), text
    if not composed.diff.strip():
        reviewer.notes.append("the verified fixes undo the whole patch: nothing is left to review")
        return "no-fix", tuple(fixes), text
    return "continue", tuple(fixes), composed.diff


def _fixer(
    ctx: FixContext,
    reviewer: Reviewer,
    missing: Sequence[ItemResult],
    report: Mapping[str, Any],
    candidate: Path,
    text: str,
) -> tuple[list[Proposal], list[Fix]]:
    from pytest_critic22.apps.loop.asking import ask, fixer_messages, parse_fix
    from pytest_critic22.apps.loop.compose import candidate_sources
    from pytest_critic22.critic.critic import CriticSettings
    from pytest_critic22.model.patch import DiffError, parse_patch

    try:
        paths = [f.new_path for f in parse_patch(text).files if f.new_path]
    except DiffError:
        paths = []
    sources = candidate_sources(ctx.repo, ctx.base, text, paths)
    settings = CriticSettings(model=ctx.opts.fixer_model or "", api_base=ctx.opts.api_base)
    to_verify: list[tuple[ItemResult, str, str]] = []
    refused: list[Fix] = []
    for item in missing:
        test = item_test(item)
        if test is None:
            continue  # not a test: nothing to verify a fix against
        output = decisive_output(find(report, item.id) or {})
        messages = fixer_messages(item, test, output, sources)
        raw, why = ask(messages, settings, reviewer.trace_dir, f"fixer-{item.id}")
        diff = parse_fix(raw)
        if not diff:
            refused.append(
                Fix(item.id, "fixer", raw or "", "refused", why or "no diff in the answer")
            )
            continue
        to_verify.append((item, test, diff))
    fixed: list[Proposal] = []
    for (item, _test, diff), (ok, why) in zip(
        to_verify, verify_fixes(reviewer, candidate, "fixer", to_verify), strict=True
    ):
        if ok:
            fixed.append((item, "fixer", diff))
        else:
            refused.append(Fix(item.id, "fixer", diff, "refused", f"its verification: {why}"))
    return fixed, refused


#: How many of the person's own fixes the checkpoint refuses before it stops the loop.
REFUSED_FIXES = 3


def _checkpoint(
    ctx: FixContext,
    reviewer: Reviewer,
    number: int,
    findings: Sequence[ItemResult],
    proposals: list[Proposal],
    candidate: Path,
    score: int,
    verdict: str,
) -> str | tuple[list[Proposal], list[Fix]]:
    """The person's reply: the proposals to apply and the ones skipped, or why it stopped.
    An ``apply FILE.diff`` that is refused (it does not apply, or does not verify) is said
    in one line and the question is asked again, up to :data:`REFUSED_FIXES` times."""
    from pytest_critic22.apps.loop.checkpoint import ask, render

    prompt = render(
        [f"{i.id} [{i.location or 'whole-patch'}] {i.claim}" for i in findings],
        [f"{origin} for {i.id}" for i, origin, _ in proposals],
    )
    refused = ""
    for _ in range(REFUSED_FIXES):
        reply = ask(ctx.stdin, ctx.out, prompt, len(proposals))
        if reply.action == "stop":
            return "stopped at the checkpoint" + (f" ({refused})" if refused else "")
        if reply.action == "skip":
            keep = [p for n, p in enumerate(proposals, 1) if n not in reply.skip]
            dropped = [
                Fix(i.id, o, d, "skipped", "skipped at the checkpoint")
                for n, (i, o, d) in enumerate(proposals, 1)
                if n in reply.skip
            ]
            return keep, dropped
        if reply.action == "go":
            return proposals, []
        name, diff = reply.path or "", reply.diff or ""
        outcome = _user_fix(ctx, reviewer, findings, proposals, candidate, name, diff)
        if not isinstance(outcome, str):
            return outcome
        refused = outcome
        reviewer.notes.append(f"refused at the checkpoint: {outcome}")
        # One line, then the question again (the options were shown above it).
        prompt = f"{outcome}; answer again (go | skip N[,M] | stop | apply FILE.diff)"
    return f"stopped at the checkpoint after {REFUSED_FIXES} refused fixes ({refused})"


def _user_fix(
    ctx: FixContext,
    reviewer: Reviewer,
    findings: Sequence[ItemResult],
    proposals: list[Proposal],
    candidate: Path,
    name: str,
    diff: str,
) -> str | tuple[list[Proposal], list[Fix]]:
    """``apply FILE.diff``: the person's fix instead (``diff``, the file's text as the
    checkpoint read it), verified like a repair against every verified finding that has a
    test; the one line saying why it is refused, if it is."""
    from pytest_critic22.apps.loop.compose import ComposeError, compose

    if not diff.strip():
        return f"apply {name}: the file is empty; give a unified diff"
    try:
        composed = compose(ctx.repo, ctx.base, candidate.read_text(encoding="utf-8"), [("", diff)])
    except ComposeError as exc:
        return f"apply {name}: {exc}"
    if not composed.applied:  # checked before any review runs: git says why, at once
        why = composed.skipped[0][1] if composed.skipped else "it changes nothing"
        return f"apply {name}: {_one_line(why)}"
    checks = [(i, t, diff) for i in findings if (t := item_test(i)) is not None]
    results = verify_fixes(reviewer, candidate, "user-fix", checks)
    failed = [
        f"{i.id}: {why}" for (i, _, _), (ok, why) in zip(checks, results, strict=True) if not ok
    ]
    if failed:
        return f"apply {name}: refused, it did not verify ({_one_line('; '.join(failed))})"
    replaced = [
        Fix(i.id, o, d, "skipped", f"replaced by {name} at the checkpoint") for i, o, d in proposals
    ]
    first = findings[0] if findings else proposals[0][0]
    return [(first, "user", diff)], replaced


def _one_line(text: str) -> str:
    return " ".join(text.split())
