"""The next candidate: the current patch with verified fixes composed in finding order.

Composition happens in a private git index (``GIT_INDEX_FILE`` in a temporary folder): no
worktree is made, the user's checkout and index are never touched, and nothing is left
behind whatever happens to the process. A fix that no longer applies after an earlier one
is skipped, with git's reason.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_critic22.execution.git import git
from pytest_critic22.model.diffmend import mend_diff

__all__ = ["ComposeError", "Composed", "candidate_sources", "compose"]


@dataclass(frozen=True, slots=True)
class Composed:
    diff: str  # the composed candidate against the base ("" when nothing changes)
    applied: tuple[str, ...]  # the keys of the fixes that went in, in order
    skipped: tuple[tuple[str, str], ...]  # (key, why) of the fixes that did not apply


class ComposeError(RuntimeError):
    """The candidate itself does not apply to the base: nothing can be composed."""


def compose(repo: Path, base: str, candidate: str, fixes: Sequence[tuple[str, str]]) -> Composed:
    """``candidate`` (a diff against ``base``) plus each ``(key, diff)`` fix that applies."""
    with tempfile.TemporaryDirectory(prefix="critic22-compose-") as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        git(["read-tree", base], repo, extra_env=env)
        done = _apply(repo, env, candidate)
        if done:
            raise ComposeError(f"the candidate does not apply to {base[:10]}: {done}")
        applied: list[str] = []
        skipped: list[tuple[str, str]] = []
        for key, given in fixes:
            # A fix as a model writes it (miscounted hunks, no a/ b/, two files without
            # "diff --git"): mended once, as when trees are built; the context is still
            # checked exactly. git's own --recount would read a next file's ---/+++ as part
            # of a hunk.
            diff = mend_diff(given)
            problem = _apply(repo, env, diff, check_only=True)
            if problem:
                where = "after the fixes before it" if applied else "to the candidate"
                skipped.append((key, f"does not apply {where}: {problem}"))
                continue
            problem = _apply(repo, env, diff)
            if problem:  # pragma: no cover - the check above just passed
                skipped.append((key, problem))
                continue
            applied.append(key)
        out = git(["diff", "--cached", "--binary", "--no-color", base], repo, extra_env=env)
        return Composed(out.stdout, tuple(applied), tuple(skipped))


def _apply(repo: Path, env: dict[str, str], diff: str, *, check_only: bool = False) -> str:
    """Apply ``diff`` to the private index; "" when it applied, else git's first line."""
    if not diff.strip():
        return ""
    args = ["apply", "--cached", "--whitespace=nowarn"]
    args += ["--check"] if check_only else []
    done = git([*args, "-"], repo, input=diff, check=False, extra_env=env)
    if done.returncode == 0:
        return ""
    return (done.stderr.strip().splitlines() or ["(no message)"])[0]


def candidate_sources(
    repo: Path, base: str, candidate: str, paths: Sequence[str]
) -> dict[str, str]:
    """The text of ``paths`` as the candidate has them (base + candidate, in a private
    index); a path the candidate deletes or that is not text is left out."""
    out: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="critic22-compose-") as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        git(["read-tree", base], repo, extra_env=env)
        if _apply(repo, env, candidate):
            return out
        for path in paths:
            done = git(["show", f":{path}"], repo, check=False, extra_env=env)
            if done.returncode == 0 and "\0" not in done.stdout:
                out[path] = done.stdout
    return out
