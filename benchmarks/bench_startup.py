"""What the plugin costs a pytest run: off, installed-but-unused, and reviewing a patch.

    python benchmarks/bench_startup.py [--runs N]

Runs the sample repository's tests in subprocesses and prints medians and ratios measured
in this one run (no thresholds: speed is measured, not asserted).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_critic22.apps.samples import case_dir, materialize


def timed(command: list[str], cwd: Path, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, cwd=cwd, capture_output=True, check=False)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = materialize("textstats", Path(tmp) / "textstats")
        patch = case_dir("textstats", "median-drops-guard") / "patch.diff"
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        arms = {
            "plugin disabled (-p no:critic22)": [*base, "-p", "no:critic22"],
            "plugin installed, no --critic22": base,
            "--critic22, no critic (trees + preservation)": [*base, f"--critic22={patch}"],
        }
        results = {name: timed(cmd, repo, args.runs) for name, cmd in arms.items()}
    reference = next(iter(results.values()))
    print(f"median of {args.runs} runs each, sample repository 'textstats'")
    for name, seconds in results.items():
        print(f"  {name:40s} {seconds * 1000:8.1f} ms   x{seconds / reference:.2f}")


if __name__ == "__main__":
    main()
