"""``critic22 ab`` in the local process pool against a two-worker Dask cluster on loopback.

    python benchmarks/bench_cluster.py [--cases N]

Subject: the first N cases (default 4) of the bundled population, all held out, with the
recorded ``useful`` critic, ``--critic22-reruns 1``, ``--fresh`` (nothing from the cache).

Arms, each one whole ``critic22 ab`` process timed with ``time.perf_counter()``:

- pool: ``--jobs 2 --scheduler pool`` (the process pool, the fallback without the extra);
- cluster: ``--scheduler tcp://127.0.0.1:PORT``, a scheduler and two ``--nthreads 1`` workers
  started here as separate processes (their start is not timed: a cluster is started once
  and serves many runs).

The ratio cluster ÷ pool is measured in this one run; nothing is asserted. Beside it, what
the projection for a larger population needs: the worker-seconds per case (the runs'
``elapsed`` summed, from the cluster run's records) and the cost of one repository's bundle
(``git bundle create --all`` of this checkout, its size), so that a population of C cases
on W workers takes about per-case × C ÷ W + one bundle per mined repository.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_critic22.apps.cluster import bundle_bytes
from pytest_critic22.apps.samples import POPULATION, SAMPLES_DIR


def sub_population(folder: Path, count: int) -> tuple[Path, int]:
    document = json.loads(POPULATION.read_text())
    cases = []
    for raw in document["cases"][:count]:
        entry = dict(raw)
        for key in ("repo", "patch", "spec", "root_cause", "obligations", "base_patch"):
            if isinstance(entry.get(key), str):
                entry[key] = str(SAMPLES_DIR / entry[key])
        entry["ground_truth"] = [
            g if isinstance(g, dict) else str(SAMPLES_DIR / g) for g in entry["ground_truth"]
        ]
        cases.append(entry)
    recorded = folder / "recorded" / "useful"
    recorded.mkdir(parents=True)
    for case in cases:
        source = SAMPLES_DIR / "recorded" / "useful" / f"{case['id']}.json"
        if source.exists():
            (recorded / source.name).write_bytes(source.read_bytes())
    document.update(cases=cases, held_out={"rule": "sha256-mod", "modulus": 1, "tuning": []})
    path = folder / "population.json"
    path.write_text(json.dumps(document))
    return path, len(cases)


def start_cluster(root: Path) -> tuple[str, list[subprocess.Popen[bytes]]]:
    processes: list[subprocess.Popen[bytes]] = []

    def start(name: str, args: list[str]) -> Path:
        home = root / name
        (home / "tmp").mkdir(parents=True)
        log = home / "log"
        with log.open("wb") as out:
            processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", *args],
                    cwd=home,
                    env={**os.environ, "TMPDIR": str(home / "tmp")},
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        return log

    def wait(ready: object) -> None:
        deadline = time.monotonic() + 120
        while not ready():  # type: ignore[operator]
            if time.monotonic() > deadline:
                raise SystemExit("the cluster did not start")
            time.sleep(0.1)

    file = root / "scheduler.json"
    start(
        "scheduler",
        ["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
         "--dashboard-address", "127.0.0.1:0", "--scheduler-file", str(file)],
    )  # fmt: skip
    wait(file.exists)
    address = str(json.loads(file.read_text())["address"])
    for number in (1, 2):
        log = start(
            f"worker{number}",
            ["distributed.cli.dask_worker", address, "--nthreads", "1", "--no-nanny",
             "--no-dashboard", "--host", "127.0.0.1",
             "--local-directory", str(root / f"worker{number}" / "local")],
        )  # fmt: skip
        wait(lambda log=log: b"Registered to" in log.read_bytes())
    return address, processes


def timed_ab(population: Path, cache: Path, how: list[str]) -> float:
    command = [
        sys.executable, "-m", "pytest_critic22.apps.ab", str(population),
        "--critic", "recorded:useful", "--critic22-reruns", "1", "--fresh",
        "--cache", str(cache), *how,
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "CRITIC22_SCHEDULER"}
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cache.parent)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(done.stderr)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as folder:
        root = Path(folder)
        population, cases = sub_population(root / "population", args.cases)
        pool = timed_ab(population, root / "pool-cache", ["--jobs", "2", "--scheduler", "pool"])
        address, processes = start_cluster(root / "dask")
        try:
            cluster = timed_ab(population, root / "cluster-cache", ["--scheduler", address])
        finally:
            for process in processes:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        elapsed = [
            json.loads(p.read_text()).get("elapsed", 0.0)
            for p in (root / "cluster-cache").rglob("*.json")
        ]
        per_case = sum(elapsed) / cases
        started = time.perf_counter()
        size = len(bundle_bytes(Path(__file__).resolve().parents[1]))
        bundle = time.perf_counter() - started
    print(f"critic22 ab, {cases} bundled case(s), {len(elapsed)} runs, --critic22-reruns 1\n")
    print("| pool, --jobs 2 | cluster, 2 workers on loopback | cluster ÷ pool |")
    print("| ---: | ---: | ---: |")
    print(f"| {pool:.1f} s | {cluster:.1f} s | {cluster / pool:.2f}× |\n")
    print(f"worker-seconds per case: {per_case:.1f} s (the runs' elapsed, summed)")
    print(f"one bundle of this checkout: {size / 1e6:.1f} MB in {bundle:.2f} s")
    print("\nprojected, 500 cases: per-case × 500 ÷ workers (+ one bundle per mined repository)")
    print("| workers | 2 | 8 | 32 | 128 |")
    print("| --- | ---: | ---: | ---: | ---: |")
    row = " | ".join(f"{per_case * 500 / w / 60:.0f} min" for w in (2, 8, 32, 128))
    print(f"| time | {row} |")


if __name__ == "__main__":
    main()
