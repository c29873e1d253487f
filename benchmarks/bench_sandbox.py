"""What the sandbox costs one child run: bubblewrap against the rlimits fallback.

    python benchmarks/bench_sandbox.py [--runs N]

Runs the same child pytest through the plugin's runner (``run_pytest``, exactly as a
procedure does) N times per mode, the modes interleaved run by run so that drift of the
machine (caches, frequency, other load) falls on both alike: a trivial test, and the
``textstats`` sample's tests (which import a small package). Prints the median wall time
per child run and the ratio bwrap/rlimits measured in this one run; no thresholds (speed is
measured, not asserted). The one-off bubblewrap probe a run makes is timed separately.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_critic22.apps.samples import materialize
from pytest_critic22.execution.runner import detect_pythonpath, run_pytest
from pytest_critic22.execution.sandbox import Sandbox, probe_bwrap, resolve


def one_run(tree: Path, args: list[str], sandbox: Sandbox, scratch: Path) -> float:
    start = time.perf_counter()
    result = run_pytest(
        tree,
        args,
        timeout=120,
        pythonpath=detect_pythonpath(tree),
        sandbox=sandbox,
        scratch=scratch,
    )
    seconds = time.perf_counter() - start
    if result.status != "passed":
        raise SystemExit(
            f"{sandbox.mode}: the child run did not pass: {result.reason}\n{result.output}"
        )
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()

    start = time.perf_counter()
    problem = probe_bwrap()
    probe = time.perf_counter() - start
    if problem is not None:
        raise SystemExit(f"bubblewrap cannot run here: {problem}")
    modes = {"bwrap": resolve("bwrap"), "rlimits": resolve("rlimits")}

    with tempfile.TemporaryDirectory(prefix="critic22-bench-") as tmp:
        trivial = Path(tmp) / "trivial"
        trivial.mkdir()
        (trivial / "test_trivial.py").write_text("def test_nothing():\n    pass\n")
        sample = materialize("textstats", Path(tmp) / "textstats")
        cases = {
            "trivial test": (trivial, ["test_trivial.py"]),
            "textstats tests (imports a package)": (sample, ["tests/test_stats.py"]),
        }
        scratch = Path(tmp) / "scratch"
        samples: dict[tuple[str, str], list[float]] = {
            (case, mode): [] for case in cases for mode in modes
        }
        for tree, test_args in cases.values():  # warm the page cache for both
            for box in modes.values():
                one_run(tree, test_args, box, scratch)
        for number in range(args.runs):
            for case, (tree, test_args) in cases.items():
                # Alternate which mode goes first, so neither always runs on a warmer cache.
                order = list(modes.items()) if number % 2 == 0 else list(modes.items())[::-1]
                for mode, box in order:
                    samples[(case, mode)].append(one_run(tree, test_args, box, scratch))

    print(f"median (and fastest) of {args.runs} child runs per cell, modes interleaved, one run")
    print(f"bubblewrap probe (once per plugin run): {probe * 1000:.0f} ms")
    print()
    print(f"  {'child run':38s} {'bwrap':>18s} {'rlimits':>18s} {'bwrap/rlimits':>14s}")
    for case in cases:
        bwrap, rlimits = samples[(case, "bwrap")], samples[(case, "rlimits")]
        ratio = statistics.median(bwrap) / statistics.median(rlimits)
        extra = (statistics.median(bwrap) - statistics.median(rlimits)) * 1000
        print(f"  {case:38s} {_cell(bwrap)} {_cell(rlimits)} {ratio:13.2f}x   ({extra:+.0f} ms)")


def _cell(seconds: list[float]) -> str:
    return f"{statistics.median(seconds) * 1000:6.0f} ({min(seconds) * 1000:5.0f}) ms"


if __name__ == "__main__":
    main()
