"""Small helpers for tests that make real commits and real diffs."""

from __future__ import annotations

from pathlib import Path

from pytest_critic22.execution.git import commit_all, git, init_repo


def write(repo: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(content.encode())


def diff_of(
    repo: Path, before: dict[str, str | bytes], after: dict[str, str | bytes | None]
) -> str:
    """Commit ``before``, apply ``after`` (None deletes), return ``git diff`` of the change."""
    write(repo, before)
    commit_all(repo, "base")
    for name, content in after.items():
        if content is None:
            (repo / name).unlink()
        else:
            write(repo, {name: content})
    git(["add", "-A"], repo)
    return git(["diff", "--cached", "--no-ext-diff", "-M"], repo).stdout


def pytester_repo(path: Path, files: dict[str, str | bytes], *ignored: str) -> Path:
    """``files`` committed in a git repository at ``path`` (a pytester folder), with what
    pytester writes there beside them (and ``ignored``) excluded from git's view."""
    write(path, files)
    init_repo(path)
    with open(path / ".git" / "info" / "exclude", "a") as fh:
        fh.write(
            "".join(f"{name}\n" for name in ("runpytest-current", "stdout", "stderr", *ignored))
        )
    return path
