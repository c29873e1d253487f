"""``critic22 loop``: review -> fix -> re-review until execution acquits (or it cannot go on).

Each round reviews the current candidate with the plugin's own pipeline, scores it from
execution (:mod:`.verdict`), and — unless that acquits — composes the next candidate from
verified fixes (:mod:`.compose`). A round's files are written, then its receipt (if it
acquits), then ``REVIEW_STATE.json``: the state file is the round's commit point, so a
round interrupted before it is redone on resume, never half-counted.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from pytest_critic22.reviewloop import journal, state
from pytest_critic22.reviewloop.model import Fix, ItemResult, LoopOptions, RoundRecord
from pytest_critic22.reviewloop.rounds import items_of, scar_entries
from pytest_critic22.reviewloop.steps import Reviewer, RunSpec, critic_raw
from pytest_critic22.reviewloop.verdict import BLOCKED, is_positive, score_of, verdict_of

__all__ = ["DIFFICULTIES", "LoopError", "LoopOptions", "LoopResult", "loop", "run_loop"]

DIFFICULTIES = ("medium", "hard", "nightmare")


class LoopError(ValueError):
    """A usage problem: one line, said before any review runs."""


@dataclass(frozen=True, slots=True)
class LoopResult:
    run_id: str
    status: str  # acquitted | max-rounds | no-fix | blocked | stopped
    verdict: str
    score: int
    rounds: tuple[RoundRecord, ...]
    stage: Path
    final_diff: Path | None
    messages: tuple[str, ...] = ()

    @property
    def acquitted(self) -> bool:
        return self.status == "acquitted"


@dataclass
class _Run:
    opts: LoopOptions
    stage: Path
    run_id: str
    base: str
    out: TextIO
    stdin: TextIO
    records: list[RoundRecord] = field(default_factory=list)

    def say(self, line: str) -> None:
        print(line, file=self.out, flush=True)

    def round_dir(self, number: int) -> Path:
        return self.stage / "runs" / self.run_id / f"round-{number}"


def check(opts: LoopOptions, stdin: TextIO) -> None:
    from pytest_critic22.reviewloop.checkpoint import require_terminal

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
    from pytest_critic22.gitio import GitError, head_commit, toplevel

    stdin = sys.stdin if stdin is None else stdin
    out = sys.stdout if out is None else out
    check(opts, stdin)
    repo = toplevel(opts.repo)
    if repo is None:
        raise LoopError(f"critic22 loop: {opts.repo} is not inside a git repository")
    stage = repo / state.STAGE
    try:
        begun = state.start(stage)
    except state.StateError as exc:
        raise LoopError(str(exc)) from None
    run = _Run(opts, stage, begun.run_id, "", out, stdin)
    for line in begun.messages:
        run.say(line)
    if begun.resumed:
        run.records = _load_records(run, begun.round)
    if run.records:
        run.base = str(run.records[0].extra.get("base", ""))
        candidate = run.round_dir(begun.round - 1) / "next.diff"
    else:
        try:
            run.base = head_commit(repo, opts.base)
        except GitError:
            raise LoopError(f"critic22 loop: --critic22-base {opts.base} is not a commit") from None
        candidate = opts.patch
    if not candidate.is_file():
        raise LoopError(f"critic22 loop: the state of {run.run_id} has no candidate {candidate}")
    journal.start_log(
        stage, run.run_id, str(opts.patch), state.iso_z(state.utc_now()), begun.resumed
    )
    spec = RunSpec(
        repo=repo,
        base=run.base,
        plugin_args=opts.plugin_args,
        model=opts.model,
        api_base=opts.api_base,
        engage=opts.engage or "always",
        timeout=opts.timeout,
        env=opts.env,
    )
    text = candidate.read_text(encoding="utf-8")
    for number in range(begun.round, opts.max_rounds + 1):
        record, text_next = _round(run, spec, number, text)
        _commit(run, record, text_next)
        run.records.append(record)
        if record.status != "continue":
            return _finish(run, record, text)
        text = text_next
    last = run.records[-1]  # resumed past the last round: finish as it stood
    return _finish(run, last, text)


def loop(
    patch: str | Path,
    *,
    repo: str | Path = ".",
    stdin: TextIO | None = None,
    out: TextIO | None = None,
    **options: Any,
) -> LoopResult:
    """``pytest_critic22.loop(patch, repo=..., findings_dir=..., max_rounds=..., ...)``: the
    review loop from Python (the fields of :class:`LoopOptions` as keywords); a typed
    :class:`LoopResult`. Usage problems raise :class:`LoopError`."""
    here = Path(repo).resolve()
    path = Path(patch)
    opts = LoopOptions(repo=here, patch=path if path.is_absolute() else here / path, **options)
    return run_loop(opts, stdin=stdin, out=out)


def _load_records(run: _Run, first: int) -> list[RoundRecord]:
    records = []
    for number in range(1, first):
        path = run.round_dir(number) / "record.json"
        if not path.is_file():
            raise LoopError(f"critic22 loop: cannot resume {run.run_id}: {path} is missing")
        records.append(RoundRecord.from_dict(json.loads(path.read_text(encoding="utf-8"))))
    return records


def _round(run: _Run, spec: RunSpec, number: int, text: str) -> tuple[RoundRecord, str]:
    from pytest_critic22.reviewloop import steps
    from pytest_critic22.reviewloop.fixes import FixContext, plan_fixes

    opts = run.opts
    folder = run.round_dir(number)
    shutil.rmtree(folder, ignore_errors=True)  # a round interrupted earlier is redone whole
    folder.mkdir(parents=True)
    candidate = folder / "candidate.diff"
    candidate.write_text(text, encoding="utf-8")
    trace_id = f"trace_{run.run_id}_r{number:02d}"
    traces = spec.repo / ".critic22" / "traces" / trace_id
    shutil.rmtree(traces, ignore_errors=True)
    reviewer = Reviewer(spec, traces)
    extra: list[str] = []
    if run.records:
        memory = folder / "memory.md"
        memory.write_text(journal.critic_memory(run.records), encoding="utf-8")
        extra.append(f"--critic22-reviewer-memory={memory}")
        scars = scar_entries([(r.round, r.items) for r in run.records])
        if scars:
            scar = folder / "scar.json"
            scar.write_text(json.dumps(scars, indent=2), encoding="utf-8")
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
        "extra": {"base": run.base},
        **_independence(opts),
    }
    problem = _incomplete(report)
    if report is None or problem:
        return _blocked(common, reviewer, problem or "the review wrote no report"), text
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
        problem = _incomplete(second)
        if second is None or problem:
            why = f"the second critic: {problem or 'no report'}"
            return _blocked(common, reviewer, why, items=items), text
        items = items + more
    verdict, score = verdict_of(items), score_of(items)
    positive = is_positive(score, verdict)
    run.say(f"Round {number}/{opts.max_rounds} review complete. Score: {score}/10 — {verdict}")
    fixes: tuple[Fix, ...] = ()
    following = text
    if positive:
        status = "acquitted"
    elif number >= opts.max_rounds:
        status = "max-rounds"
    else:
        ctx = FixContext(opts, spec.repo, run.base, run.stdin, run.out)
        status, fixes, following = plan_fixes(
            ctx, reviewer, number, items, report, candidate, text, score, verdict
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
        blockers=_blockers(items) if status != "acquitted" else (),
        notes=tuple(reviewer.notes),
        timestamp=state.iso_z(state.utc_now()),
    )
    return record, following


def _incomplete(report: Mapping[str, Any] | None) -> str:
    if report is None:
        return ""
    disposition = report.get("disposition") or {}
    if disposition.get("verdict") != "incomplete":
        return ""
    problems = list(disposition.get("problems") or [])
    return "; ".join(str(p) for p in problems) or str(disposition.get("reason", "incomplete"))


def _blocked(
    common: Mapping[str, Any], reviewer: Reviewer, why: str, items: tuple[ItemResult, ...] = ()
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
    )


def _blockers(items: Sequence[ItemResult]) -> tuple[str, ...]:
    out = []
    for item in items:
        if item.status in ("verified", "inconclusive"):
            where = f" [{item.location}]" if item.location else ""
            out.append(f"{item.id}{where} {item.status}: {item.claim} — {item.reason}")
    return tuple(out)


def _settings(opts: LoopOptions, model: str | None = None) -> Any:
    from pytest_critic22.critic import CriticSettings

    return CriticSettings(model=model or opts.model or "", api_base=opts.api_base)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


_FAMILIES = (
    ("gpt", "openai"),
    ("chatgpt", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("claude", "anthropic"),
    ("gemini", "google"),
    ("gemma", "google"),
    ("mistral", "mistral"),
    ("codestral", "mistral"),
    ("llama", "meta"),
    ("deepseek", "deepseek"),
    ("qwen", "qwen"),
    ("grok", "xai"),
)


def family(model: str | None) -> str | None:
    """A model's provider family from its litellm string: the model name's known prefix,
    else the provider prefix (``openai/...``); None when unknown."""
    if not model:
        return None
    parts = model.lower().split("/")
    for name, fam in _FAMILIES:
        if parts[-1].startswith(name):
            return fam
    return parts[0] if len(parts) > 1 else None


def _independence(opts: LoopOptions) -> dict[str, str]:
    critic = None if opts.findings_dir is not None else family(opts.model)
    others = [family(m) for m in (opts.author_model, opts.fixer_model) if m]
    if critic is None or not others or None in others:
        independence = "unknown"
    elif critic in others:
        independence = "same-family"
    else:
        independence = "cross-family"
    accepted = "accepted" if independence == "cross-family" else "provisional"
    return {"review_independence": independence, "acceptance_status": accepted}


def _commit(run: _Run, record: RoundRecord, following: str) -> None:
    """Write the round: its record, memory, log, ledger event, receipt; the state last."""
    from pytest_critic22.ledger import Ledger

    folder = run.round_dir(record.round)
    (folder / "record.json").write_text(json.dumps(record.to_dict(), indent=2), encoding="utf-8")
    if record.status == "continue":
        (folder / "next.diff").write_text(following, encoding="utf-8")
    previous = run.records[-1] if run.records else None
    journal.append_memory(run.stage, record, previous)
    journal.append_round(run.stage, record)
    ledger = Ledger(run.stage.parent / "ledger.jsonl", run.run_id)
    ledger.append(
        "loop-round",
        {
            "round": record.round,
            "verdict": record.verdict,
            "score": record.score,
            "counts": record.counts(),
            "status": record.status,
            "trace_id": record.trace_id,
            "review_independence": record.review_independence,
        },
    )
    final = record.status != "continue"
    if record.positive:
        state.AcquittalLog(run.stage / state.ACQUITTAL_LOG).append(
            state.Receipt(
                run_id=run.run_id,
                round=record.round,
                backend=record.critic_source,
                effort=record.difficulty,
                verdict=record.verdict,
                score=record.score,
                trace_id=record.trace_id,
                timestamp=state.iso_z(state.utc_now()),
            )
        )
    if final:
        ledger.append("loop-stop", {"round": record.round, "status": record.status})
    state.write_state(
        run.stage,
        state.LoopState(
            run_id=run.run_id,
            round=record.round,
            agent_id=_agent(run.opts),
            status="completed" if final else "in_progress",
            last_score=record.score,
            last_verdict=record.verdict,
            pending_experiments=(),
            timestamp=state.iso_z(state.utc_now()),
        ),
    )


def _agent(opts: LoopOptions) -> str:
    if opts.findings_dir is not None:
        return f"replay:{opts.findings_dir}"
    return f"model:{opts.model}"


def _finish(run: _Run, record: RoundRecord, text: str) -> LoopResult:
    from pytest_critic22.reviewloop.render import render_file

    status = record.status
    if status == "acquitted":
        log = state.AcquittalLog(run.stage / state.ACQUITTAL_LOG)
        if not log.acquitted(run.run_id):  # only this run's receipt may stop it
            status = "blocked"
    final = run.stage / "final.diff"
    final.write_text(text, encoding="utf-8")
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
