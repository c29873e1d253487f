"""The ``critic22`` console command.

``critic22 ab POPULATION`` measures the critic against its own absence on a labelled
population of patches (see :mod:`pytest_critic22.apps.ab`).

``critic22 demo`` copies a bundled sample repository to a temporary folder, makes it a
git repository, and runs ``pytest --critic22`` on one of its candidate patches with the
case's recorded critic output: a verified defect shows up as a failing test. The demo
exits 0 when the review ran and reached the case's expected verdict.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from pathlib import Path

DEMO_SAMPLE = "textstats"
DEMO_CASE = "median-drops-guard"

DESCRIPTION = """\
The pytest-critic22 console command. Reviews themselves run inside pytest:
pytest --critic22=PATCH (see pytest --help).

commands:
  demo   review a bundled sample patch with its recorded critic output (no model)
  ab     measure the critic against its own absence on a labelled patch population
  loop   review -> fix -> re-review a patch until execution acquits it
  mine   a labelled patch population from the repository's own tested commits

Run critic22 COMMAND -h for a command's options.
"""

DEMO_DESCRIPTION = """\
Copy a bundled sample repository to a temporary folder, make it a git repository,
and run pytest --critic22 there on one of its candidate patches with the case's
recorded critic output: a verified defect shows up as a failing test. Exits 0 when
the review ran and reached the case's expected verdict.
"""


def demo_cases() -> dict[str, list[str]]:
    """The bundled samples that have cases, each with its case names (sorted)."""
    from pytest_critic22.apps.samples import SAMPLES_DIR, sample_names

    if not SAMPLES_DIR.is_dir():
        return {}
    cases = {}
    for sample in sample_names():
        folder = SAMPLES_DIR / sample / "cases"
        names = (
            sorted(p.name for p in folder.iterdir() if (p / "patch.diff").is_file())
            if folder.is_dir()
            else []
        )
        if names:
            cases[sample] = names
    return cases


def default_case(sample: str, cases: Sequence[str]) -> str | None:
    """The case the demo reviews when none is named: the classic one, else the first
    that is not an A/B population case, else the first."""
    if sample == DEMO_SAMPLE and DEMO_CASE in cases:
        return DEMO_CASE
    candidates = [c for c in cases if not c.startswith("ab-")] or list(cases)
    return candidates[0] if candidates else None


def cases_epilog(cases: dict[str, list[str]], width: int = 79) -> str:
    """One entry per sample listing its cases, the default one marked with *."""
    if not cases:
        return "no sample repositories found (they ship with a source checkout: pip install -e .)"
    lines = ["cases by sample (* = the default case of the sample):"]
    pad = max(len(s) for s in cases) + 4
    for sample, names in cases.items():
        default = default_case(sample, names)
        shown = ", ".join(n + "*" if n == default else n for n in names)
        lines.append(
            textwrap.fill(
                shown,
                width=width,
                initial_indent=f"  {sample:<{pad - 2}}",
                subsequent_indent=" " * pad,
                break_on_hyphens=False,
            )
        )
    return "\n".join(lines)


def build_parser(cases: dict[str, list[str]] | None = None) -> argparse.ArgumentParser:
    """The parser of everything but ``ab``; ``cases`` as :func:`demo_cases` returns them."""
    cases = demo_cases() if cases is None else cases
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="critic22",
        usage="critic22 [-h] COMMAND ...",
        description=DESCRIPTION,
        formatter_class=raw,
    )
    # The description lists the commands; argparse's own listing would repeat it.
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", help=argparse.SUPPRESS
    )
    demo = sub.add_parser(
        "demo",
        prog="critic22 demo",  # not derived from the custom usage above
        description=DEMO_DESCRIPTION,
        epilog=cases_epilog(cases),
        formatter_class=raw,
    )
    # ab parses its own arguments (critic22 ab -h); it is here to be a valid choice.
    sub.add_parser("ab", prog="critic22 ab", add_help=False)
    sub.add_parser("loop", prog="critic22 loop", add_help=False)
    sub.add_parser("mine", prog="critic22 mine", add_help=False)
    demo.add_argument(
        "--sample",
        default=DEMO_SAMPLE,
        metavar="SAMPLE",
        choices=list(cases) or None,
        help="the sample repository: %(choices)s (default: %(default)s)",
    )
    demo.add_argument(
        "--case",
        default=None,
        metavar="CASE",
        help="the case of the sample to review, listed below (default: the sample's "
        f"default case, {DEMO_CASE} for {DEMO_SAMPLE})",
    )
    demo.add_argument("--keep", action="store_true", help="keep the temporary repository")
    demo.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    demo.set_defaults(parser=demo)  # main() reports a case the sample lacks as demo's error
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["loop"]:
        from pytest_critic22.apps.loop.cli import main as loop_main

        return loop_main(words[1:])
    if words[:1] == ["mine"]:
        from pytest_critic22.apps.mine import main as mine_main

        return mine_main(words[1:])
    if words[:1] == ["ab"]:
        # The A/B driver parses its own arguments (critic22 ab -h).
        from pytest_critic22.apps.ab import main as ab_main

        return ab_main(words[1:])
    all_cases = demo_cases()
    args = build_parser(all_cases).parse_args(words)
    cases = all_cases.get(args.sample, [])
    case = args.case if args.case is not None else default_case(args.sample, cases)
    if cases and case not in cases:
        args.parser.error(
            f"no case {case!r} in sample {args.sample!r}; its cases: " + ", ".join(cases)
        )
    return run_demo(args.sample, case or DEMO_CASE, args.keep, args.pytest_args)


def demo_command(case: Path, repo: Path) -> list[str]:
    """The pytest command line the demo runs inside the sample repository."""
    from pytest_critic22.apps.samples import case_options

    command = [sys.executable, "-m", "pytest", *case_options(case)]
    command.append(f"--critic22-report={repo / '.critic22' / 'report.json'}")
    return command


def run_demo(sample: str, case_name: str, keep: bool, extra: Sequence[str]) -> int:
    from pytest_critic22.apps.samples import case_dir, materialize

    try:
        case = case_dir(sample, case_name)
    except FileNotFoundError as exc:
        print(f"critic22 demo: {exc}", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="critic22-demo-"))
    repo = materialize(sample, tmp / sample)
    command = demo_command(case, repo) + list(extra)
    print(f"critic22 demo: sample {sample!r}, case {case_name!r}, repository {repo}", flush=True)
    print("$ " + " ".join(command), flush=True)
    try:
        code = subprocess.run(command, cwd=repo, check=False).returncode
        return _demo_status(case, repo / ".critic22" / "report.json", code)
    finally:
        if keep:
            print(f"critic22 demo: kept {repo}")
        else:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)


def _demo_status(case: Path, report: Path, pytest_code: int) -> int:
    """0 when the review ran and reached the case's expected verdict, else non-zero."""
    import json

    if not report.is_file():
        print(f"critic22 demo: the review did not run (pytest exit status {pytest_code})")
        return pytest_code or 1
    from pytest_critic22.report.document import ReviewReport

    verdict = ReviewReport.read(report).verdict or "none"
    expected_file = case / "expected.json"
    expected = json.loads(expected_file.read_text())["verdict"] if expected_file.is_file() else None
    if expected is not None and verdict != expected:
        print(f"critic22 demo: verdict {verdict.upper()}, but this case expects {expected.upper()}")
        return 1
    print(
        f"critic22 demo: verdict {verdict.upper()} (pytest exit status {pytest_code}), "
        "as expected for this case"
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
