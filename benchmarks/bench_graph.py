"""The code graph of a generated 1,000-file repository, cold and warm.

    python benchmarks/bench_graph.py [--files N]

Cold: every file parsed with libcst. Warm: the same tree again, every file's facts read
from the content-digest cache. Prints both times and the warm/cold ratio measured in
this one run.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_critic22.evidence.gather import build_graph
from pytest_critic22.execution.git import init_repo


def generate(root: Path, files: int, seed: int = 22) -> None:
    """Packages of modules that define functions and classes and call each other."""
    rng = random.Random(seed)
    for index in range(files):
        package = root / f"pkg{index % 20}"
        package.mkdir(exist_ok=True)
        (package / "__init__.py").touch()
        other = rng.randrange(files)
        lines = [
            "from __future__ import annotations",
            f"import pkg{other % 20}.mod{other} as peer",
            "",
        ]
        for f in range(8):
            lines += [
                f"def func{f}(x: int, y: int = {f}) -> int:",
                "    if x is None:",
                "        return y",
                f"    return peer.func{(f + 1) % 8}(x - 1) if x > 0 else y",
                "",
            ]
        lines += [
            f"class Thing{index}:",
            "    def run(self, n: int) -> int:",
            "        return func0(n) + self.size()",
            "",
            "    def size(self) -> int:",
            "        return 1",
            "",
        ]
        (package / f"mod{index}.py").write_text("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        generate(repo, args.files)
        init_repo(repo)
        cache = Path(tmp) / "cache"
        start = time.perf_counter()
        cold, cold_hits = build_graph(repo, cache)
        cold_s = time.perf_counter() - start
        start = time.perf_counter()
        warm, warm_hits = build_graph(repo, cache)
        warm_s = time.perf_counter() - start
        assert cold == warm
    print(f"code graph of {len(cold)} Python files")
    print(f"  cold (parse everything)  {cold_s:8.2f} s   cache hits {cold_hits}")
    print(f"  warm (digest cache)      {warm_s:8.2f} s   cache hits {warm_hits}")
    print(f"  warm/cold ratio          {warm_s / cold_s:8.3f}")


if __name__ == "__main__":
    main()
