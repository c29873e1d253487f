"""``critic22 mine [REPO] --out POPULATION ...``: the arguments, :func:`main` and the output."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_critic22.apps.cluster import add_scheduler_option
from pytest_critic22.apps.mine.select import Limits, MineSettings

__all__ = ["main", "test_args_of"]

_DEFAULT_LIMITS = Limits()
_DEFAULTS = MineSettings()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="critic22 mine",
        description="A labelled population for critic22 ab from the repository's own history: "
        "per small commit that changes code and adds or changes a test that fails before it and "
        "passes after (bug fixes and features alike), the commit (good) and one operator "
        "mutant of its added lines that the old tests still accept (defective), with the "
        "commit's tests as the hidden ground truth.",
    )
    parser.add_argument("repo", nargs="?", type=Path, default=Path("."), metavar="REPO")
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="POPULATION",
        help="the population JSON to write (its folders are made; patches go beside it in "
        "<name>.cases/)",
    )
    parser.add_argument("--since", metavar="DATE", help="only commits since DATE (git's dates)")
    parser.add_argument("--max-cases", type=int, metavar="N", help="stop after N kept fixes")
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, metavar="N", help="commits in parallel"
    )
    add_scheduler_option(parser)
    parser.add_argument(
        "--test-command",
        metavar="CMD",
        help="the project's test command, a pytest command line (default: pytest)",
    )
    parser.add_argument("--max-files", type=int, default=_DEFAULT_LIMITS.max_files, metavar="K")
    parser.add_argument("--max-hunks", type=int, default=_DEFAULT_LIMITS.max_hunks, metavar="N")
    parser.add_argument("--max-added", type=int, default=_DEFAULT_LIMITS.max_added, metavar="N")
    parser.add_argument(
        "--max-mutants",
        type=int,
        default=_DEFAULTS.max_mutants,
        metavar="N",
        help="mutants tried per fix, most realistic first",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=_DEFAULTS.timeout,
        metavar="SECONDS",
        help="one pytest run",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        metavar="DIR",
        help="finished commits (default .critic22/mine-cache under the current folder)",
    )
    parser.add_argument("--fresh", action="store_true", help="ignore the cache")
    parser.add_argument(
        "--oracle",
        type=Path,
        metavar="DIR",
        help="also write the ground-truth critic's answers (<case id>.json), to check the "
        "validator on the mined cases with critic22 ab --critic replay:DIR",
    )
    return parser


def test_args_of(command: str) -> tuple[str, ...]:
    """The arguments of a pytest command line (``pytest -x tests``, ``python -m pytest``)."""
    from pytest_critic22.apps.mine.select import check_test_args

    words = shlex.split(command)
    if words[:1] in (["pytest"], ["py.test"]):
        args = tuple(words[1:])
    elif len(words) >= 3 and words[1:3] == ["-m", "pytest"] and "python" in Path(words[0]).name:
        args = tuple(words[3:])
    else:
        raise ValueError(f"--test-command must be a pytest command line, not {command!r}")
    problem = check_test_args(args)
    if problem:
        raise ValueError(f"--test-command: {problem}")
    return args


def _error(message: str) -> int:
    print(f"critic22 mine: error: {message}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """0 done, 1 done but some commits could not be examined, 2 bad input, 130 interrupted
    (finished commits are cached: run the same command again to resume)."""
    from pytest_critic22.execution.git import head_commit, toplevel

    args = _parser().parse_args(argv)
    for name in ("max_files", "max_hunks", "max_added", "max_mutants", "jobs"):
        if getattr(args, name) < 1:
            return _error(f"--{name.replace('_', '-')} must be at least 1")
    if args.max_cases is not None and args.max_cases < 1:
        return _error("--max-cases must be at least 1")
    if not args.timeout > 0:
        return _error("--timeout must be seconds greater than 0")
    if args.since is not None and (not args.since.strip() or args.since.startswith("-")):
        return _error(f"--since: not a date: {args.since!r}")
    try:
        test_args = test_args_of(args.test_command) if args.test_command else ()
    except ValueError as exc:
        return _error(str(exc))
    if not args.repo.is_dir():
        return _error(f"{args.repo} is not a folder")
    repo = toplevel(args.repo.resolve())
    if repo is None:
        return _error(f"{args.repo} is not inside a git repository")
    problem = _make_out_folder(args.out)
    if problem:
        return _error(problem)
    try:
        head = head_commit(repo)
    except RuntimeError:
        return _error(f"{repo} has no commits")
    from pytest_critic22.execution.sandbox import SandboxError, resolve

    try:
        sandbox = resolve("auto")
    except SandboxError as exc:
        return _error(str(exc))
    settings = MineSettings(
        limits=Limits(args.max_files, args.max_hunks, args.max_added),
        test_args=test_args,
        timeout=args.timeout,
        max_mutants=args.max_mutants,
    )
    from pytest_critic22.execution.statedir import StateLinkError

    try:
        cache = args.cache if args.cache is not None else _default_cache()
    except StateLinkError as exc:
        return _error(str(exc))
    from pytest_critic22.apps.mine.driver import mine

    try:
        run = mine(
            repo,
            settings=settings,
            cache_dir=cache,
            sandbox=sandbox,
            since=args.since,
            max_cases=args.max_cases,
            jobs=args.jobs,
            fresh=args.fresh,
            progress=sys.stderr,
            scheduler=args.scheduler,
        )
    except KeyboardInterrupt:
        done = sum(1 for _ in cache.glob("*.json")) if cache.is_dir() else 0
        print(
            f"\ncritic22 mine: interrupted; {done} finished commit(s) are cached in {cache}: "
            "run the same command again to resume",
            file=sys.stderr,
        )
        return 130
    from pytest_critic22.apps.mine.output import summary_lines, write_outputs

    written = write_outputs(
        run,
        repo=repo,
        head=head,
        out=args.out,
        settings=settings,
        since=args.since,
        oracle=args.oracle,
    )
    for line in summary_lines(run, sandbox.mode, cache):
        print(f"critic22 mine: {line}", file=sys.stderr)
    print(f"critic22 mine: {written}", file=sys.stderr)
    if run.errors:
        print(
            f"critic22 mine: {len(run.errors)} commit(s) could not be examined (e.g. "
            f"{run.errors[0]['commit'][:12]}: {run.errors[0]['reason']}); they are not cached: "
            "run again to retry them",
            file=sys.stderr,
        )
        return 1
    return 0


def _make_out_folder(out: Path) -> str:
    """Make ``--out``'s folder (with its parents) before any commit is examined, so a bad
    path is one line now rather than after the mining; "" when done, else why not."""
    from pytest_critic22.execution.statedir import StateLinkError, make_folder

    if out.is_dir():
        return f"--out: {out} is a folder; name the population file, e.g. {out / 'population.json'}"
    try:
        make_folder(out.parent)  # no link followed inside a .critic22 folder
    except StateLinkError as exc:
        return f"--out: {exc}"
    except OSError as exc:
        return f"--out: cannot make folder {out.parent}: {exc.strerror or exc}"
    return ""


def _default_cache() -> Path:
    """``.critic22/mine-cache`` of the current folder; StateLinkError for a link there."""
    from pytest_critic22.execution.ledger import ensure_state_dir
    from pytest_critic22.execution.statedir import STATE_DIR, check

    cache = ensure_state_dir(Path.cwd() / STATE_DIR) / "mine-cache"
    check(cache)
    return cache
