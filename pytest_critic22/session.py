"""The review session: registered as a plugin object only when ``--critic22`` is given.

This is the I/O shell around the pure stages: it reads inputs, owns the trees, turns
blocking findings into items, gathers their results (from xdist workers too), applies
the gate, and writes the ledger and the reports.
"""

from __future__ import annotations

import atexit
import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from pytest_critic22 import report
from pytest_critic22.diffparse import DiffError, ParsedPatch, parse_patch
from pytest_critic22.finding import ParseResult, parse_findings
from pytest_critic22.gitio import GitError, git, toplevel
from pytest_critic22.inputs import (
    InputError,
    read_obligations,
    read_patch,
    read_request,
    read_text_or_file,
)
from pytest_critic22.items import PROPERTY, PatchFile, WrappedFinding
from pytest_critic22.ledger import STATE_DIR, Ledger, ensure_state_dir, new_run_id
from pytest_critic22.packet import ReviewPacket, StripReport, build_packet
from pytest_critic22.scrub import scrub
from pytest_critic22.verify import Disposition, Outcome, gate

__all__ = ["Critic22Plugin", "Review", "prepare_review"]


@dataclass(frozen=True, slots=True)
class Review:
    """Everything the run knows before any procedure runs."""

    patch_path: Path
    patch: ParsedPatch
    packet: ReviewPacket
    stripped: StripReport
    findings: ParseResult = field(default_factory=lambda: ParseResult(findings=()))
    wrapped: tuple[WrappedFinding, ...] = ()
    critic: dict[str, Any] = field(default_factory=dict)  # how the findings came to be


def prepare_review(config: pytest.Config) -> Review:
    """Read and check the inputs; every problem is one UsageError line."""
    from pytest_critic22.plugin import check_ini

    check_ini(config)
    invocation = config.invocation_params.dir
    try:
        patch_path, text = read_patch(config.getoption("critic22_patch"), invocation)
        try:
            patch = parse_patch(text)
        except DiffError as exc:
            raise InputError(f"--critic22: {patch_path.name}: {exc}") from None
        packet, stripped = build_packet(
            patch,
            specification=read_text_or_file(
                config.getoption("critic22_spec"), "--critic22-spec", invocation
            ),
            root_cause=read_text_or_file(
                config.getoption("critic22_root_cause"), "--critic22-root-cause", invocation
            ),
            obligations=read_obligations(config.getoption("critic22_obligations"), invocation),
            request=read_request(config.getoption("critic22_request"), invocation),
        )
    except InputError as exc:
        raise pytest.UsageError(str(exc)) from None
    return Review(patch_path, patch, packet, stripped)


def with_findings(
    config: pytest.Config,
    review: Review,
    raw: str,
    critic: dict[str, Any],
    validate: Any = None,
) -> Review:
    """Parse the critic's raw output (replayed, or from the model) and route each finding."""
    from pytest_critic22.falsify import route

    parsed = parse_findings(
        raw,
        review.patch.edit_ids,
        max_findings=config.getoption("critic22_max_findings"),
        validate=validate,
    )
    wrapped = []
    for number, finding in enumerate(parsed.findings, 1):
        found = route(finding.falsification)
        wrapped.append(WrappedFinding(f"F{number}", finding, found.procedure, found.reason))
    return replace(review, findings=parsed, wrapped=tuple(wrapped), critic=critic)


def configured_model(config: pytest.Config) -> str | None:
    """--critic22-model, else $CRITIC22_MODEL, else the ini value critic22_model."""
    value = config.getoption("critic22_model") or os.environ.get("CRITIC22_MODEL")
    if not value:
        value = str(config.getini("critic22_model") or "")
    return value.strip() or None


def critic_source(config: pytest.Config) -> tuple[str, str]:
    """Where findings come from: ("off"|"replay"|"model"|"none", why)."""
    engage = config.getoption("critic22_engage")
    if engage == "never":
        return "off", "--critic22-engage=never"
    if os.environ.get("CRITIC", "").strip().lower() == "off":
        return "off", "CRITIC=off in the environment"
    if config.getoption("critic22_findings"):
        return "replay", ""
    if configured_model(config):
        return "model", ""
    if engage == "always":
        raise pytest.UsageError(
            "--critic22-engage=always needs a critic: --critic22-model (or CRITIC22_MODEL, or "
            "the ini value critic22_model) or --critic22-findings=FILE"
        )
    return "none", "no model configured (--critic22-model, CRITIC22_MODEL or ini critic22_model)"


class Critic22Plugin:
    def __init__(self, config: pytest.Config, review: Review, ledger: Ledger, repo: Path) -> None:
        from pytest_critic22.trees import TreeSet

        self.config = config
        self.review = review
        self.ledger = ledger
        self.repo = repo
        self.rootpath = config.rootpath
        self.is_worker = hasattr(config, "workerinput")
        self.base_commit = _resolve_base(repo, config.getoption("critic22_base"))
        self.trees = TreeSet(repo, self.base_commit, ledger.run_id)
        self.results: dict[str, dict[str, Any]] = {}
        self.notes: list[str] = []
        self.disposition: Disposition | None = None
        self._context: Any = None
        self._cleaned = False
        self.raw_findings = "[]"
        self._checks: Any = None
        self.preservation: dict[str, list[str]] = {}
        self.uncovered: dict[str, list[int]] = {}
        self.coverage_status = ""
        self.impact_radius: dict[str, int] = {}
        self.engage_decision: dict[str, Any] = {}
        self.sandbox = _resolve_sandbox(config)
        self.trees.setup = _tree_setup(config, self.sandbox)
        self.problems: list[str] = []  # why the review could not do what was asked
        self.reported: set[str] = set()  # generated items that sent a report
        self.generated_count = 0
        if self.sandbox.note and not self.is_worker:
            self.notes.append(self.sandbox.note)

    # -- construction -----------------------------------------------------------------
    @classmethod
    def from_config(cls, config: pytest.Config) -> Critic22Plugin:
        review = prepare_review(config)
        repo = toplevel(config.rootpath) or toplevel(config.invocation_params.dir)
        if repo is None:
            raise pytest.UsageError(
                f"--critic22: {config.rootpath} is not inside a git repository "
                "(the review builds git worktrees of it)"
            )
        workerinput = getattr(config, "workerinput", None)
        run_id = workerinput.get("critic22_run_id") if workerinput else None
        if workerinput is not None and "critic22_raw" in workerinput:
            # The controller asked the critic; every worker parses the same answer.
            pending_raw = (workerinput["critic22_raw"], dict(workerinput["critic22_critic"]))
        else:
            pending_raw = None
        ledger_opt = config.getoption("critic22_ledger")
        ledger_path = (
            Path(ledger_opt) if ledger_opt else config.rootpath / STATE_DIR / "ledger.jsonl"
        )
        if not ledger_path.is_absolute():
            ledger_path = config.invocation_params.dir / ledger_path
        if workerinput is None:  # the controller checks its outputs once, before any tree
            from pytest_critic22.inputs import check_outputs

            report_opt = config.getoption("critic22_report")
            report_path = Path(report_opt) if report_opt else None
            if report_path is not None and not report_path.is_absolute():
                report_path = config.invocation_params.dir / report_path
            try:
                check_outputs(
                    state_dir=config.rootpath / STATE_DIR,
                    ledger=ledger_path,
                    ledger_given=bool(ledger_opt),
                    report=report_path,
                    state_needed=critic_source(config)[0] == "model",
                )
            except InputError as exc:
                raise pytest.UsageError(str(exc)) from None
        plugin = cls(config, review, Ledger(ledger_path, run_id or new_run_id()), repo)
        if pending_raw is not None:
            plugin.review = with_findings(
                config, plugin.review, *pending_raw, validate=plugin.validate_procedure
            )
        if workerinput is not None and "critic22_preservation" in workerinput:
            plugin.preservation = dict(workerinput["critic22_preservation"])
            plugin.review = replace(
                plugin.review,
                packet=replace(
                    plugin.review.packet,
                    preservation_obligations=tuple(workerinput["critic22_obligations"]),
                ),
            )
        if not plugin.is_worker:
            plugin._start()
        return plugin

    def _start(self) -> None:
        from pytest_critic22.trees import prune_stale

        self._check_user_nodeids()
        stale = prune_stale(self.repo, keep=self.ledger.run_id)
        if stale:
            self.notes.append(f"removed {len(stale)} stale worktree(s) of a crashed run")
        self.trees.claim()
        atexit.register(self.cleanup)
        self._record_start()
        self.ledger.append("sandbox", self.sandbox_record())
        applied = git(
            ["apply", "--reverse", "--check", "-"],
            self.repo,
            input=self.review.patch.whole_patch,
            check=False,
        )
        if applied.returncode == 0:
            self.notes.append(
                "the working tree already has the patch applied; reviewing it against "
                f"{self.config.getoption('critic22_base')} ({self.base_commit[:10]})"
            )
        problem = self.trees.check_applies(self.review.patch)
        if problem is not None:
            self.cleanup()
            raise pytest.UsageError(
                f"--critic22: {self.review.patch_path.name} does not apply to "
                f"{self.config.getoption('critic22_base')} ({self.base_commit[:10]}): {problem}"
            )
        source, why = critic_source(self.config)
        self._gather_evidence(with_coverage=source == "model")
        if source == "model" and self.config.getoption("critic22_engage") == "auto":
            decision = self._decide_engage()
            if not decision.engage:
                source, why = "declined", decision.reason
        raw, critic = self._ask_critic(source, why)
        self.raw_findings = raw
        self.review = with_findings(
            self.config, self.review, raw, critic, validate=self.validate_procedure
        )
        problem = critic_problem(self.config, source, self.review)
        if problem:
            self.problems.append(problem)
        self.ledger.append("critic", critic)
        self.ledger.append("findings-parsed", report.parse_result_dict(self.review.findings))

    def _check_user_nodeids(self) -> None:
        """Obligations and the acceptance test that name tests are data: a node id inside the
        repository (at the base commit, or added by the patch), never an option. One usage
        error before any tree is built."""
        from pytest_critic22.nodeids import check_nodeid

        added = {f.new_path for f in self.review.patch.files if f.new_path}
        named = [
            ("--critic22-obligations", o.strip())
            for o in self.review.packet.preservation_obligations
            if _meant_as_nodeid(o)
        ]
        acceptance = self.config.getoption("critic22_acceptance")
        if acceptance:
            named.append(("--critic22-acceptance", acceptance.strip()))
        for option, nodeid in named:
            problem = check_nodeid(nodeid)
            path = nodeid.split("::", 1)[0]
            if problem is None and path not in added:
                exists = git(
                    ["cat-file", "-e", f"{self.base_commit}:{path}"], self.repo, check=False
                )
                if exists.returncode != 0:
                    problem = f"{path} is not a file of the repository at {self.base_commit[:10]}"
            if problem:
                raise pytest.UsageError(f"{option}: {problem}")

    def _gather_evidence(self, *, with_coverage: bool) -> None:
        """Impact evidence and preservation obligations into the packet (never fatal)."""
        from pytest_critic22.evidence import changed_line_coverage, fixture_evidence, gather_impact
        from pytest_critic22.impact import bound_evidence
        from pytest_critic22.packet import blind
        from pytest_critic22.runner import detect_pythonpath
        from pytest_critic22.trees import TreeError, Variant

        packet = self.review.packet
        explicit = list(packet.preservation_obligations)
        try:
            base_tree = self.trees.get(Variant.base())
            patched_tree = self.trees.get(Variant.patched(self.review.patch))
            state = ensure_state_dir(self.rootpath / STATE_DIR)
            impact = gather_impact(
                self.review.patch, base_tree, patched_tree, state / "cache" / "graph"
            )
        except (TreeError, GitError, OSError) as exc:
            self.notes.append(f"impact evidence unavailable: {exc}")
            self.ledger.append("impact", {"error": str(exc)})
            return
        mode = self.config.getoption("critic22_preservation")
        auto = [t for t in impact.preservation_tests if t not in explicit] if mode == "auto" else []
        tests = [o for o in explicit if _is_nodeid(o)] + auto if mode != "off" else []
        self.preservation = _group_by_file(tests)
        evidence = dict(impact.evidence)
        # The fixtures shown are those of the folder the critic's test is written to.
        test_dir = self.test_dir()
        if evidence.get("fixtures", {}).get("directory") != (test_dir or "."):
            evidence["fixtures"] = fixture_evidence(base_tree, test_dir, state / "cache" / "graph")
        self.coverage_status = ""
        if with_coverage:
            option = self.config.getoption
            _covered, uncovered, status = changed_line_coverage(
                self.review.patch,
                patched_tree,
                tests,
                sandbox=self.sandbox,
                scratch=self.trees.scratch,
                timeout=option("critic22_timeout"),
                pythonpath=detect_pythonpath(patched_tree, _pythonpath_dirs(self.config)),
            )
            evidence["uncovered_lines"] = uncovered
            self.uncovered, self.coverage_status = uncovered, status
        budget = self.config.getoption("critic22_max_packet_chars")
        without = len(replace(packet, impact_evidence={}).canonical_json())
        evidence, cut = bound_evidence(evidence, max(0, budget - without))
        packet, _ = blind(
            replace(
                packet,
                impact_evidence=evidence,
                preservation_obligations=tuple(explicit + auto),
            )
        )
        self.review = replace(self.review, packet=packet)
        self.impact_radius = dict(impact.radius)
        self.ledger.append(
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
        if impact.unparsed:
            self.notes.append("files that do not parse: " + ", ".join(impact.unparsed))
        if cut:
            self.notes.append(f"impact evidence cut to fit the packet: {cut}")

    def _decide_engage(self) -> Any:
        from pytest_critic22.engage import Thresholds, decide_engage

        thresholds = Thresholds(
            **{
                name: int(self.config.getini(f"critic22_max_{name}"))
                for name in ("edits", "files", "symbols", "callers", "modules")
            }
        )
        decision = decide_engage(
            radius=self.impact_radius,
            uncovered=self.uncovered,
            preservation_status=self.coverage_status or "not run",
            thresholds=thresholds,
        )
        self.ledger.append(
            "engage",
            {
                **decision.to_dict(),
                "blast_radius": self.impact_radius,
                "uncovered_lines": self.uncovered,
                "preservation": self.coverage_status,
            },
        )
        self.engage_decision = decision.to_dict()
        return decision

    def _ask_critic(self, source: str, why: str) -> tuple[str, dict[str, Any]]:
        """At most one critic per run, asked here on the controller before any worker starts."""
        if source in ("off", "none", "declined"):
            return "[]", {"engaged": False, "source": source, "reason": why}
        if source == "replay":
            name = self.config.getoption("critic22_findings")
            try:
                raw = read_text_or_file(
                    "@" + name, "--critic22-findings", self.config.invocation_params.dir
                )
            except InputError as exc:
                self.cleanup()
                raise pytest.UsageError(str(exc)) from None
            return raw or "", {"engaged": True, "source": "replay", "file": name}
        from pytest_critic22.critic import CriticSettings, litellm_completion, review

        option = self.config.getoption
        settings = CriticSettings(
            model=configured_model(self.config) or "",
            api_base=option("critic22_api_base"),
            temperature=option("critic22_temperature"),
            max_tokens=option("critic22_max_tokens"),
            timeout=option("critic22_critic_timeout"),
            retries=option("critic22_retries"),
            fresh=option("critic22_fresh"),
        )
        state = ensure_state_dir(self.rootpath / STATE_DIR)
        traces = state / "traces" / self.ledger.run_id
        run = review(
            self.review.packet,
            self.review.patch.edit_ids,
            settings,
            litellm_completion(settings),
            max_findings=option("critic22_max_findings"),
            trace_dir=traces,
            cache_dir=state / "cache",
        )
        critic: dict[str, Any] = {
            "engaged": True,
            "source": "model",
            "model": settings.model,
            "traces": str(traces),
            **run.summary(),
        }
        if run.failure or run.raw is None:
            critic["absent"] = True
            critic["reason"] = run.failure
            return "[]", critic
        return run.raw, critic

    def _record_start(self) -> None:
        review = self.review
        self.ledger.append(
            "run-start",
            {
                "patch": str(review.patch_path),
                "rootdir": str(self.rootpath),
                "base": self.base_commit,
            },
        )
        self.ledger.append(
            "patch-parsed",
            {
                "files": [
                    {"path": f.path, "status": f.status, "edits": list(f.edit_ids)}
                    for f in review.patch.files
                ],
                "edits": len(review.patch.edits),
            },
        )
        self.ledger.append(
            "packet-built",
            {"digest": review.packet.digest, "stripped": review.stripped.to_dict()},
        )

    # -- xdist: workers get the controller's run id ----------------------------------------
    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["critic22_run_id"] = self.ledger.run_id
        node.workerinput["critic22_raw"] = self.raw_findings
        node.workerinput["critic22_critic"] = self.review.critic
        node.workerinput["critic22_preservation"] = self.preservation
        node.workerinput["critic22_obligations"] = list(self.review.packet.preservation_obligations)
        node.workerinput["critic22_sandbox"] = [
            self.sandbox.mode,
            list(self.sandbox.pass_env),
            self.sandbox.note,
        ]

    # -- collection ------------------------------------------------------------------------
    def pytest_ignore_collect(self, collection_path: Path, config: pytest.Config) -> bool | None:
        if config.getoption("critic22_only"):
            return True
        return None

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        if not self.preservation and not self.blocking_findings():
            return
        node = PatchFile.from_parent(
            session,
            path=self.review.patch_path,
            nodeid=self.review.patch_path.name,
            review=self,
        )
        generated = list(node.collect())
        items.extend(generated)
        self.generated_count = len(generated)
        # Reported like any collected file, so "collected N items" counts what will run.
        self.config.hook.pytest_collectreport(
            report=pytest.CollectReport(node.nodeid, "passed", None, list[Any](generated))
        )

    def pytest_report_collectionfinish(self, config: pytest.Config) -> str | None:
        if not self.generated_count:
            return None
        return (
            f"critic22: {self.generated_count} of the collected items generated from "
            f"{self.review.patch_path.name}"
        )

    def blocking_findings(self) -> list[WrappedFinding]:
        return [
            w
            for w in self.review.wrapped
            if w.finding.severity == "blocking" and w.procedure is not None
        ]

    # -- running -----------------------------------------------------------------------------
    @property
    def checks(self) -> Any:
        """This run's static checks: the built-ins plus what other plugins register."""
        if self._checks is None:
            from pytest_critic22.checks import REGISTRY, CheckRegistry

            registry = CheckRegistry()
            for name in REGISTRY.names():
                check = REGISTRY.get(name)
                assert check is not None
                registry.register(check)
            self.config.hook.pytest_critic22_register_checks(registry=registry)
            self._checks = registry
        return self._checks

    def validate_procedure(self, finding: Any, procedure: Any) -> str | None:
        """Can this procedure run on this patch? Node ids must name test files inside the
        patched tree; static checks must apply to the located edit."""
        if procedure.kind in ("counterfactual", "trace"):
            return self._nodeid_reason(procedure)
        if procedure.kind != "static":
            return None
        from pytest_critic22.procedures import static_reason

        return static_reason(finding, procedure, self.review.patch, self.trees, self.checks)

    def _nodeid_reason(self, procedure: Any) -> str | None:
        from pytest_critic22.nodeids import check_in_tree
        from pytest_critic22.trees import TreeError, Variant

        try:
            patched = self.trees.get(Variant.patched(self.review.patch))
        except TreeError:
            return None  # the item will say the tree cannot be built
        for nodeid in procedure.nodeids:
            problem = check_in_tree(nodeid, patched)
            if problem:
                return f"{procedure.kind}: {problem}"
        return None

    def test_dir(self) -> str:
        """Where the critic's tests go, relative to a tree: the folder of the tests that reach
        the touched code, else the first ``testpaths`` entry, else ``tests/``, else the root."""
        candidates = [str(Path(group).parent) for group in self.preservation]
        candidates += [str(p) for p in (self.config.getini("testpaths") or [])]
        candidates.append("tests")
        for candidate in candidates:
            path = Path(candidate)
            if candidate in ("", ".") or path.is_absolute() or ".." in path.parts:
                continue
            if (self.repo / path).is_dir() and not (self.repo / path).is_symlink():
                return path.as_posix()
        return ""

    def sandbox_record(self) -> dict[str, Any]:
        return {
            "mode": self.sandbox.mode,
            "isolated": self.sandbox.isolated,
            "warning": self.sandbox.note,
            "pass_env": list(self.sandbox.pass_env),
        }

    def execute(self, wrapped: WrappedFinding) -> Any:
        from pytest_critic22.procedures import execute, execute_static, execute_trace, scrubbed

        procedure = wrapped.procedure
        assert procedure is not None
        if procedure.kind == "static":
            result = execute_static(
                wrapped.finding_id, wrapped.finding, procedure, self._ctx(), self.checks
            )
        elif procedure.kind == "trace":
            result = execute_trace(wrapped.finding_id, wrapped.finding, procedure, self._ctx())
        else:
            result = execute(wrapped.finding_id, wrapped.finding, procedure, self._ctx())
        result = scrubbed(result)
        self.ledger.append("procedure-run", self.result_record(result))
        return result

    def execute_preservation(self, group_id: str, tests: tuple[str, ...]) -> Any:
        from pytest_critic22.procedures import execute_preservation, scrubbed

        result = scrubbed(execute_preservation(group_id, tests, self._ctx()))
        self.ledger.append("preservation-run", self.result_record(result))
        return result

    def _ctx(self) -> Any:
        if self._context is None:
            from pytest_critic22.procedures import (
                ExecutionContext,
                acceptance_test_of,
                obligation_tests,
            )

            self._context = ExecutionContext(
                patch=self.review.patch,
                trees=self.trees,
                timeout=self.config.getoption("critic22_timeout"),
                reruns=self.config.getoption("critic22_reruns"),
                slots=os.cpu_count() or 1,
                slot_dir=self.trees.slots,
                sandbox=self.sandbox,
                scratch=self.trees.scratch,
                test_dir=self.test_dir(),
                pythonpath=_pythonpath_dirs(self.config),
                acceptance=self.config.getoption("critic22_acceptance")
                or acceptance_test_of(self.review.packet.diagnosed_root_cause),
                obligation_tests=obligation_tests(self.review.packet.preservation_obligations),
            )
        return self._context

    def result_record(self, result: Any) -> dict[str, Any]:
        return {
            "id": result.finding_id,
            "outcome": result.outcome.kind,
            "reason": result.outcome.reason,
            "environment": result.outcome.environment,
            "counterfactual": result.counterfactual,
            "logs": result.logs,
        }

    def expected_items(self) -> list[str]:
        """The result ids of every generated item this review owes an outcome for."""
        return [f"preserve[{g}]" for g in self.preservation] + [
            w.finding_id for w in self.blocking_findings()
        ]

    def explain(self, wrapped: WrappedFinding, result: Any) -> str:
        return report.explain_failure(wrapped, self.result_record(result))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.is_worker:
            return
        prefix = f"{self.review.patch_path.name}::"
        if report.nodeid.startswith(prefix):
            self.reported.add(report.nodeid[len(prefix) :])
        for name, value in report.user_properties:
            if name == PROPERTY:
                record = json.loads(str(value))
                self.results[record["id"]] = record

    # -- the gate and the reports ----------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """The gate, first of every session-finish hook: its verdict's error item must reach
        the terminal's counts, --junitxml and the cache like any other report."""
        if self.is_worker:
            return
        outcomes = [
            (w.finding_id, w.finding.severity, _outcome(r))
            for w in self.review.wrapped
            if (r := self.results.get(w.finding_id)) is not None
        ]
        # A verified regression of a preservation obligation rejects as surely as a verified
        # finding: it is the deterministic validator speaking, no critic involved.
        outcomes += [
            (key, "blocking", _outcome(r))
            for key, r in sorted(self.results.items())
            if key.startswith("preserve[")
        ]
        interrupted = exitstatus == pytest.ExitCode.INTERRUPTED or bool(
            session.shouldfail or session.shouldstop
        )
        problems = list(self.problems)
        missing = [i for i in self.expected_items() if i not in self.results]
        crashed = [i for i in missing if _item_name(self, i) in self.reported]
        if crashed:
            problems.append("did not complete (an internal error): " + ", ".join(crashed))
        unrun = [i for i in missing if i not in crashed]
        if unrun and interrupted:
            problems.append("interrupted before these ran: " + ", ".join(unrun))
        elif unrun:
            self.notes.append("not run (deselected): " + ", ".join(unrun))
        self.disposition = gate(outcomes, problems=problems, interrupted=interrupted)
        self.ledger.append(
            "disposition",
            {
                "verdict": self.disposition.verdict,
                "verified": list(self.disposition.verified),
                "reason": self.disposition.reason,
                "problems": list(self.disposition.problems),
                "interrupted": self.disposition.interrupted,
            },
        )
        allowed = self.config.getoption("critic22_allow_incomplete")
        if self.disposition.verdict == "incomplete" and not allowed:
            self._report_incomplete(self.disposition)
        failing = self.disposition.verdict == "reject" or (
            self.disposition.verdict == "incomplete" and not allowed
        )
        if failing and session.exitstatus in (
            pytest.ExitCode.OK,
            pytest.ExitCode.NO_TESTS_COLLECTED,
        ):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if (
            self.config.getoption("critic22_only")
            and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
            and self.disposition.verdict != "reject"
        ):
            # A review-only run with no blocking finding is a review that found nothing to
            # verify: the answer is "proceed", not "no tests ran".
            session.exitstatus = pytest.ExitCode.OK
        self._write_report()

    def _report_incomplete(self, disposition: Disposition) -> None:
        """INCOMPLETE is an error item, ``patch.diff::review``, that says why."""
        nodeid = f"{self.review.patch_path.name}::review"
        location = (self.review.patch_path.name, None, "critic22 review")
        longrepr = "\n".join(
            [
                "critic22: INCOMPLETE — the review could not look, so it cannot say PROCEED:",
                *(f"  - {p}" for p in disposition.problems),
                "(--critic22-allow-incomplete accepts this; the verdict stays INCOMPLETE)",
            ]
        )
        hook = self.config.hook
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

    def _write_report(self) -> None:
        assert self.disposition is not None
        target = self.config.getoption("critic22_report")
        if target:
            path = Path(target)
            if not path.is_absolute():
                path = self.config.invocation_params.dir / path
            path.parent.mkdir(parents=True, exist_ok=True)
            document = report.json_report(
                run_id=self.ledger.run_id,
                review=self.review,
                results=self.results,
                disposition=self.disposition,
                ledger=str(self.ledger.path),
                base=self.base_commit,
                notes=self.notes,
                preservation=self.preservation,
                engage=self.engage_decision,
                sandbox=self.sandbox_record(),
            )
            text = json.dumps(document, indent=2, sort_keys=True) + "\n"
            path.write_text(scrub(text, os.environ))

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.is_worker:
            return
        terminalreporter.section("critic22")
        for line in report.summary_lines(
            self.review,
            self.results,
            self.disposition,
            ledger=str(self.ledger.path),
            notes=self.notes,
            preservation=self.preservation,
            preservation_mode=self.config.getoption("critic22_preservation"),
        ):
            terminalreporter.line(line)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.is_worker:
            return
        self.cleanup()
        self.ledger.append("run-end", {})

    def cleanup(self) -> None:
        """Remove this run's worktrees. Safe to call twice, and from atexit."""
        if self._cleaned or self.is_worker:
            return
        self._cleaned = True
        self.trees.remove_all()


def _outcome(record: dict[str, Any]) -> Outcome:
    return Outcome(record["outcome"], record["reason"], bool(record.get("environment")))


def _item_name(plugin: Critic22Plugin, result_id: str) -> str:
    """A result id's item name: ``F1`` -> ``F1[e2]``; preservation ids are their names."""
    for w in plugin.review.wrapped:
        if w.finding_id == result_id:
            return f"{w.finding_id}[{w.finding.location}]"
    return result_id


def critic_problem(config: pytest.Config, source: str, review: Review) -> str:
    """Why a critic that was required gave nothing usable ("" when it did, or was optional).

    Required: findings given to replay, or --critic22-engage=always. Usable: a findings list
    (possibly empty) with at least one record that passed the schema, unless it was empty.
    """
    required = source == "replay" or (
        source == "model" and config.getoption("critic22_engage") == "always"
    )
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


def _meant_as_nodeid(text: str) -> bool:
    """An obligation written as a test (not prose): one token naming a .py file."""
    stripped = text.strip()
    head = stripped.split("::", 1)[0]
    return ("::" in stripped or stripped.endswith(".py")) and " " not in head


def _is_nodeid(text: str) -> bool:
    from pytest_critic22.nodeids import is_nodeid

    return is_nodeid(text)


def _pythonpath_dirs(config: pytest.Config) -> tuple[str, ...]:
    """--critic22-pythonpath as folders relative to a tree (empty: detect src/ and root)."""
    value = config.getoption("critic22_pythonpath") or ""
    return tuple(p.strip() for p in value.split(",") if p.strip())


def _tree_setup(config: pytest.Config, sandbox: Any) -> Any:
    """ini critic22_copy and critic22_tree_setup, checked before any tree is built."""
    import shlex

    from pytest_critic22.trees import TreeSetup

    copy = tuple(str(g) for g in (config.getini("critic22_copy") or []))
    for glob in copy:
        if glob.startswith("/") or ".." in Path(glob).parts:
            raise pytest.UsageError(
                f"ini critic22_copy: {glob!r} must be a glob relative to the repository root"
            )
    raw = str(config.getini("critic22_tree_setup") or "").strip()
    try:
        command = tuple(shlex.split(raw))
    except ValueError as exc:
        raise pytest.UsageError(f"ini critic22_tree_setup: {exc}: {raw!r}") from None
    return TreeSetup(
        copy=copy,
        command=command,
        timeout=config.getoption("critic22_timeout"),
        sandbox=sandbox,
        pythonpath=_pythonpath_dirs(config),
    )


def _resolve_sandbox(config: pytest.Config) -> Any:
    """The run's sandbox: the controller probes once, its xdist workers take its answer."""
    from pytest_critic22.sandbox import Sandbox, SandboxError, resolve

    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and "critic22_sandbox" in workerinput:
        mode, names, note = workerinput["critic22_sandbox"]
        return Sandbox(mode, tuple(names), note)
    requested = config.getoption("critic22_sandbox") or str(
        config.getini("critic22_sandbox") or "auto"
    )
    names = [
        *(config.getini("critic22_pass_env") or []),
        *(config.getoption("critic22_pass_env") or []),
    ]
    try:
        return resolve(requested.strip(), names)
    except SandboxError as exc:
        raise pytest.UsageError(str(exc)) from None


def _group_by_file(tests: list[str]) -> dict[str, list[str]]:
    """One preservation group per test file, in first-seen order."""
    groups: dict[str, list[str]] = {}
    for test in tests:
        groups.setdefault(test.split("::", 1)[0], [])
        if test not in groups[test.split("::", 1)[0]]:
            groups[test.split("::", 1)[0]].append(test)
    return groups


def _resolve_base(repo: Path, rev: str) -> str:
    try:
        done = git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], repo)
    except GitError:
        raise pytest.UsageError(
            f"--critic22-base: {rev!r} is not a commit in {repo} "
            "(a repository needs at least one commit to review a patch against)"
        ) from None
    return done.stdout.strip()
