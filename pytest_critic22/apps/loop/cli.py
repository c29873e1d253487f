"""``critic22 loop PATCH``: the review loop's command line.

Exit status: 0 acquitted (execution found nothing blocking), 1 not acquitted (a verified
defect without a verified fix, max rounds reached, or stopped at the checkpoint), 3 blocked
(a review could not do what was asked: never read as "nothing found"), 2 usage error, 130
interrupted (Ctrl-C: the state is saved at the last finished round; run again to resume).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main"]

DESCRIPTION = """\
Review PATCH with the plugin's own pipeline, fix what execution verifies, and review again,
until a round acquits (score >= 6 and verdict ready or almost, both from execution) or
--max-rounds is reached. State, logs and final.diff are written to .critic22/review-stage/;
an interrupted loop resumes where it stopped when run again within 24 hours.

Any other option written --critic22-NAME=VALUE (spec, obligations, reruns, ...), and -o/-p
with their value, is passed to every review. Exit status: 0 acquitted, 1 not acquitted,
3 blocked (a review could not look), 2 usage error, 130 interrupted (run again to resume).
"""

_REFUSED = ("--critic22=", "--critic22-report", "--critic22-only")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="critic22 loop",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("patch", metavar="PATCH", help="the candidate patch (a unified diff)")
    parser.add_argument("--max-rounds", type=int, default=4, metavar="N", help="default 4")
    parser.add_argument(
        "--checkpoint",
        action="store_true",
        help="after each round, show the score and the fixes and read one reply from the "
        "terminal: go | skip N[,M] | stop | apply FILE.diff",
    )
    parser.add_argument(
        "--difficulty",
        choices=("medium", "hard", "nightmare"),
        default="medium",
        help="medium: the critic with its memory; hard: plus a debate turn on findings "
        "execution did not verify; nightmare: plus an independent second critic that reads "
        "the touched modules in full",
    )
    parser.add_argument(
        "--critic22-findings",
        dest="findings",
        metavar="DIR",
        help="a recorded critic: a folder of round-1.json, round-2.json, ... (a missing "
        "round file is a silent critic)",
    )
    parser.add_argument(
        "--critic22-model",
        dest="model",
        metavar="MODEL",
        help="the critic's model (litellm; default $CRITIC22_MODEL); with --critic22-findings, "
        "the model of the debate turn (hard) and of the second critic (nightmare)",
    )
    parser.add_argument("--critic22-api-base", dest="api_base", metavar="URL")
    parser.add_argument(
        "--critic22-second-model",
        dest="second_model",
        metavar="MODEL",
        help="nightmare's second critic (default: the same model)",
    )
    parser.add_argument(
        "--fixer-model",
        metavar="MODEL",
        help="a model (litellm) that proposes a diff for a verified finding without a repair; "
        "the diff is executed like a repair before it is used",
    )
    parser.add_argument(
        "--author-model",
        metavar="MODEL",
        help="the model that wrote the patch: decides review_independence",
    )
    parser.add_argument("--critic22-base", dest="base", default="HEAD", metavar="REV")
    parser.add_argument("--critic22-engage", dest="engage", choices=("auto", "always", "never"))
    parser.add_argument(
        "--review-timeout", type=float, default=1800.0, metavar="SECONDS", help="one review"
    )
    return parser


def _forwarded(parser: argparse.ArgumentParser, rest: Sequence[str]) -> tuple[str, ...]:
    """The options passed on to every review: ``--critic22-NAME[=VALUE]`` and ``-o``/``-p``
    with their value. A bare word is refused (``--critic22-spec spec.md`` would otherwise
    leave ``spec.md`` to be read as the patch, or a test path); an ``@FILE`` value is made
    absolute, so that it names the file it named where the loop was started."""
    out: list[str] = []
    words = list(rest)
    while words:
        word = words.pop(0)
        if word in ("-o", "-p"):
            if not words:
                parser.error(f"{word} needs a value")
            out += [word, words.pop(0)]
            continue
        if word.startswith(_REFUSED) or word == "--critic22":
            parser.error(f"{word.split('=')[0]} is the loop's own business")
        if not word.startswith("--critic22-"):
            parser.error(
                f"unexpected {word!r}: other review options are passed on as --critic22-NAME=VALUE"
            )
        name, eq, value = word.partition("=")
        if eq and value.startswith("@"):
            value = "@" + str((Path.cwd() / value[1:]).resolve())
        out.append(name + eq + value)
    return tuple(out)


def main(argv: Sequence[str] | None = None) -> int:
    from pytest_critic22.apps.loop.driver import run_loop
    from pytest_critic22.apps.loop.interrupt import LoopInterrupted
    from pytest_critic22.apps.loop.options import LoopError, LoopOptions
    from pytest_critic22.execution.statedir import StateLinkError

    parser = build_parser()
    args, rest = parser.parse_known_args(list(sys.argv[1:] if argv is None else argv))
    forwarded = _forwarded(parser, rest)
    cwd = Path.cwd()
    model = args.model or os.environ.get("CRITIC22_MODEL") or None
    opts = LoopOptions(
        repo=cwd,
        patch=(cwd / args.patch).resolve(),
        max_rounds=args.max_rounds,
        checkpoint=args.checkpoint,
        difficulty=args.difficulty,
        findings_dir=None if args.findings is None else (cwd / args.findings).resolve(),
        # A recorded critic replaces the first critic only: the debate turn (hard) and the
        # second critic (nightmare) still ask the model.
        model=model,
        api_base=args.api_base,
        second_model=args.second_model,
        fixer_model=args.fixer_model,
        author_model=args.author_model,
        base=args.base,
        engage=args.engage,
        plugin_args=forwarded,
        timeout=args.review_timeout,
    )
    try:
        result = run_loop(opts)
    except LoopError as exc:
        print(exc, file=sys.stderr)
        return 2
    except StateLinkError as exc:  # one planted in .critic22/ while the loop ran
        print(f"critic22 loop: {exc}", file=sys.stderr)
        return 2
    except LoopInterrupted as exc:
        print(f"\n{exc}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:  # before the loop had a run to save
        print(
            "\ncritic22 loop: interrupted before its first round; nothing to save", file=sys.stderr
        )
        return 130
    if result.acquitted:
        return 0
    return 3 if result.status == "blocked" else 1
