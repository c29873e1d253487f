"""What the collection check costs (issue 41): one finding's review with and without
``preserve[collection]``, on the bundled sample and on a 5,000-file repository.

    python benchmarks/bench_collection.py [--quick] [--repeat N]

Two arms per repository, each a whole ``pytest --critic22=… --critic22-only`` run with one
recorded finding that verifies (``benchmarks/bench_verify.py``'s repositories and findings):
``without`` passes ``--critic22-preservation=off`` (no preservation, no collection check),
``with`` passes ``--critic22-preservation=explicit`` with no explicit obligation, so the only
preservation item is the collection check. The arms are interleaved repetition by repetition,
order alternating; the table shows the medians, their ratio (with ÷ without) and the seconds
the collection check's own children took (from the JSON report's logs), all measured in this
one run. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_verify import FULL, QUICK, Arm, count_files, interleave, make_repo, plugin_arm

from pytest_critic22.execution.git import git
from pytest_critic22.execution.trees import trees_root


def collection_seconds(report: Path) -> float:
    """The collection check's children: their seconds, summed (base, patched, base harness)."""
    document = json.loads(report.read_text())
    for group in document.get("preservation", []):
        if group.get("group") == "collection":
            runs = (group.get("logs") or {}).get("collect") or {}
            return sum(float(run.get("seconds") or 0.0) for run in runs.values())
    return 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smaller big repository")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions (default 3)")
    args = parser.parse_args()
    scale = QUICK if args.quick else FULL
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS",)}
    tmp = Path(tempfile.mkdtemp(prefix="critic22-bench-collection-"))
    rows = []
    try:
        for label, filler in (("generated package", 0), ("5,000-file repository", scale.big_files)):
            repo = tmp / f"repo-{filler}"
            base, patch_text = make_repo(repo, scale, filler=filler)
            patch = tmp / f"patch-{filler}.diff"
            patch.write_text(patch_text)
            arms: list[Arm] = []
            for name, mode in (("without", "off"), ("with", "explicit")):
                arm = plugin_arm(f"{label} {name}", repo, patch, tmp, 1)
                arm.command = [
                    *[a for a in arm.command if not a.startswith("--critic22-preservation")],
                    f"--critic22-preservation={mode}",
                    f"--critic22-base={base}",
                ]
                arms.append(arm)
            for arm in arms:  # once untimed: the page cache and the warm trees
                arm.run(env)
                arm.samples.clear()
            seconds: list[float] = []
            for number in range(args.repeat):
                interleave(arms if number % 2 == 0 else arms[::-1], 1, env, label)
                assert arms[1].report is not None
                seconds.append(collection_seconds(arms[1].report))
            rows.append((label, count_files(repo), arms[0], arms[1], statistics.median(seconds)))
            git(["worktree", "prune"], repo)
            shutil.rmtree(trees_root(repo), ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        "| repository | files | one finding, no collection check | with it | ratio | "
        "the check's children |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for label, files, without, with_, children in rows:
        print(
            f"| {label} | {files:,} | {without.median:.2f} s | {with_.median:.2f} s | "
            f"{with_.median / without.median:.2f}x | {children:.2f} s |"
        )


if __name__ == "__main__":
    main()
