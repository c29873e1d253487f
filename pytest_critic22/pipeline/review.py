"""The review pipeline as plain functions, and the one frozen :class:`Review` it yields.

inputs -> patch -> packet -> trees -> evidence -> engage -> critic -> parse once -> route
once -> :class:`Review`. Nothing here is a pytest hook: the plugin
(:mod:`pytest_critic22.plugin.session`) calls :func:`read_inputs` and :func:`build_review` and
keeps the result. The I/O objects (trees, ledger, the model client) are passed in.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_critic22.config.inputs import (
    InputError,
    ScarEntry,
    read_obligations,
    read_patch,
    read_request,
    read_scar,
    read_text_or_file,
)
from pytest_critic22.config.settings import ReviewOptions
from pytest_critic22.critic.finding import ParseResult, ReviewFinding, parse_findings
from pytest_critic22.execution.git import git
from pytest_critic22.execution.ledger import Ledger
from pytest_critic22.execution.sandbox import RLIMITS_LIMITS, Sandbox
from pytest_critic22.model.nodeids import check_nodeid, looks_like_nodeid
from pytest_critic22.model.packet import ReviewPacket, StripReport, build_packet
from pytest_critic22.model.patch import DiffError, ParsedPatch, parse_patch
from pytest_critic22.model.procedure import COLLECTION, Procedure
from pytest_critic22.pipeline.services import Services
from pytest_critic22.verification.procedures import Scope

if TYPE_CHECKING:
    from pytest_critic22.checks import CheckRegistry
    from pytest_critic22.kinds import KindRegistry

__all__ = [
    "Inputs",
    "Review",
    "RoutedFinding",
    "RunInfo",
    "build_review",
    "critic_problem",
    "critic_source",
    "preservation_id",
    "read_inputs",
    "route_findings",
]


@dataclass(frozen=True, slots=True)
class RunInfo:
    """What the reports say about the run itself, beside the review."""

    run_id: str
    ledger: str  # the ledger's path
    notes: tuple[str, ...] = ()  # the review's notes and what the run added
    sandbox: Mapping[str, Any] = field(default_factory=dict)  # mode, isolated, warning, pass_env
    started: float = 0.0  # time.time() at session start
    seconds: float = 0.0  # wall time from session start to the gate
    # What a report format reads beside the review: the repository (the base's sources)
    # and the run's registries (a plugin's kinds and checks included).
    repo: Path | None = None
    kinds: KindRegistry | None = None
    checks: CheckRegistry | None = None


def preservation_id(group: str) -> str:
    """A preservation group's result id and item name: ``preserve[tests/test_x.py]``."""
    return f"preserve[{group}]"


@dataclass(frozen=True, slots=True)
class Inputs:
    """What the user gave, read and checked: the patch, parsed, and its blinded packet."""

    patch_path: Path
    patch: ParsedPatch
    packet: ReviewPacket
    stripped: StripReport
    scar: tuple[ScarEntry, ...] = ()  # critic22 loop: tests verified in earlier rounds
    memory: str = ""  # critic22 loop: executed facts of the critic's earlier rounds


@dataclass(frozen=True, slots=True)
class RoutedFinding:
    """A finding and its route: the finding itself stays six fields."""

    finding_id: str
    finding: ReviewFinding
    procedure: Procedure | None
    route_reason: str = ""

    @property
    def item_name(self) -> str:
        return f"{self.finding_id}[{self.finding.location}]"

    @property
    def blocking(self) -> bool:
        return self.finding.severity == "blocking" and self.procedure is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.finding_id,
            "finding": self.finding.to_dict(),
            "procedure": self.procedure.to_dict() if self.procedure else None,
            "route_reason": self.route_reason,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RoutedFinding:
        procedure = data.get("procedure")
        return cls(
            str(data["id"]),
            ReviewFinding(**data["finding"]),
            Procedure.from_dict(procedure) if procedure else None,
            str(data.get("route_reason", "")),
        )


@dataclass(frozen=True, slots=True)
class Review:
    """Everything the run knows before any procedure runs; what the items and reports read."""

    patch_path: Path
    patch: ParsedPatch
    packet: ReviewPacket
    stripped: StripReport
    base_commit: str = ""
    findings: ParseResult = field(default_factory=lambda: ParseResult(findings=()))
    wrapped: tuple[RoutedFinding, ...] = ()
    critic: Mapping[str, Any] = field(default_factory=dict)  # how the findings came to be
    preservation: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # group -> tests
    harness_changed: tuple[str, ...] = ()  # the patch's files that change the test harness
    test_dir: str = ""  # where the critic's tests go, relative to a tree
    acceptance: str | None = None
    obligation_tests: tuple[str, ...] = ()
    engage: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()  # why the review could not do what was asked

    def blocking(self) -> list[RoutedFinding]:
        return [w for w in self.wrapped if w.blocking]

    def expected_items(self) -> list[str]:
        """The result ids of every generated item this review owes an outcome for."""
        return [preservation_id(g) for g in self.preservation] + [
            w.finding_id for w in self.blocking()
        ]

    def item_name(self, result_id: str) -> str:
        """A result id's item name: ``F1`` -> ``F1[e2]``; preservation ids are their names."""
        for w in self.wrapped:
            if w.finding_id == result_id:
                return w.item_name
        return result_id


# -- inputs -------------------------------------------------------------------------------


def read_inputs(opts: ReviewOptions) -> Inputs:
    """Read and check the inputs; every problem is one :class:`InputError` line."""
    where = opts.invocation_dir
    patch_path, text = read_patch(opts.patch, where)
    try:
        patch = parse_patch(text)
    except DiffError as exc:
        raise InputError(f"--critic22: {patch_path.name}: {exc}") from None
    packet, stripped = build_packet(
        patch,
        specification=read_text_or_file(opts.spec, "--critic22-spec", where),
        root_cause=read_text_or_file(opts.root_cause, "--critic22-root-cause", where),
        obligations=read_obligations(opts.obligations, where),
        request=read_request(opts.request, where),
    )
    memory = ""
    if opts.reviewer_memory:
        option = "--critic22-reviewer-memory"
        memory = read_text_or_file("@" + opts.reviewer_memory, option, where) or ""
    scar = read_scar(opts.scar, where)
    return Inputs(patch_path, patch, packet, stripped, scar, memory or "")


def check_user_nodeids(opts: ReviewOptions, inputs: Inputs, repo: Path, base: str) -> None:
    """Obligations and the acceptance test that name tests are data: a node id inside the
    repository (at the base commit, or added by the patch), never an option."""
    added = {f.new_path for f in inputs.patch.files if f.new_path}
    named = [
        ("--critic22-obligations", o.strip())
        for o in inputs.packet.preservation_obligations
        if looks_like_nodeid(o)
    ]
    if opts.acceptance:
        named.append(("--critic22-acceptance", opts.acceptance.strip()))
    for option, nodeid in named:
        problem = check_nodeid(nodeid)
        path = nodeid.split("::", 1)[0]
        if problem is None and path not in added:
            exists = git(["cat-file", "-e", f"{base}:{path}"], repo, check=False)
            if exists.returncode != 0:
                problem = f"{path} is not a file of the repository at {base[:10]}"
        if problem:
            raise InputError(f"{option}: {problem}")


# -- the critic's source --------------------------------------------------------------------


def critic_source(opts: ReviewOptions) -> tuple[str, str]:
    """Where findings come from: ("off"|"replay"|"model"|"none", why)."""
    if opts.engage == "never":
        return "off", "--critic22-engage=never"
    if os.environ.get("CRITIC", "").strip().lower() == "off":
        return "off", "CRITIC=off in the environment"
    if opts.findings_file:
        return "replay", ""
    if opts.model:
        return "model", ""
    if opts.engage == "always":
        raise InputError(
            "--critic22-engage=always needs a critic: --critic22-model (or CRITIC22_MODEL, or "
            "the ini value critic22_model) or --critic22-findings=FILE"
        )
    return "none", "no model configured (--critic22-model, CRITIC22_MODEL or ini critic22_model)"


def critic_problem(opts: ReviewOptions, source: str, review: Review) -> str:
    """Why a critic that was required gave nothing usable ("" when it did, or was optional).

    Required: findings given to replay, or --critic22-engage=always. Usable: a findings list
    (possibly empty) with at least one record that passed the schema, unless it was empty.
    """
    required = source == "replay" or (source == "model" and opts.engage == "always")
    if not required:
        return ""
    critic = review.critic
    if critic.get("absent"):
        return f"the required critic gave no answer: {critic.get('reason', '')}"
    parsed = review.findings
    if parsed.error:
        what = "the findings file" if source == "replay" else "the required critic's answer"
        return f"{what} is unusable: {parsed.error}"
    if not parsed.findings and parsed.rejected:
        return f"the critic's {len(parsed.rejected)} record(s) were all rejected by the schema"
    return ""


def route_findings(parsed: ParseResult) -> tuple[RoutedFinding, ...]:
    """Number the parsed findings; their routes were decided once, by the parser."""
    routes = parsed.routes
    if len(routes) != len(parsed.findings):  # a ParseResult made by hand, not by the parser
        from pytest_critic22.kinds.grammar import route

        routes = tuple(route(f.falsification) for f in parsed.findings)
    out = []
    for number, (finding, found) in enumerate(zip(parsed.findings, routes, strict=True), 1):
        out.append(RoutedFinding(f"F{number}", finding, found.procedure, found.reason))
    return tuple(out)


# -- the whole pipeline ------------------------------------------------------------------


def build_review(opts: ReviewOptions, inputs: Inputs, base: str, svc: Services) -> Review:
    """The review of one patch, from its inputs to routed findings, on the controller
    (the inputs already checked, :func:`check_user_nodeids` included).

    Raises :class:`InputError` for what the user must fix (the patch does not apply);
    everything else that fails is recorded in the review's notes or problems.
    """
    from pytest_critic22.execution.trees import prune_deleted_repositories, prune_stale
    from pytest_critic22.pipeline.evidence import Evidence, engage_decision, gather_evidence

    review = Review(inputs.patch_path, inputs.patch, inputs.packet, inputs.stripped, base)
    notes: list[str] = [svc.sandbox.note] if svc.sandbox.note else []
    if not svc.sandbox.isolated:
        notes.append(RLIMITS_LIMITS)
    stale = prune_stale(svc.repo, keep=svc.ledger.run_id)
    prune_deleted_repositories()  # folders a killed run left for a repository deleted since
    if stale:
        notes.append(f"removed {len(stale)} stale worktree(s) of a crashed run")
    svc.trees.claim()
    _record_start(svc.ledger, review, opts)
    svc.ledger.append("sandbox", sandbox_record(svc.sandbox))
    if opts.untrusted_tree:  # the plugin's early hook imported nothing of the tree (no conftest)
        notes.append(
            f"the working tree {opts.untrusted_tree}: nothing of it was imported in this "
            "process (no conftest.py, its folders off sys.path); reviewing the patch against "
            f"{opts.base} ({base[:10]})"
        )
    problem = svc.trees.check_applies(inputs.patch)
    if problem is not None:
        raise InputError(
            f"--critic22: {inputs.patch_path.name} does not apply to "
            f"{opts.base} ({base[:10]}): {problem}"
        )
    if review.patch.binary:
        notes.append("not reviewed (binary): " + ", ".join(review.patch.binary))
    source, why = critic_source(opts)
    if review.patch.files:
        evidence = gather_evidence(
            opts, review.patch, review.packet, svc, with_coverage=source == "model"
        )
    else:  # a pull request that only merges, or changes only binary files
        what = "changes only binary files" if review.patch.binary else "is empty"
        notes.append(f"nothing to review: the patch {what}")
        source, why = "declined", "nothing to review"
        evidence = Evidence(review.packet)
    from pytest_critic22.verification.harness import harness_changed

    groups = dict(evidence.preservation)
    if opts.preservation != "off" and review.patch.files:  # invariant 14: with no critic
        groups = {COLLECTION: (), **groups}
    review = replace(
        review,
        packet=evidence.packet,
        preservation=groups,
        test_dir=evidence.test_dir,
        harness_changed=harness_changed(inputs.patch, svc.trees),
    )
    notes += evidence.notes
    if review.harness_changed:
        changed = ", ".join(review.harness_changed)
        notes.append(f"the patch changes the test harness ({changed}): see preservation")
    engage: Mapping[str, Any] = {}
    if source == "model" and opts.engage == "auto":
        decision = engage_decision(opts, evidence, svc.ledger)
        engage = decision.to_dict()
        if not decision.engage:
            source, why = "declined", decision.reason
    review = _ask_and_route(opts, review, svc, source, why, inputs)
    review = replace(review, wrapped=review.wrapped + scar_findings(inputs.scar))
    from pytest_critic22.verification.procedures import acceptance_test_of, obligation_tests

    review = replace(
        review,
        engage=engage,
        notes=tuple(notes),
        acceptance=opts.acceptance or acceptance_test_of(review.packet.diagnosed_root_cause),
        obligation_tests=obligation_tests(review.packet.preservation_obligations),
    )
    problem = critic_problem(opts, source, review)
    if problem:
        review = replace(review, problems=(*review.problems, problem))
    svc.ledger.append("critic", dict(review.critic))
    svc.ledger.append("findings-parsed", review.findings.to_dict())
    return review


def _ask_and_route(
    opts: ReviewOptions, review: Review, svc: Services, source: str, why: str, inputs: Inputs
) -> Review:
    """At most one critic per run; its answer parsed exactly once, each finding routed once."""
    scope = Scope(review.patch, svc.trees, svc.checks)

    def validate(finding: ReviewFinding, procedure: Procedure) -> str | None:
        return svc.kinds.validate(finding, procedure, scope)

    def parse(raw: str) -> ParseResult:
        return parse_findings(
            raw,
            review.patch.edit_ids,
            max_findings=opts.max_findings,
            validate=validate,
            route=svc.kinds.route,
        )

    critic: dict[str, Any]
    if source in ("off", "none", "declined"):
        critic = {"engaged": False, "source": source, "reason": why}
        parsed = parse("[]")
    elif source == "replay":
        findings_file = opts.findings_file or ""
        raw = read_text_or_file("@" + findings_file, "--critic22-findings", opts.invocation_dir)
        critic = {"engaged": True, "source": "replay", "file": findings_file, "raw_answer": raw}
        parsed = parse(raw or "")
    else:
        from pytest_critic22.critic.appendix import critic_appendix

        appendix = critic_appendix(inputs.memory, opts.full_source, inputs.patch, svc.trees)
        critic, parsed = _ask_model(opts, review, svc, parse, appendix)
    if source in ("replay", "model") and critic.get("raw_answer") is not None:
        from pytest_critic22.critic.finding import memory_update_of

        update = memory_update_of(str(critic.pop("raw_answer")))
        if update:
            critic["memory_update"] = update
    critic.pop("raw_answer", None)
    return replace(review, findings=parsed, wrapped=route_findings(parsed), critic=critic)


def _ask_model(
    opts: ReviewOptions,
    review: Review,
    svc: Services,
    parse: Callable[[str], ParseResult],
    appendix: str = "",
) -> tuple[dict[str, Any], ParseResult]:
    from pytest_critic22.critic.critic import review as ask

    settings = opts.critic_settings()
    state = svc.state_dir()
    traces = state / "traces" / svc.ledger.run_id
    run = ask(
        review.packet,
        review.patch.edit_ids,
        settings,
        svc.make_completion(settings),
        max_findings=opts.max_findings,
        trace_dir=traces,
        cache_dir=state / "cache",
        system=prompt_for(svc.kinds, svc.checks),
        parse=parse,
        progress=svc.progress,
        appendix=appendix,
    )
    critic: dict[str, Any] = {
        "engaged": True,
        "source": "model",
        "model": settings.model,
        "traces": str(traces),
        **run.summary(),
    }
    if run.raw is not None:
        # The chosen answer, verbatim, for whoever audits the round (critic22 loop).
        traces.mkdir(parents=True, exist_ok=True)
        (traces / "answer.txt").write_text(run.raw, encoding="utf-8")
        critic["answer"] = str(traces / "answer.txt")
        critic["raw_answer"] = run.raw
    if run.failure or run.raw is None or run.parsed is None:
        critic["absent"] = True
        critic["reason"] = run.failure
        return critic, parse("[]")
    return critic, run.parsed


def scar_findings(entries: tuple[ScarEntry, ...]) -> tuple[RoutedFinding, ...]:
    """Tests verified in earlier rounds of the loop, as blocking items ``S1``, ``S2``, ...:
    never shown to the critic, run on this candidate whatever the critic says."""
    from pytest_critic22.kinds.scar import scar_procedure

    out = []
    for number, entry in enumerate(entries, 1):
        finding = ReviewFinding(
            location="whole-patch",
            claim=f"scar tissue of {entry.id}: {entry.claim}",
            severity="blocking",
            evidence=f"verified by execution in an earlier round ({entry.id}); it must stay fixed",
            falsification="scar:\n" + entry.test,
            confidence=0.0,
        )
        out.append(RoutedFinding(f"S{number}", finding, scar_procedure(entry.test)))
    return tuple(out)


def prompt_for(kinds: KindRegistry, checks: Any) -> str:
    """The critic's system prompt for this run: its grammar from the registered kinds."""
    from pytest_critic22.critic.critic import system_prompt

    return system_prompt(kinds.grammar(checks))


def sandbox_record(sandbox: Sandbox) -> dict[str, Any]:
    return {
        "mode": sandbox.mode,
        "isolated": sandbox.isolated,
        "warning": sandbox.note,
        "pass_env": list(sandbox.pass_env),
    }


def _record_start(ledger: Ledger, review: Review, opts: ReviewOptions) -> None:
    ledger.append(
        "run-start",
        {
            "patch": str(review.patch_path),
            "rootdir": str(opts.rootpath),
            "base": review.base_commit,
        },
    )
    ledger.append(
        "patch-parsed",
        {
            "files": [
                {"path": f.path, "status": f.status, "edits": list(f.edit_ids)}
                for f in review.patch.files
            ],
            "edits": len(review.patch.edits),
        },
    )
    ledger.append(
        "packet-built",
        {"digest": review.packet.digest, "stripped": review.stripped.to_dict()},
    )
