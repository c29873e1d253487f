"""``critic22 loop``: review -> fix -> re-review until execution acquits (or it cannot go on).

Each round reviews the current candidate with the plugin's own pipeline, scores it from
execution (:mod:`.verdict`), and — unless that acquits — composes the next candidate from
verified fixes (:mod:`.compose`). A round's files are written, then its receipt (if it
acquits), then ``REVIEW_STATE.json``: the state file is the round's commit point, so a
round interrupted before it is redone on resume, never half-counted.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from pytest_critic22.apps.loop import journal, state
from pytest_critic22.apps.loop.commit import (
    Run,
    agent_id,
    commit_round,
    ledger_of,
    now,
    write_state,
)
from pytest_critic22.apps.loop.independence import independence
from pytest_critic22.apps.loop.interrupt import save_interrupted
from pytest_critic22.apps.loop.model import Fix, ItemResult, RoundRecord
from pytest_critic22.apps.loop.options import LoopError, LoopOptions, LoopResult
from pytest_critic22.apps.loop.rounds import (
    blockers,
    earlier_repairs,
    incomplete,
    items_of,
    scar_entries,
)
from pytest_critic22.apps.loop.steps import Reviewer, RunSpec, critic_raw
from pytest_critic22.apps.loop.verdict import BLOCKED, is_positive, score_of, verdict_of
from pytest_critic22.execution.statedir import make_folder, remove_folder, write_file

__all__ = ["DIFFICULTIES", "run_loop"]

DIFFICULTIES = ("medium", "hard", "nightmare")


def check(opts: LoopOptions, stdin: TextIO) -> None:
    from pytest_critic22.apps.loop.checkpoint import require_terminal

    if not opts.patch.is_file():
        raise LoopError(f"critic22 loop: patch file not found: {opts.patch}")
    if opts.max_rounds < 1:
        raise LoopError("critic22 loop: --max-rounds must be at least 1")
    if opts.difficulty not in DIFFICULTIES:
        raise LoopError(f"critic22 loop: --difficulty is one of {', '.join(DIFFICULTIES)}")
    if opts.findings_dir is not None and not opts.findings_dir.is_dir():
        raise LoopError(f"critic22 loop: --critic22-findings: not a folder: {opts.findings_dir}")
    if opts.findings_dir is None and not opts.model:
        raise LoopError(
            "critic22 loop: needs a critic: --critic22-model MODEL, or --critic22-findings DIR "
            "(round-1.json, round-2.json, ...)"
        )
    if opts.difficulty != "medium" and not opts.model:
        raise LoopError(f"critic22 loop: --difficulty {opts.difficulty} needs --critic22-model")
    if opts.checkpoint:
        problem = require_terminal(stdin)
        if problem:
            raise LoopError(problem)


def run_loop(
    opts: LoopOptions, *, stdin: TextIO | None = None, out: TextIO | None = None
) -> LoopResult:
    """Run (or resume) the loop; raises :class:`LoopError` for usage problems."""
    from pytest_critic22.execution.git import toplevel

    stdin = sys.stdin if stdin is None else stdin
    out = sys.stdout if out is None else out
    check(opts, stdin)
    repo = toplevel(opts.repo)
    if repo is None:
        raise LoopError(f"critic22 loop: {opts.repo} is not inside a git repository")
    stage = repo / state.STAGE
    # A link in .critic22/ (a repository can commit one) would have the loop write, or
    # remove, outside the repository: refused before anything is read or written.
    problem = state.link_problem(stage)
    if problem is not None:
        raise LoopError(f"critic22 loop: {problem}")
    try:
        begun = state.start(stage)
    except state.StateError as exc:
        raise LoopError(str(exc)) from None
    run = Run(opts, stage, begun.run_id, "", out, stdin, saved=begun.state)
    try:
        return _rounds(run, begun, repo)
    except KeyboardInterrupt:  # the last finished round's state kept: the same command resumes
        saved = save_interrupted(stage, run.run_id, run.saved, agent_id(opts), ledger_of(run))
        raise saved[1] from None


def _rounds(run: Run, begun: state.Start, repo: Path) -> LoopResult:
    """The loop from its start decision to its end (Ctrl-C is the caller's)."""
    from pytest_critic22.execution.git import GitError, head_commit

    opts, stage = run.opts, run.stage
    for line in begun.messages:
        run.say(line)
    first = _resume(run, begun) if begun.resumed else 1
    if first == 1:
        run.saved = None  # starting over: no round of this run is on disk yet
    if run.records:
        run.base = str(run.records[0].extra.get("base", ""))
        candidate = run.round_dir(first - 1) / "next.diff"
    else:
        try:
            run.base = head_commit(repo, opts.base)
        except GitError:
            raise LoopError(f"critic22 loop: --critic22-base {opts.base} is not a commit") from None
        candidate = opts.patch
    journal.start_log(stage, run.run_id, str(opts.patch), now(), first > 1)
    spec = RunSpec(
        repo=repo,
        cwd=opts.repo,
        base=run.base,
        plugin_args=opts.plugin_args,
        model=opts.model,
        api_base=opts.api_base,
        engage=opts.engage or "always",
        timeout=opts.timeout,
        env=opts.env,
    )
    committed = _committed_acquittal(run, first)
    if committed is not None:  # killed between its receipt and its state: it did acquit
        run.records.append(committed)
        write_state(run, committed, final=True)
        return _finish(run, committed, Path(committed.candidate).read_text(encoding="utf-8"))
    if not candidate.is_file():
        raise LoopError(f"critic22 loop: the state of {run.run_id} has no candidate {candidate}")
    text = candidate.read_text(encoding="utf-8")
    for number in range(first, opts.max_rounds + 1):
        record, text_next = _round(run, spec, number, text)
        commit_round(run, record, text_next)
        run.records.append(record)
        if record.status != "continue":
            return _finish(run, record, text)
        text = text_next
    # Resumed with a lower --max-rounds than the run had: it ends here, as max rounds.
    last = replace(run.records[-1], status="max-rounds", blockers=blockers(run.records[-1].items))
    ledger_of(run).append("loop-stop", {"round": last.round, "status": last.status})
    write_state(run, last, final=True)
    return _finish(run, last, text)


def _patch_digest(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def _resume(run: Run, begun: state.Start) -> int:
    """The round to resume at, with ``run.records`` loaded; 1 (a fresh start under the
    assigned id) when there is nothing to resume: a legacy state without records, or an
    interrupted run of another patch."""
    legacy = any(m.startswith("No run_id") for m in begun.messages)
    try:
        run.records = _load_records(run, begun.round)
    except LoopError:
        if not legacy:
            raise
        run.say("No records of the interrupted run; starting at Round 1.")
        run.records = []
        return 1
    digest = run.records[0].extra.get("patch_sha256") if run.records else None
    if digest and digest != _patch_digest(run.opts.patch):
        run.say(f"The interrupted run {run.run_id} reviewed another patch; starting fresh.")
        run.run_id = state.new_loop_id(state.utc_now())
        run.records = []
        return 1
    return begun.round


def _committed_acquittal(run: Run, number: int) -> RoundRecord | None:
    """Round ``number``'s record when it acquitted and its receipt was written but the
    state was not (a kill in between): finish from it, never redo an acquitted round."""
    path = run.round_dir(number) / "record.json"
    if not path.is_file():
        return None
    receipts = state.AcquittalLog(run.stage / state.ACQUITTAL_LOG).for_run(run.run_id)
    if not any(r.round == number for r in receipts):
        return None
    record = RoundRecord.from_dict(json.loads(path.read_text(encoding="utf-8")))
    return record if record.positive and record.status == "acquitted" else None


def _load_records(run: Run, first: int) -> list[RoundRecord]:
    records = []
    for number in range(1, first):
        path = run.round_dir(number) / "record.json"
        if not path.is_file():
            raise LoopError(f"critic22 loop: cannot resume {run.run_id}: {path} is missing")
        records.append(RoundRecord.from_dict(json.loads(path.read_text(encoding="utf-8"))))
    return records


def _round(run: Run, spec: RunSpec, number: int, text: str) -> tuple[RoundRecord, str]:
    from pytest_critic22.apps.loop import steps
    from pytest_critic22.apps.loop.checkpoint import header
    from pytest_critic22.apps.loop.fixes import FixContext, plan_fixes

    started = time.monotonic()
    opts = run.opts
    folder = run.round_dir(number)
    remove_folder(folder)  # a round interrupted earlier is redone whole
    make_folder(folder)
    candidate = folder / "candidate.diff"
    write_file(candidate, text)
    trace_id = f"trace_{run.run_id}_r{number:02d}"
    traces = spec.repo / ".critic22" / "traces" / trace_id
    remove_folder(traces)
    reviewer = Reviewer(spec, traces)
    extra: list[str] = []
    if run.records:
        memory = folder / "memory.md"
        write_file(memory, journal.critic_memory(run.records))
        extra.append(f"--critic22-reviewer-memory={memory}")
        scars = scar_entries([(r.round, r.items) for r in run.records])
        if scars:
            scar = folder / "scar.json"
            write_file(scar, json.dumps(scars, indent=2))
            extra.append(f"--critic22-scar={scar}")
    findings, engage = None, spec.engage
    if opts.findings_dir is not None:
        recorded = opts.findings_dir / f"round-{number}.json"
        if recorded.is_file():
            findings = recorded
        else:
            engage = "never"
            reviewer.notes.append(
                f"no {recorded.name} in {opts.findings_dir}: the critic is silent"
            )
    run.say(f"Round {number}/{opts.max_rounds}: reviewing the candidate ({candidate})")
    report = reviewer.review(
        candidate, "review", findings=findings, model=opts.model, extra=extra, engage=engage
    )
    reviewer.notes += _sandbox_warnings(run, report)
    common: dict[str, Any] = {
        "run_id": run.run_id,
        "round": number,
        "max_rounds": opts.max_rounds,
        "trace_id": trace_id,
        "candidate": str(candidate),
        "difficulty": opts.difficulty,
        "critic_source": "replay"
        if findings is not None
        else ("off" if engage == "never" else "model"),
        "extra": {"base": run.base, "patch_sha256": _patch_digest(opts.patch)},
        **independence(opts),
    }
    problem = incomplete(report)
    if report is None or problem:
        why = problem or "the review wrote no report"
        return _blocked(common, reviewer, why, _since(started)), text
    items = items_of(report)
    raw = critic_raw(report, findings)
    memory_update = str((report.get("critic") or {}).get("memory_update", ""))
    debate: tuple[Any, ...] = ()
    second_raw = ""
    if opts.difficulty in ("hard", "nightmare"):
        items, debate = steps.debate(reviewer, items, report, candidate, _settings(opts))
    if opts.difficulty == "nightmare":
        model = opts.second_model or opts.model or ""
        more, second_raw = steps.second_critic(reviewer, candidate, model)
        second = _read_json(traces / "second-critic.report.json")
        problem = incomplete(second)
        if second is None or problem:
            why = f"the second critic: {problem or 'no report'}"
            return _blocked(common, reviewer, why, _since(started), items=items), text
        items = items + more
    verdict, score = verdict_of(items), score_of(items)
    positive = is_positive(score, verdict)
    run.say(header(number, opts.max_rounds, score, verdict))  # once: the checkpoint follows it
    fixes: tuple[Fix, ...] = ()
    following = text
    if positive:
        status = "acquitted"
    elif number >= opts.max_rounds:
        status = "max-rounds"
    else:
        ctx = FixContext(opts, spec.repo, run.base, run.stdin, run.out)
        earlier = earlier_repairs(run.records)
        status, fixes, following = plan_fixes(
            ctx, reviewer, number, items, report, candidate, text, score, verdict, earlier
        )
    record = RoundRecord(
        **common,
        verdict=verdict,
        score=score,
        positive=positive,
        status=status,
        items=items,
        critic_raw=raw,
        memory_update=memory_update,
        second_raw=second_raw,
        fixes=fixes,
        debate=debate,
        blockers=blockers(items) if status != "acquitted" else (),
        notes=tuple(reviewer.notes),
        timestamp=state.iso_z(state.utc_now()),
        seconds=_since(started),
    )
    return record, following


def _since(started: float) -> float:
    return round(time.monotonic() - started, 3)


def _sandbox_warnings(run: Run, report: Mapping[str, Any] | None) -> list[str]:
    """The sandbox's warning lines a plain review prints (the rlimits fallback, what rlimits
    cannot keep out): shown once per loop, kept in every round's notes."""
    from pytest_critic22.execution.sandbox import RLIMITS_LIMITS

    sandbox = (report or {}).get("sandbox")
    if not isinstance(sandbox, Mapping) or not sandbox:
        return []
    lines = [str(sandbox["warning"])] if sandbox.get("warning") else []
    if sandbox.get("isolated") is False:
        lines.append(RLIMITS_LIMITS)
    for line in lines:
        if line not in run.warned:
            run.warned.add(line)
            run.say(f"warning: {line}")
    return lines


def _blocked(
    common: Mapping[str, Any],
    reviewer: Reviewer,
    why: str,
    seconds: float,
    items: tuple[ItemResult, ...] = (),
) -> RoundRecord:
    """A round whose review could not do what was asked: never a positive verdict."""
    return RoundRecord(
        **common,
        verdict=BLOCKED,
        score=0,
        positive=False,
        status="blocked",
        items=items,
        blockers=(f"BLOCKED: {why}",),
        notes=(*reviewer.notes, f"BLOCKED: {why}"),
        timestamp=state.iso_z(state.utc_now()),
        seconds=seconds,
    )


def _settings(opts: LoopOptions, model: str | None = None) -> Any:
    from pytest_critic22.critic.critic import CriticSettings

    return CriticSettings(model=model or opts.model or "", api_base=opts.api_base)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _finish(run: Run, record: RoundRecord, text: str) -> LoopResult:
    from pytest_critic22.apps.loop.render import render_file

    status = record.status
    if status == "acquitted":
        receipts = state.AcquittalLog(run.stage / state.ACQUITTAL_LOG).for_run(run.run_id)
        if not any(r.round == record.round for r in receipts):  # only this round's may stop it
            status = "blocked"
    final = run.stage / "final.diff"
    write_file(final, text)
    journal.append_final(run.stage, run.run_id, status, str(final), record.blockers)
    if render_file(run.stage) is None:
        run.say("note: AUTO_REVIEW.html could not be rendered (the loop's result stands)")
    run.say(
        f"critic22 loop {run.run_id}: {status} after round {record.round} "
        f"(score {record.score}/10, {record.verdict}); final candidate: {final}"
    )
    for line in record.blockers:
        run.say(f"  blocker: {line}")
    return LoopResult(
        run.run_id,
        status,
        record.verdict,
        record.score,
        tuple(run.records),
        run.stage,
        final,
    )
