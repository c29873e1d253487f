"""Running git: every command with the user's configuration neutralised where it matters.

No pager, no colour, no mnemonic or missing prefixes, no hooks, no line-ending
conversion, no prompts: our commands mean the same on every machine. (An external diff
is switched off per command with --no-ext-diff: ``-c diff.external=`` makes git try to
run an empty command.)
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = [
    "GitError",
    "changed_paths",
    "commit_all",
    "commit_log",
    "git",
    "git_env",
    "head_commit",
    "init_repo",
    "show_file",
    "toplevel",
    "worktree_add",
    "worktree_remove",
]

_OVERRIDES = (
    "core.pager=cat",
    "color.ui=false",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
    "diff.renames=true",
    "core.hooksPath=/dev/null",
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.fsmonitor=false",
    # A tree's files are judged unchanged by their stat data; the user's config must not let
    # a file rewritten at the same size with its mtime put back pass as clean (ctime cannot be
    # put back), nor an untracked file hide behind a folder's restored mtime.
    "core.trustctime=true",
    "core.checkStat=default",
    "core.ignoreStat=false",
    "core.untrackedCache=false",
    "advice.detachedHead=false",
    "apply.whitespace=nowarn",
    "commit.gpgSign=false",
    "user.name=pytest-critic22",
    "user.email=critic22@localhost",
)


class GitError(RuntimeError):
    def __init__(self, args: Sequence[str], returncode: int, stderr: str) -> None:
        first = (stderr.strip().splitlines() or ["(no message)"])[0]
        super().__init__(f"git {' '.join(args)} failed ({returncode}): {first}")
        self.returncode = returncode
        self.stderr = stderr


def git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_PAGER="cat",
        GIT_TERMINAL_PROMPT="0",
        GIT_OPTIONAL_LOCKS="0",
        LC_ALL="C",
        LANG="C",
    )
    return env


def git(
    args: Sequence[str],
    cwd: Path,
    *,
    input: str | None = None,
    check: bool = True,
    timeout: float = 120,
    extra_env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run git with a clean environment; ``extra_env`` adds to it (a private index file)."""
    command = ["git"]
    for override in _OVERRIDES:
        command += ["-c", override]
    command += list(args)
    # Bytes, not text mode: text mode would turn CRLF in diffs into LF.
    raw = subprocess.run(
        command,
        cwd=cwd,
        input=None if input is None else input.encode("utf-8", "surrogateescape"),
        capture_output=True,
        env={**git_env(), **(extra_env or {})},
        timeout=timeout,
        check=False,
    )
    done = subprocess.CompletedProcess(
        raw.args,
        raw.returncode,
        raw.stdout.decode("utf-8", "surrogateescape"),
        raw.stderr.decode("utf-8", "surrogateescape"),
    )
    if check and done.returncode != 0:
        raise GitError(args, done.returncode, done.stderr)
    return done


def toplevel(path: Path) -> Path | None:
    """The repository's top folder, or None when path is not inside a git work tree."""
    done = git(["rev-parse", "--show-toplevel"], path, check=False)
    if done.returncode != 0:
        return None
    return Path(done.stdout.strip())


def head_commit(repo: Path, rev: str = "HEAD") -> str:
    return git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], repo).stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    git(["add", "-A"], repo)
    git(["commit", "-q", "--no-verify", "-m", message], repo)
    return head_commit(repo)


def init_repo(path: Path, message: str = "base") -> str:
    """Make a folder a git repository with everything in it committed; return the commit."""
    git(["init", "-q", "-b", "main"], path)
    return commit_all(path, message)


def commit_log(
    repo: Path, *, since: str | None = None, rev: str = "HEAD"
) -> list[tuple[str, tuple[str, ...], str]]:
    """(commit, parents, message) of every commit reachable from ``rev``, newest first.

    ``since`` is a date git understands; it is passed as ``--since=DATE``, one argument, so
    it can never be read as another option.
    """
    args = ["log", "--no-color", "--format=%H%x00%P%x00%B%x1e"]
    if since is not None:
        args.append(f"--since={since}")
    args += [rev, "--"]
    out = git(args, repo).stdout
    commits = []
    for record in out.split("\x1e"):
        record = record.strip("\n")
        if not record:
            continue
        sha, parents, message = [*record.split("\x00", 2), "", ""][:3]
        commits.append((sha, tuple(parents.split()), message.strip()))
    return commits


def changed_paths(repo: Path, old: str, new: str) -> list[tuple[str, str]]:
    """(status letter, path) of every file that differs between two commits (no renames:
    a rename is a deletion and an addition)."""
    out = git(
        ["diff", "--no-ext-diff", "--no-renames", "--name-status", "-z", old, new, "--"], repo
    ).stdout
    fields = out.split("\x00")
    pairs = []
    for index in range(0, len(fields) - 1, 2):
        if fields[index]:
            pairs.append((fields[index][:1], fields[index + 1]))
    return pairs


def show_file(repo: Path, rev: str, path: str) -> bytes | None:
    """The bytes of ``path`` at ``rev``, or None when it does not exist there."""
    command = ["git"]
    for override in _OVERRIDES:
        command += ["-c", override]
    command += ["cat-file", "blob", f"{rev}:{path}"]
    done = subprocess.run(
        command, cwd=repo, capture_output=True, env=git_env(), timeout=120, check=False
    )
    return done.stdout if done.returncode == 0 else None


def worktree_add(repo: Path, path: Path, rev: str) -> None:
    """A detached worktree of ``rev`` at ``path`` (the user's checkout is not touched)."""
    git(["worktree", "add", "--detach", "--force", "-q", str(path), rev], repo)


def worktree_remove(repo: Path, path: Path) -> None:
    """Remove a worktree made by :func:`worktree_add` and forget it; never raises."""
    git(["worktree", "remove", "--force", "--force", str(path)], repo, check=False)
    if path.exists():
        import shutil

        shutil.rmtree(path, ignore_errors=True)
    git(["worktree", "prune"], repo, check=False)
