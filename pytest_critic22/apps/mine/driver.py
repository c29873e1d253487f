"""The driver of ``critic22 mine`` (I/O): scan the history, examine candidates, write.

Commits are taken newest first. The first pass (name-status and a zero-context diff per
commit) decides the candidates; each candidate is then examined by
:func:`~pytest_critic22.apps.mine.probe.probe_commit`, in this process (``jobs`` 1), on a local
Dask cluster or a process pool, or on a Dask cluster by address
(:mod:`pytest_critic22.apps.cluster`). A finished commit's record is cached under a key of the
commit and the settings, so an interrupted run resumes where it stopped; a commit that could not be
examined (an error, not a skip) is not cached. The population is the kept commits of the
longest fully examined prefix of the history (cut at ``max_cases``): the same whatever the
number of jobs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from pytest_critic22.apps.cluster import Engine, Failed, Shipping, open_engine
from pytest_critic22.apps.mine.probe import Job, probe_commit
from pytest_critic22.apps.mine.select import (
    Candidate,
    FileDiff,
    MineSettings,
    NotCandidate,
    check_size,
    classify,
    parse_zero_context,
)
from pytest_critic22.execution import child_files as childfiles
from pytest_critic22.execution.git import changed_paths, commit_log, git, worktree_remove
from pytest_critic22.execution.sandbox import Sandbox
from pytest_critic22.execution.statedir import write_json

__all__ = ["SCRATCH_PREFIX", "MineRun", "mine", "prune_dead_runs"]

#: A mining run's scratch folder: critic22-mine-<pid>-<random>, pruned once the PID is dead.
SCRATCH_PREFIX = "critic22-mine-"


@dataclass(slots=True)
class MineRun:
    records: list[dict[str, Any]]  # the examined prefix, history order (skips and keeps)
    kept: list[dict[str, Any]]  # the population's fixes, history order
    not_candidates: list[tuple[str, NotCandidate]]  # (commit, why) within the prefix
    total: int  # commits in the range
    scanned: int  # commits of the range looked at (the prefix)
    cached: int  # records read from the cache
    examined: int  # records made now
    errors: list[dict[str, Any]] = field(default_factory=list)

    def reasons(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for _, why in self.not_candidates:
            counts[why.code] = counts.get(why.code, 0) + 1
        for record in self.records:
            if record["status"] != "kept":
                counts[record["code"]] = counts.get(record["code"], 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


class Progress:
    """``commits 40/212 scanned, 9 cases kept, 03:12`` on one line of stderr."""

    def __init__(self, stream: IO[str] | None, total: int) -> None:
        self.stream = stream
        self.total = total
        self.scanned = 0
        self.kept = 0
        self.start = time.monotonic()
        self.tty = bool(stream is not None and stream.isatty())
        self.engine: Engine | None = None

    def advance(self, *, scanned: int = 1, kept: bool = False) -> None:
        self.scanned += scanned
        self.kept += int(kept)
        self.show()

    def show(self) -> None:
        if self.stream is None:
            return
        seconds = int(time.monotonic() - self.start)
        line = (
            f"critic22 mine: commits {self.scanned}/{self.total} scanned, {self.kept} cases "
            f"kept, {seconds // 60:02d}:{seconds % 60:02d}"
        )
        if self.engine is not None and (status := self.engine.status()):
            line += f"; {status}"
        self.stream.write(("\r" + line) if self.tty else line + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.stream is not None and self.tty:
            self.stream.write("\n")
            self.stream.flush()


def prune_dead_runs(repo: Path) -> None:
    """Remove the scratch folders (and worktrees) of mining runs whose process is gone."""

    def remove_worktrees(folder: Path) -> None:
        for tree in folder.glob("wt-*"):
            worktree_remove(repo, tree)

    if childfiles.prune_orphans(SCRATCH_PREFIX, remove_worktrees):
        git(["worktree", "prune"], repo, check=False)


def first_pass(
    repo: Path, commits: Sequence[tuple[str, tuple[str, ...], str]], settings: MineSettings
) -> list[tuple[str, Candidate | NotCandidate, tuple[FileDiff, ...]]]:
    """Every commit as a candidate (with the zero-context diffs of its code files) or not."""
    out: list[tuple[str, Candidate | NotCandidate, tuple[FileDiff, ...]]] = []
    for sha, parents, message in commits:
        changes = changed_paths(repo, parents[0], sha) if len(parents) == 1 else []
        verdict = classify(sha, parents, message, changes, settings.limits)
        diffs: tuple[FileDiff, ...] = ()
        if isinstance(verdict, Candidate):
            diffs = tuple(
                parse_zero_context(
                    path,
                    git(
                        [
                            "diff",
                            "--no-ext-diff",
                            "--no-renames",
                            "-U0",
                            verdict.parent,
                            sha,
                            "--",
                            path,
                        ],
                        repo,
                    ).stdout,
                )
                for path in verdict.code_files
            )
            too_big = check_size(verdict, diffs, settings.limits)
            if too_big is not None:
                verdict = too_big
        out.append((sha, verdict, diffs))
    return out


def cache_file(cache_dir: Path, candidate: Candidate, settings: MineSettings) -> Path:
    payload = {"commit": candidate.commit, "parent": candidate.parent, **settings.to_dict()}
    key = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
    return cache_dir / f"{candidate.commit}-{key[:16]}.json"


def _read_cache(path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return (
        record if isinstance(record, dict) and record.get("status") in ("kept", "skipped") else None
    )


def mine(
    repo: Path,
    *,
    settings: MineSettings,
    cache_dir: Path,
    sandbox: Sandbox,
    since: str | None = None,
    max_cases: int | None = None,
    jobs: int = 1,
    fresh: bool = False,
    progress: IO[str] | None = None,
    probe: Callable[[Job], dict[str, Any]] = probe_commit,
    scheduler: str | None = None,
) -> MineRun:
    """Scan ``repo``'s history and examine its candidates on the engine of ``jobs`` and
    ``scheduler`` (:func:`~pytest_critic22.apps.cluster.open_engine`; a remote worker gets the
    repository as a git bundle); KeyboardInterrupt when stopped (the commits finished by then
    stay cached)."""
    commits = commit_log(repo, since=since)
    passed = first_pass(repo, commits, settings)
    meter = Progress(progress, len(passed))
    prune_dead_runs(repo)
    scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
    results: dict[int, dict[str, Any]] = {}
    cached = 0
    try:
        meter.advance(scanned=sum(1 for _, v, _ in passed if isinstance(v, NotCandidate)))
        jobs_by_index = {
            i: Job(repo, verdict, diffs, settings, scratch, sandbox)
            for i, (_, verdict, diffs) in enumerate(passed)
            if isinstance(verdict, Candidate)
        }

        def satisfied() -> bool:
            if max_cases is None:
                return False
            kept = 0
            for i, (_, verdict, _) in enumerate(passed):
                if isinstance(verdict, Candidate):
                    if i not in results:
                        return False
                    kept += results[i]["status"] == "kept"
                if kept >= max_cases:
                    return True
            return False

        def finished(index: int, record: dict[str, Any], *, from_cache: bool) -> None:
            results[index] = record
            if not from_cache and record["status"] != "error":
                write_json(cache_file(cache_dir, jobs_by_index[index].candidate, settings), record)
            meter.advance(kept=record["status"] == "kept")

        order = sorted(jobs_by_index)
        todo: list[int] = []
        for index in order:
            record = (
                None
                if fresh
                else _read_cache(cache_file(cache_dir, jobs_by_index[index].candidate, settings))
            )
            if record is not None:
                cached += 1
                finished(index, record, from_cache=True)
            else:
                todo.append(index)
        with open_engine(jobs, scheduler) as engine:
            meter.engine = engine
            items = [jobs_by_index[index] for index in todo]
            for position, outcome in engine.map_unordered(
                probe, items, shipping=SHIPPING, stop=satisfied
            ):
                index = todo[position]
                if isinstance(outcome, Failed):
                    cand = jobs_by_index[index].candidate
                    outcome = {
                        "commit": cand.commit,
                        "parent": cand.parent,
                        "status": "error",
                        "code": "error",
                        "reason": f"infrastructure: {outcome.reason}",
                    }
                finished(index, outcome, from_cache=False)
    finally:
        meter.finish()
        for tree in scratch.glob("wt-*"):
            worktree_remove(repo, tree)
        shutil.rmtree(scratch, ignore_errors=True)
    return _collect(passed, results, max_cases, cached)


def _collect(
    passed: Sequence[tuple[str, Candidate | NotCandidate, tuple[FileDiff, ...]]],
    results: Mapping[int, dict[str, Any]],
    max_cases: int | None,
    cached: int,
) -> MineRun:
    records: list[dict[str, Any]] = []
    not_candidates: list[tuple[str, NotCandidate]] = []
    kept: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    scanned = 0
    for index, (sha, verdict, _) in enumerate(passed):
        if max_cases is not None and len(kept) >= max_cases:
            break
        if isinstance(verdict, NotCandidate):
            not_candidates.append((sha, verdict))
        elif index in results:
            record = results[index]
            if record["status"] == "error":
                errors.append(record)
            else:
                records.append(record)
                if record["status"] == "kept":
                    kept.append(record)
        else:
            break  # not examined (stopped early): the prefix ends here
        scanned += 1
    examined = len(results) - cached
    return MineRun(records, kept, not_candidates, len(passed), scanned, cached, examined, errors)


def _repos(job: Job) -> list[Path]:
    return [job.repo]


def _localize(job: Job, copies: Mapping[Path, Path]) -> Job:
    """The job on a worker's copy of the repository, its worktrees beside that copy (one
    scratch per copy: its lock keeps the copy's ``git worktree`` calls one at a time)."""
    repo = copies[job.repo]
    scratch = repo.parent / f"{repo.name}-scratch"
    scratch.mkdir(exist_ok=True)
    return replace(job, repo=repo, scratch=scratch)


SHIPPING: Shipping[Job] = Shipping(_repos, _localize)
