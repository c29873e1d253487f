"""What warm trees save: the plugin's tree setup, fresh versus warm (issue 15, item 4).

    python benchmarks/bench_trees.py [--quick] [--repeat N]

Each arm is a whole child process (``time.perf_counter()`` around ``subprocess.run``) that
runs the plugin's own ``TreeSet`` as a review does: claim the run, build the run's two trees
(``patched``: base + the patch; ``without-e1``: the base), write a critic's test into the
patched one, and give the trees up at the end (``remove_all``). ``fresh`` is
``TreeSet(warm=False)`` (``--critic22-fresh-trees``: ``git worktree add`` per tree, removed
at the end); ``warm`` is ``TreeSet(warm=True)`` (the plugin's default: trees taken from the
repository's pool in ``.critic22/critic22-trees/``, reset with ``git clean -ffdx`` +
``git checkout --detach --force``, given back at the end). Before the timed repetitions each
arm runs once untimed (the page cache; for ``warm`` it also fills the pool, as the first run
on a repository does). The arms are interleaved repetition by repetition, order alternating,
so drift of the machine falls on both alike; the table shows medians and the ratio of those
medians (warm ÷ fresh), all measured in this one run. Nothing is asserted.

The repositories are generated as ``benchmarks/bench_verify.py`` generates them: a small
package with tests, plus (for the big one) 5,000 filler modules in folders of 50, one commit;
the patch breaks one function.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_verify import FULL, QUICK, Arm, count_files, interleave, make_repo

from pytest_critic22.execution.git import git
from pytest_critic22.execution.trees import trees_root

# One run's tree setup, as the plugin does it; argv: repo, base, patch file, warm (0/1), run id.
_RUN = """\
import sys
from pathlib import Path
from pytest_critic22.execution.trees import TreeSet, Variant, write_in_tree
repo, base, patch = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]).read_text()
trees = TreeSet(repo, base, sys.argv[5], warm=sys.argv[4] == "1")
trees.claim()
try:
    patched = trees.get(Variant("patched", (patch,)))
    trees.get(Variant("without-e1", ("",)))
    write_in_tree(patched, "tests/test_critic22_f1.py", "def test_f1():\\n    assert False\\n")
finally:
    trees.remove_all()
"""


def tree_arm(name: str, repo: Path, base: str, patch: Path, warm: bool) -> Arm:
    command = [sys.executable, "-c", _RUN, str(repo), base, str(patch), "1" if warm else "0"]
    return Arm(name, [*command, f"bench-trees-{'warm' if warm else 'fresh'}"], repo)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 filler files, 1 repetition")
    parser.add_argument("--repeat", type=int, default=None, help="repetitions (default 5)")
    args = parser.parse_args()
    scale = QUICK if args.quick else FULL
    repeat = args.repeat if args.repeat is not None else (1 if args.quick else 5)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    signal.signal(signal.SIGTERM, _interrupt)
    started, load_before = time.perf_counter(), os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="critic22-bench-trees-"))
    repos = {"small": tmp / "small", "big": tmp / "big"}
    rows: list[tuple[str, Arm, Arm]] = []
    try:
        for label, repo in repos.items():
            repo.mkdir()
            base, patch_text = make_repo(
                repo, scale, filler=scale.big_files if label == "big" else 0
            )
            patch = tmp / f"{label}.diff"
            patch.write_text(patch_text)
            what = f"{count_files(repo):,}-file repository"
            fresh = tree_arm(f"fresh, {what}", repo, base, patch, warm=False)
            warm = tree_arm(f"warm, {what}", repo, base, patch, warm=True)
            for arm in (fresh, warm):  # the page cache, and the pool's first fill; not timed
                arm.run(env)
                arm.samples.clear()
            interleave([fresh, warm], repeat, env, label)
            rows.append((what, fresh, warm))
    finally:
        for repo in repos.values():
            shutil.rmtree(trees_root(repo), ignore_errors=True)
            if (repo / ".git").exists():
                shutil.rmtree(repo / ".critic22", ignore_errors=True)
                git(["worktree", "prune"], repo, check=False)
        shutil.rmtree(tmp, ignore_errors=True)
    load = (load_before, os.getloadavg()[0])
    print_table(rows, repeat, time.perf_counter() - started, load, scale is QUICK)


def print_table(
    rows: list[tuple[str, Arm, Arm]],
    repeat: int,
    elapsed: float,
    load: tuple[float, float],
    quick: bool,
) -> None:
    print(
        "bench_trees: the plugin's tree setup for one run (2 trees: patched, without-e1), "
        f"fresh vs warm{' (--quick)' if quick else ''}"
    )
    print(
        f"medians of {repeat} run(s) per arm, arms interleaved, whole processes, one run; "
        f"{os.cpu_count()} CPUs; 1-minute load average {load[0]:.1f} at the start, "
        f"{load[1]:.1f} at the end (the CPUs may be shared: ratios are steadier than seconds)"
    )
    print()
    width = max(len(what) for what, _, _ in rows)
    print(f"{'repository':{width}s}  {'fresh':>8s}  {'warm':>8s}  {'warm ÷ fresh':>12s}")
    for what, fresh, warm in rows:
        ratio = warm.median / fresh.median
        print(f"{what:{width}s}  {fresh.median:7.2f}s  {warm.median:7.2f}s  {ratio:11.2f}×")
    print()
    for what, fresh, warm in rows:
        samples = ", ".join(f"{s:.2f}" for s in fresh.samples)
        warm_samples = ", ".join(f"{s:.2f}" for s in warm.samples)
        print(f"- {what}: fresh samples [{samples}] s, warm samples [{warm_samples}] s")
    print(f"total wall time of the benchmark: {elapsed:.0f} s")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    main()
