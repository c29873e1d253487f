"""The ``critic22`` console command.

``critic22 ab POPULATION`` measures the critic against its own absence on a labelled
population of patches (see :mod:`pytest_critic22.ab`).

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
from collections.abc import Sequence
from pathlib import Path

DEMO_SAMPLE = "textstats"
DEMO_CASE = "median-drops-guard"


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["ab"]:
        # The A/B driver parses its own arguments (critic22 ab -h).
        from pytest_critic22.ab import main as ab_main

        return ab_main(words[1:])
    parser = argparse.ArgumentParser(prog="critic22", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser(
        "ab",
        add_help=False,
        help="critic-on vs critic-off on a labelled patch population (critic22 ab -h)",
    )
    demo = sub.add_parser("demo", help="review a bundled sample patch, no model needed")
    demo.add_argument("--sample", default=DEMO_SAMPLE)
    demo.add_argument("--case", default=DEMO_CASE)
    demo.add_argument("--keep", action="store_true", help="keep the temporary repository")
    demo.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args(words)
    return run_demo(args.sample, args.case, args.keep, args.pytest_args)


def demo_command(case: Path, repo: Path) -> list[str]:
    """The pytest command line the demo runs inside the sample repository."""
    from pytest_critic22.samples import case_options

    command = [sys.executable, "-m", "pytest", *case_options(case)]
    command.append(f"--critic22-report={repo / '.critic22' / 'report.json'}")
    return command


def run_demo(sample: str, case_name: str, keep: bool, extra: Sequence[str]) -> int:
    from pytest_critic22.samples import case_dir, materialize

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
    verdict = json.loads(report.read_text())["disposition"]["verdict"]
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
