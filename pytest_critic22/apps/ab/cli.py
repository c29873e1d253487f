"""``critic22 ab POPULATION ...``: the arguments, and :func:`main`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from pytest_critic22.apps.ab.driver import run_population
from pytest_critic22.apps.ab.population import PopulationError, choose_critic, load_population
from pytest_critic22.apps.ab.render import render
from pytest_critic22.apps.ab.runs import RunOptions
from pytest_critic22.apps.ab.stats import MIN_DEFECTIVE, MIN_GOOD
from pytest_critic22.apps.cluster import add_scheduler_option


def default_cache() -> Path:
    """``.critic22/ab-cache`` of the current folder; StateLinkError for a link there."""
    from pytest_critic22.execution.ledger import ensure_state_dir
    from pytest_critic22.execution.statedir import STATE_DIR, check

    cache = ensure_state_dir(Path.cwd() / STATE_DIR) / "ab-cache"
    check(cache)
    return cache


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="critic22 ab",
        description="Critic-on vs critic-off on a labelled population of patches (spec §9): "
        "recall and over-veto together, ablations, and the keep-or-remove rule (§9.6), which "
        f"needs at least {MIN_DEFECTIVE} defective and {MIN_GOOD} good case(s) measured: with "
        "fewer, the answer is 'not enough data'.",
    )
    parser.add_argument(
        "population",
        type=Path,
        metavar="POPULATION",
        help="population JSON, or 'sample' for the bundled one (27 cases over four sample "
        "repositories, with recorded critics: --critic recorded:useful|noisy|silent)",
    )
    parser.add_argument(
        "--critic",
        metavar="recorded:NAME|replay:DIR|model",
        help="the critic of the critic arms: recorded:NAME, a recorded set of the population; "
        "replay:DIR, a folder of answers <case id>.json or .txt (critic22 mine --oracle DIR, "
        "or --record DIR of a model run; no model needed); or model, the live model of "
        "--critic22-model (the default when that is given)",
    )
    parser.add_argument("--critic22-model", metavar="MODEL", help="litellm model string")
    parser.add_argument("--critic22-api-base", metavar="URL", help="the provider's base URL")
    parser.add_argument(
        "--critic22-engage",
        choices=("auto", "always"),
        default="auto",
        help="--critic22-engage of the critic arms (default auto, as the plugin)",
    )
    parser.add_argument(
        "--critic22-reruns", type=int, metavar="N", help="passed to every plugin run"
    )
    parser.add_argument(
        "--critic22-procedure-timeout",
        "--critic22-timeout",  # the plugin's deprecated spelling, accepted here too
        dest="critic22_timeout",
        type=float,
        metavar="SECONDS",
        help="passed to every plugin run",
    )
    for option, kind, what in (
        ("--critic22-temperature", float, "T"),
        ("--critic22-max-tokens", int, "N"),
        ("--critic22-critic-timeout", float, "SECONDS"),
        ("--critic22-retries", int, "N"),
    ):
        parser.add_argument(option, type=kind, metavar=what, help="passed to the model's runs")
    parser.add_argument("--critic22-fresh", action="store_true", help="passed to the model's runs")
    parser.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="runs in parallel (default: the number of CPUs)",
    )
    add_scheduler_option(parser)
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the report as JSON")
    parser.add_argument(
        "--cache",
        type=Path,
        metavar="DIR",
        help="where finished runs are kept (default .critic22/ab-cache under the current folder)",
    )
    parser.add_argument("--fresh", action="store_true", help="ignore the cache; rerun everything")
    parser.add_argument(
        "--record",
        type=Path,
        metavar="DIR",
        help="with --critic model: write each case's raw answer to DIR/<case id>.txt, to "
        "re-score later with --critic replay:DIR",
    )
    return parser


def _record(records: Mapping[tuple[str, str], Mapping[str, Any]], folder: Path) -> int:
    """Each critic run's raw answer as ``folder/<case id>.txt`` (runs cached before answers
    were kept have none)."""
    count = 0
    for (case_id, kind), record in sorted(records.items()):
        answer = record.get("raw_answer")
        if kind == "critic" and isinstance(answer, str):
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{case_id}.txt").write_text(answer, encoding="utf-8")
            count += 1
    return count


def main(argv: Sequence[str] | None = None) -> int:
    """``critic22 ab POPULATION ...``: 0 done, 1 done but some runs failed, 2 bad input,
    130 interrupted (what finished is cached: run the same command again to resume)."""
    args = _parser().parse_args(argv)
    if args.jobs < 1:
        print(
            "critic22 ab: error: --jobs must be at least 1 (--jobs 1: one run at a time)",
            file=sys.stderr,
        )
        return 2
    try:
        population = load_population(_population_path(args.population))
        critic = choose_critic(population, args.critic, args.critic22_model, args.critic22_api_base)
    except PopulationError as exc:
        print(f"critic22 ab: error: {exc}", file=sys.stderr)
        return 2
    if args.record is not None and critic.kind != "model":
        print("critic22 ab: error: --record needs --critic model", file=sys.stderr)
        return 2
    if not population.held_out():
        print("critic22 ab: error: the rule leaves no held-out case", file=sys.stderr)
        return 2
    from pytest_critic22.execution.statedir import StateLinkError

    try:
        cache = args.cache if args.cache is not None else default_cache()
    except StateLinkError as exc:
        print(f"critic22 ab: error: {exc}", file=sys.stderr)
        return 2
    # Model tuning is the plugin's ini values (--override-ini), the critic's deadline a flag.
    critic_args = [
        f"--override-ini=critic22_{name}={value:g}"
        if isinstance(value, float)
        else f"--override-ini=critic22_{name}={value}"
        for name in ("temperature", "max_tokens", "retries")
        if (value := getattr(args, f"critic22_{name}")) is not None
    ]
    if args.critic22_critic_timeout is not None:
        critic_args.append(f"--critic22-critic-timeout={args.critic22_critic_timeout:g}")
    if args.critic22_fresh:
        critic_args.append("--critic22-fresh")
    options = RunOptions(
        reruns=args.critic22_reruns,
        timeout=args.critic22_timeout,
        engage=args.critic22_engage,
        critic_args=tuple(critic_args),
    )
    try:
        run = run_population(
            population,
            critic,
            cache_dir=cache,
            jobs=args.jobs,
            fresh=args.fresh,
            options=options,
            progress=sys.stderr,
            scheduler=args.scheduler,
        )
    except BrokenProcessPool as exc:
        print(
            f"\ncritic22 ab: a worker process died ({exc}); finished runs are cached in "
            f"{cache}: run the same command again to resume",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        done = sum(1 for _ in cache.rglob("*.json")) if cache.is_dir() else 0
        print(
            f"\ncritic22 ab: interrupted; {done} finished run(s) are cached in {cache}: run the "
            "same command again to resume",
            file=sys.stderr,
        )
        return 130
    print(
        f"critic22 ab: {run.reused} run(s) reused from the cache, {run.ran} run now ({cache})",
        file=sys.stderr,
    )
    sys.stdout.write(render(run.report))
    if args.record is not None:
        recorded = _record(run.records, args.record)
        print(f"critic22 ab: {recorded} raw answer(s) recorded in {args.record}", file=sys.stderr)
    if args.json is not None:
        document = run.report.to_dict()
        document["runs"] = {
            f"{case_id}/{kind}": {
                "cached": bool(record.get("cached")),
                "key": record.get("key"),
                "seconds": record.get("seconds"),
                "error": record.get("error") or "",
                "command": record.get("command"),
            }
            for (case_id, kind), record in sorted(run.records.items())
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    return 1 if run.errors else 0


def _population_path(given: Path) -> Path:
    """``sample`` names the bundled population (a file of that name wins)."""
    from pytest_critic22.apps.samples import POPULATION

    return POPULATION if str(given) == "sample" and not given.exists() else given
