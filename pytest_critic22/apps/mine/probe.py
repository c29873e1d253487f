"""One fix commit, examined (I/O): hidden tests, the good patch's check, the defective twin.

Every test run goes through the sandboxed runner
(:func:`pytest_critic22.execution.runner.run_pytest`) in a detached worktree of the fix's parent P,
inside the mining run's scratch folder; the worktree is removed when the commit is done, even on
Ctrl-C or SIGTERM. Stages, cheapest first, each a reason to skip the commit:

1. F's test modules on P + F's test files: the per-node outcomes before the fix (they must
   collect); 2. the same on F (they must collect): the hidden tests are the nodes that fail
   or error before and pass after; 3. P's own suite on P (it must run): the existing tests
   are the ones that pass; 4. P's own suite on P + the good patch: none of them may break;
5. mutants of the fix's added lines, most realistic first: the first one that still passes
   every existing test and fails at least one hidden test is the defective twin.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_critic22.apps.mine.mutants import Mutant, mutants_of
from pytest_critic22.apps.mine.outcomes import as_nodeids, collection_problem
from pytest_critic22.apps.mine.select import Candidate, FileDiff, MineSettings, is_test_path
from pytest_critic22.execution.git import git, show_file, worktree_add, worktree_remove
from pytest_critic22.execution.sandbox import Sandbox

__all__ = ["Job", "Skip", "probe_commit"]

_FAILING = ("failed", "error")


class Skip(Exception):
    """The commit gives no case; ``code`` is the summary's category."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Job:
    repo: Path
    candidate: Candidate
    diffs: tuple[FileDiff, ...]
    settings: MineSettings
    scratch: Path  # the mining run's scratch folder (worktrees and run folders)
    sandbox: Sandbox


def probe_commit(job: Job) -> dict[str, Any]:
    """The commit's record: ``status`` kept (with the case's material) or skipped (with
    ``code`` and ``reason``), or error (the run could not look; not cached)."""
    cand = job.candidate
    base = {"commit": cand.commit, "parent": cand.parent}
    tree = job.scratch / f"wt-{cand.commit[:16]}"
    try:
        with _lock(job.scratch):
            worktree_add(job.repo, tree, cand.parent)
        try:
            return {**base, "status": "kept", **_examine(job, tree)}
        finally:
            with _lock(job.scratch):
                worktree_remove(job.repo, tree)
    except Skip as skip:
        return {**base, "status": "skipped", "code": skip.code, "reason": skip.reason}
    except (OSError, RuntimeError) as exc:  # git failed, the sandbox failed: could not look
        return {**base, "status": "error", "code": "error", "reason": f"{exc}"}


@contextlib.contextmanager
def _lock(scratch: Path) -> Iterator[None]:
    """``git worktree add``/``remove`` race on the repository's files: one at a time."""
    import fcntl

    fd = os.open(scratch / "worktree.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _blob(repo: Path, rev: str, path: str) -> bytes | None:
    return show_file(repo, rev, path)


def _examine(job: Job, tree: Path) -> dict[str, Any]:
    cand = job.candidate
    fix_tests = {p: _blob(job.repo, cand.commit, p) for p in cand.test_files}
    good = {p: _blob(job.repo, cand.commit, p) for p in (*cand.code_files, *cand.other_files)}
    modules = [p for p in cand.test_files if _is_test_module(p) and fix_tests[p] is not None]
    if not modules:
        raise Skip("no test module", "changes test support files only, no test module")
    runner = _Runner(job, tree)

    before = runner.run({**fix_tests}, modules)
    problem = collection_problem(before.exit_code, before.reason, before.tests)
    if problem:
        raise Skip("not collectable at P", f"the fix's tests cannot be collected at P: {problem}")
    after = runner.run({**good, **fix_tests}, modules)
    problem = collection_problem(after.exit_code, after.reason, after.tests)
    if problem:
        raise Skip("not collectable at F", f"the fix's tests cannot be collected at F: {problem}")
    files = sorted(set(runner.files) | set(fix_tests))
    outcome_before = as_nodeids(before.tests, files)
    outcome_after = as_nodeids(after.tests, files)
    hidden = sorted(
        n
        for n, status in outcome_after.items()
        if status == "passed" and outcome_before.get(n, "failed") in _FAILING
    )
    if not hidden:
        raise Skip("no hidden test", "no test of the fix fails before it and passes after it")
    if any(n.startswith("junit:") for n in hidden):
        raise Skip("no node id", f"a hidden test has no node id: {hidden[0]}")

    suite = runner.run({}, suite=True)
    problem = collection_problem(suite.exit_code, suite.reason, suite.tests)
    if problem:
        raise Skip("P's tests do not run", f"P's own tests cannot run: {problem}")
    existing = sorted(n for n, s in as_nodeids(suite.tests, runner.files).items() if s == "passed")
    if not existing:
        raise Skip("P's tests do not run", "no test of P passes")
    broken = runner.broken({**good}, existing)
    if broken:
        raise Skip(
            "changes old behaviour",
            f"the fix breaks {len(broken)} of P's own tests (e.g. {broken[0]})",
        )

    mutants = _mutants(job, good)
    tried = 0
    for mutant in mutants[: job.settings.max_mutants]:
        tried += 1
        changed = {**good, mutant.path: mutant.source.encode("utf-8")}
        hidden_run = runner.run({**changed, **fix_tests}, hidden)
        if collection_problem(hidden_run.exit_code, hidden_run.reason, hidden_run.tests):
            continue
        outcomes = as_nodeids(hidden_run.tests, files)
        failing = sorted(n for n in hidden if outcomes.get(n) in _FAILING)
        if not failing or runner.broken(changed, existing):
            continue
        runner.stage(changed)
        git(["add", "-A"], tree)
        defective = git(["diff", "--cached", "--no-ext-diff", "--no-renames"], tree).stdout
        good_patch = git(
            [
                "diff",
                "--no-ext-diff",
                "--no-renames",
                cand.parent,
                cand.commit,
                "--",
                *cand.code_files,
                *cand.other_files,
            ],
            job.repo,
        ).stdout
        good_source = (good[mutant.path] or b"").decode("utf-8")
        return {
            "message": cand.message,
            "good_patch": good_patch,
            "defective_patch": defective,
            "mutant": {**mutant.to_dict(), "description": mutant.description},
            "mutant_source": mutant.source,
            "good_source": good_source,
            "mutants_tried": tried,
            "hidden": hidden,
            "failing": failing,
            "test_files": list(cand.test_files),
            "existing": existing,
            "sandbox": job.sandbox.mode,
        }
    raise Skip(
        "no surviving mutant",
        f"no mutant of the fix's added lines passes P's tests and fails a hidden test "
        f"({tried} of {len(mutants)} tried)",
    )


def _is_test_module(path: str) -> bool:
    name = PurePosixPath(path).name
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def _mutants(job: Job, good: Mapping[str, bytes | None]) -> list[Mutant]:
    found: list[Mutant] = []
    for diff in job.diffs:
        new = good.get(diff.path)
        if new is None:
            continue
        old = _blob(job.repo, job.candidate.parent, diff.path)
        try:
            found += mutants_of(
                diff, new.decode("utf-8"), None if old is None else old.decode("utf-8")
            )
        except UnicodeDecodeError:
            continue
    return sorted(found, key=Mutant.sort_key)


class _Runner:
    """The worktree at P, reset and overlaid with files before each run."""

    def __init__(self, job: Job, tree: Path) -> None:
        self.job = job
        self.tree = tree
        listed = git(["ls-files", "-z", "--", "*.py"], tree).stdout
        self.files = sorted(p for p in listed.split("\0") if p)

    def stage(self, overlay: Mapping[str, bytes | None]) -> None:
        git(["reset", "-q", "--hard", self.job.candidate.parent], self.tree)
        git(["clean", "-q", "-f", "-d", "-x"], self.tree)
        for path, data in overlay.items():
            pure = PurePosixPath(path)
            if pure.is_absolute() or ".." in pure.parts:
                raise Skip("bad path", f"a path outside the tree: {path!r}")
            target = self.tree / path
            if data is None:
                with contextlib.suppress(FileNotFoundError):
                    target.unlink()
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)

    def run(
        self,
        overlay: Mapping[str, bytes | None],
        nodeids: Sequence[str] = (),
        *,
        suite: bool = False,
    ) -> Any:
        """Run ``nodeids`` (data: checked), or the project's own suite (its test command's
        arguments, which are the user's, not data)."""
        from pytest_critic22.execution.runner import detect_pythonpath, run_pytest
        from pytest_critic22.model.nodeids import NodeIdError, as_pytest_args

        try:
            args = list(self.job.settings.test_args) if suite else as_pytest_args(nodeids)
        except NodeIdError as exc:
            raise Skip("bad node id", str(exc)) from None
        self.stage(overlay)
        return run_pytest(
            self.tree,
            args,
            timeout=self.job.settings.timeout,
            pythonpath=detect_pythonpath(self.tree),
            extra_env={"PYTHONDONTWRITEBYTECODE": "1"},
            sandbox=self.job.sandbox,
            scratch=self.job.scratch / "runs",
        )

    def broken(self, overlay: Mapping[str, bytes | None], existing: Sequence[str]) -> list[str]:
        """The existing tests (passing at P) that do not pass with ``overlay``; all of them
        when the suite cannot run at all."""
        suite = self.run(overlay, suite=True)
        if collection_problem(suite.exit_code, suite.reason, suite.tests):
            return list(existing)
        outcomes = as_nodeids(suite.tests, self.files)
        return [n for n in existing if outcomes.get(n) != "passed"]


def is_support(path: str) -> bool:
    """A changed test file that is not a test module (conftest, data)."""
    return is_test_path(path) and not _is_test_module(path)
