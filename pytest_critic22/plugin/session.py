"""The plugin object of a review run: pytest hooks and results, nothing else.

Registered (and kept under :data:`PLUGIN_KEY` in ``config.stash``) only when ``--critic22``
is given. At configure it reads and checks the inputs (one UsageError line each, before any
tree); the expensive work — trees, evidence, the critic — happens at session start, on the
controller only, through the plain pipeline of :mod:`pytest_critic22.pipeline.review`. xdist workers
receive the routed findings from the controller, never the critic's raw text.
"""

from __future__ import annotations

import atexit
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_critic22.config.inputs import InputError
from pytest_critic22.config.settings import ReviewOptions
from pytest_critic22.execution.ledger import Ledger, ensure_state_dir, new_run_id
from pytest_critic22.execution.statedir import STATE_DIR
from pytest_critic22.execution.trees import TreeSet
from pytest_critic22.model.results import Disposition
from pytest_critic22.pipeline.review import (
    Inputs,
    Review,
    RunInfo,
    read_inputs,
    sandbox_record,
)
from pytest_critic22.plugin.executor import ItemExecutor
from pytest_critic22.plugin.items import PROPERTY, PatchFile
from pytest_critic22.plugin.wire import review_from_wire, review_to_wire
from pytest_critic22.verification.procedures import FindingResult

if TYPE_CHECKING:
    from collections.abc import Callable

    from pytest_critic22.checks import CheckRegistry
    from pytest_critic22.critic.critic import Completion, CriticSettings
    from pytest_critic22.execution.progress import TerminalProgress
    from pytest_critic22.execution.sandbox import Sandbox
    from pytest_critic22.kinds import KindRegistry

__all__ = ["PLUGIN_KEY", "Critic22Plugin", "configure"]

PLUGIN_KEY = pytest.StashKey["Critic22Plugin"]()


def configure(config: pytest.Config) -> Critic22Plugin:
    """Read and check everything the user gave; build nothing yet."""
    from pytest_critic22.plugin.runconfig import end_probe, start_probe

    try:
        opts = ReviewOptions.from_config(config)
        inputs = read_inputs(opts)
    except InputError as exc:
        raise pytest.UsageError(str(exc)) from None
    probe = start_probe(config)  # its child runs while the rest is read
    try:
        return _configure(config, opts, inputs)
    finally:
        end_probe(probe)  # never left running (a usage error): its folder goes with it


def _configure(config: pytest.Config, opts: ReviewOptions, inputs: Inputs) -> Critic22Plugin:
    import importlib

    from pytest_critic22.execution.git import toplevel
    from pytest_critic22.pipeline.review import check_user_nodeids
    from pytest_critic22.plugin.runconfig import (
        check_outputs_of,
        ledger_path,
        resolve_base,
        resolve_sandbox,
        tree_setup,
    )
    from pytest_critic22.report.formats import FORMATS

    repo = toplevel(config.rootpath) or toplevel(config.invocation_params.dir)
    if repo is None:
        raise pytest.UsageError(
            f"--critic22: {config.rootpath} is not inside a git repository "
            "(the review builds git worktrees of it)"
        )
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is None:  # the controller checks its outputs once, before any tree
        check_outputs_of(config, opts)
    run_id = workerinput.get("critic22_run_id") if workerinput else None
    ledger = Ledger(ledger_path(config), run_id or new_run_id())
    base = resolve_base(repo, opts.base)
    if workerinput is None:
        try:
            check_user_nodeids(opts, inputs, repo, base)
        except InputError as exc:
            raise pytest.UsageError(str(exc)) from None
    # The report formats write on the controller only. Imported while the probe's child runs.
    formats = [(n, importlib.import_module(n)) for n in FORMATS] if workerinput is None else []
    sandbox = resolve_sandbox(config)  # after the probe has ended (its answer cached)
    trees = TreeSet(repo, base, ledger.run_id, warm=not opts.fresh_trees)
    trees.setup = tree_setup(config, sandbox, opts)
    plugin = Critic22Plugin(config, opts, inputs, ledger, trees, sandbox)
    for name, module in formats:
        if not config.pluginmanager.has_plugin(name):
            config.pluginmanager.register(module, name)
    if workerinput is not None and "critic22_review" in workerinput:
        plugin.review = review_from_wire(
            workerinput["critic22_review"], plugin.inputs, plugin.base_commit
        )
    return plugin


class Critic22Plugin:
    def __init__(
        self,
        config: pytest.Config,
        opts: ReviewOptions,
        inputs: Inputs,
        ledger: Ledger,
        trees: TreeSet,
        sandbox: Sandbox,
    ) -> None:
        self.config = config
        self.opts = opts
        self.inputs = inputs
        self.ledger = ledger
        self.trees = trees
        self.repo = trees.repo
        self.base_commit = trees.base_commit
        self.sandbox = sandbox
        self.is_worker = hasattr(config, "workerinput")
        self.review: Review | None = None
        self.results: dict[str, FindingResult] = {}
        self.notes: list[str] = []  # what the run adds to the review's notes as it goes
        self.disposition: Disposition | None = None
        self.reported: set[str] = set()  # generated items that sent a report
        self.stopped = False  # Ctrl-C or pytest.exit(), whatever exit status it asked for
        self.generated_count = 0
        self._kinds: KindRegistry | None = None
        self._checks: CheckRegistry | None = None
        self._claimed = False  # this run claimed trees in the repository: cleanup owes them
        self._started = 0.0
        self.display: TerminalProgress | None = None  # the controller's progress line

    # -- registries: the built-ins plus what other plugins register ----------------------
    @property
    def kinds(self) -> KindRegistry:
        if self._kinds is None:
            from pytest_critic22.kinds import builtin_kinds

            registry = builtin_kinds()
            self.config.hook.pytest_critic22_register_procedures(registry=registry)
            self._kinds = registry
        return self._kinds

    @property
    def checks(self) -> CheckRegistry:
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

    # -- the review, at session start (never at configure, never on a worker) ---------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Before xdist starts its workers: they receive the routed findings."""
        if self.is_worker or self.review is not None:
            return
        self._started = time.time()
        if self.config.option.collectonly:
            self.review = self._listed_only()
            return
        from pytest_critic22.execution.progress import controller_display, folder_of
        from pytest_critic22.pipeline.review import build_review
        from pytest_critic22.pipeline.services import Services

        self.display = controller_display(self.config)
        services = Services(
            repo=self.repo,
            trees=self.trees,
            ledger=self.ledger,
            sandbox=self.sandbox,
            kinds=self.kinds,
            checks=self.checks,
            state_dir=lambda: ensure_state_dir(self.opts.rootpath / STATE_DIR),
            make_completion=self._completion,
            progress=self.display,
        )
        # From here the run owns trees in the repository: whatever happens, they go.
        self._claimed = True
        atexit.register(self.cleanup)
        try:
            self.review = build_review(self.opts, self.inputs, self.base_commit, services)
        except InputError as exc:
            self.cleanup()
            raise pytest.UsageError(str(exc)) from None
        finally:
            if self.display is not None:
                self.display.settle()
        if self.display is not None and self.config.pluginmanager.has_plugin("dsession"):
            self.display.follow(folder_of(self.trees.scratch))  # what the workers say

    def _listed_only(self) -> Review:
        """--collect-only: no tree, no model; what can be listed without them is."""
        from pytest_critic22.pipeline.listing import list_review

        try:
            return list_review(
                self.opts, self.inputs, self.base_commit, self.repo, self.kinds, self.checks
            )
        except InputError as exc:
            raise pytest.UsageError(str(exc)) from None

    def _completion(self, settings: CriticSettings) -> Completion:
        completion: Completion = self.config.hook.pytest_critic22_make_completion(
            config=self.config, settings=settings
        )
        return completion

    @pytest.hookimpl(trylast=True)
    def pytest_critic22_make_completion(
        self, config: pytest.Config, settings: CriticSettings
    ) -> Completion:
        """The default model client: litellm."""
        from pytest_critic22.critic.critic import litellm_completion

        return litellm_completion(settings)

    # -- xdist: workers get the controller's review -----------------------------------------
    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        review = self.review
        if review is None:
            raise RuntimeError("critic22: a worker started before the review was built")
        node.workerinput["critic22_run_id"] = self.ledger.run_id
        node.workerinput["critic22_review"] = review_to_wire(review)
        if self.display is not None:
            from pytest_critic22.execution.progress import MODE_KEY

            node.workerinput[MODE_KEY] = self.display.mode
        node.workerinput["critic22_sandbox"] = [
            self.sandbox.mode,
            list(self.sandbox.pass_env),
            self.sandbox.note,
        ]

    # -- collection ------------------------------------------------------------------------
    def pytest_ignore_collect(self, collection_path: Path, config: pytest.Config) -> bool | None:
        return True if self.opts.only else None

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        review = self.review
        if review is None or (not review.preservation and not review.blocking()):
            return
        node = PatchFile.from_parent(
            session,
            path=review.patch_path,
            nodeid=review.patch_path.name,
            review=review,
            executor=ItemExecutor(
                review,
                self.opts,
                self.trees,
                self.sandbox,
                self.ledger,
                self.kinds,
                self.checks,
                self._progress_sink(),
            ),
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
            f"{self.inputs.patch_path.name}"
        )

    def _progress_sink(self) -> Callable[[str], None] | None:
        """Where this process's items say their steps: the controller's display, or (on an
        xdist worker) a file in the run's scratch folder that the controller follows."""
        from pytest_critic22.execution.progress import folder_of, worker_progress

        workerinput: dict[str, Any] | None = getattr(self.config, "workerinput", None)
        if workerinput is None:
            return self.display
        return worker_progress(workerinput, folder_of(self.trees.scratch))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.is_worker:
            return
        prefix = f"{self.inputs.patch_path.name}::"
        if not report.nodeid.startswith(prefix) or self.review is None:
            return  # a result counts only from the generated item that owes it
        item = report.nodeid[len(prefix) :]
        self.reported.add(item)
        owed = {self.review.item_name(i): i for i in self.review.expected_items()}
        for name, value in report.user_properties:
            if name != PROPERTY or item not in owed:
                continue
            try:
                result = FindingResult.from_record(json.loads(str(value)))
            except ValueError:  # json's errors are ValueErrors too: the item "did not complete"
                continue
            if result.finding_id == owed[item]:
                self.results[result.finding_id] = result

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        self.stopped = True  # pytest.exit(returncode=0) too: what did not run was not looked at

    # -- the gate and the reports ----------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """The gate, first of every session-finish hook: its verdict's error item must reach
        the terminal's counts, --junitxml and the cache like any other report."""
        from pytest_critic22.pipeline.gate import (
            decide_disposition,
            disposition_record,
            settle_exit_status,
        )

        if self.is_worker or self.review is None:
            return
        interrupted = exitstatus == pytest.ExitCode.INTERRUPTED or bool(
            self.stopped or session.shouldfail or session.shouldstop
        )
        disposition, notes = decide_disposition(
            self.review, self.results, self.reported, exitstatus=exitstatus, interrupted=interrupted
        )
        self.notes.extend(notes)
        if self.built_trees:  # --collect-only reviews nothing: it leaves no ledger event
            self.ledger.append("disposition", disposition_record(disposition))
        settle_exit_status(
            session,
            self.review,
            disposition,
            allow_incomplete=self.opts.allow_incomplete,
            only=self.opts.only,
        )
        self.disposition = disposition
        run = RunInfo(
            run_id=self.ledger.run_id,
            ledger=str(self.ledger.path),
            notes=tuple(self.all_notes()),
            sandbox=sandbox_record(self.sandbox),
            started=self._started,
            seconds=time.time() - self._started if self._started else 0.0,
            repo=self.repo,
            kinds=self.kinds,
            checks=self.checks,
        )
        self.config.hook.pytest_critic22_review_finished(
            review=self.review,
            results=dict(self.results),
            disposition=self.disposition,
            run=run,
            config=self.config,
        )

    def all_notes(self) -> list[str]:
        return [*(self.review.notes if self.review else ()), *self.notes]

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        from pytest_critic22.report import terminal as report

        if self.is_worker or self.review is None:
            return
        terminalreporter.section("critic22")
        for line in report.summary_lines(
            self.review,
            self.results,
            self.disposition,
            ledger=str(self.ledger.path),
            notes=self.all_notes(),
            preservation_mode=self.opts.preservation,
            width=terminalreporter._tw.fullwidth,
        ):
            terminalreporter.line(line)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.is_worker:
            return
        ran = self.review is not None and self._claimed  # a review that built trees
        self.cleanup()
        if ran:
            self.ledger.append("run-end", {})

    @property
    def built_trees(self) -> bool:
        """This run reviewed (claimed trees in the repository); --collect-only does not."""
        return self._claimed

    def cleanup(self) -> None:
        """Remove this run's worktrees (warm ones back to the pool); twice and atexit: safe."""
        if not self._claimed or self.is_worker:
            return
        self._claimed = False
        atexit.unregister(self.cleanup)
        from pytest_critic22.execution.forkserver import discard_prestarted  # before their trees go

        discard_prestarted()
        self.trees.remove_all()
