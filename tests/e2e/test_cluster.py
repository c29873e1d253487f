"""``critic22 ab`` and ``critic22 mine`` on a real Dask cluster on 127.0.0.1 (``--scheduler``).

A scheduler and two one-thread workers, each a separate process with its own scratch folder
(cwd, temp folder, local directory): no file system shared on purpose. The cluster's runs
must give the population and the A/B table a local run gives; a worker killed mid-task costs
a retry on the other worker, never a case.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("distributed")

from tests.e2e.test_ab import driver, sub_population
from tests.integration.test_mine import history  # noqa: F401  (a fixture)

pytestmark = pytest.mark.e2e

CASES = ["textstats.mode-most-common", "slugkit.empty-sep"]  # one defective, one good
CLI = [sys.executable, "-c", "import sys; from pytest_critic22.apps.cli import main; "
       "sys.exit(main(sys.argv[1:]))"]  # fmt: skip


@dataclass
class Cluster:
    root: Path
    address: str = ""
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def _start(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        home = self.root / name
        (home / "tmp").mkdir(parents=True)
        env = {**os.environ, "TMPDIR": str(home / "tmp")}
        with (home / "log").open("wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", *args],
                cwd=home,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a kill takes the worker's children with it
            )
        self.processes[name] = process
        return process

    def start(self, workers: int = 2) -> None:
        file = self.root / "scheduler.json"
        self._start(
            "scheduler",
            ["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
             "--dashboard-address", "127.0.0.1:0", "--scheduler-file", str(file)],
        )  # fmt: skip
        self.address = json.loads(self._wait(file, lambda f: f.exists()).read_text())["address"]
        for number in range(1, workers + 1):
            name = f"worker{number}"
            self._start(
                name,
                ["distributed.cli.dask_worker", self.address, "--nthreads", "1", "--no-nanny",
                 "--no-dashboard", "--host", "127.0.0.1",
                 "--local-directory", str(self.root / name / "local")],
            )  # fmt: skip
            self._wait(self.root / name / "log", lambda f: b"Registered to" in f.read_bytes())

    def _wait(self, path: Path, ready: Any) -> Path:
        deadline = time.monotonic() + 120  # a bound on a hang, not a measurement
        while not (path.exists() and ready(path)):
            for name, process in self.processes.items():
                assert process.poll() is None, (self.root / name / "log").read_text()
            assert time.monotonic() < deadline, f"{path} never got ready"
            time.sleep(0.1)
        return path

    def kill(self, name: str) -> None:
        os.killpg(self.processes[name].pid, signal.SIGKILL)
        self.processes[name].wait()

    def stop(self) -> None:
        """Every process of the cluster and its children, at once (a test's cluster keeps
        nothing worth a graceful close)."""
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    running = Cluster(tmp_path / "dask")
    try:
        running.start()
        yield running
    finally:
        running.stop()


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CRITIC22_SCHEDULER"}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def without_times(report: dict[str, Any]) -> dict[str, Any]:
    """The report but what a clock or a path decides (wall time, the run commands, and the
    cache keys: a replayed critic's key names its folder)."""
    document = json.loads(json.dumps(report))
    for arm in document["arms"].values():
        arm.pop("wall_seconds", None)
    document["paired"].pop("wall_seconds_difference", None)
    document["runs"] = {
        name: {k: v for k, v in entry.items() if k not in ("seconds", "command", "cached", "key")}
        for name, entry in document["runs"].items()
    }
    return document


def report(path: Path, folder: Path) -> dict[str, Any]:
    """The JSON report, the run's own folder named ``<run>``."""
    return dict(json.loads(path.read_text().replace(str(folder), "<run>")))


def table(stdout: str, folder: Path) -> str:
    """The A/B table but its wall times, the run's own folder named ``<run>``."""
    lines = (line for line in stdout.splitlines() if "wall s" not in line)
    return "\n".join(lines).replace(str(folder), "<run>")


def test_ab_and_mine_on_a_cluster_give_what_a_local_run_gives(
    cluster: Cluster, history: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """The same inputs locally (the process pool) and through ``--scheduler``: the same
    mined population byte for byte, the same A/B table and decision, on the bundled sample
    cases (package data on every worker) and on the mined case (its repository travels as a
    git bundle)."""
    repo, _ = history
    population = sub_population(tmp_path, CASES[:1])  # the mined population adds a pair
    outputs: dict[str, dict[str, Any]] = {}
    for where, how in (("local", ["--jobs", "2", "--scheduler", "pool"]),
                       ("cluster", ["--scheduler", cluster.address])):  # fmt: skip
        folder = tmp_path / where
        folder.mkdir()
        mined = run(
            [*CLI, "mine", str(repo), "--out", str(folder / "mined" / "population.json"),
             "--cache", str(folder / "mine-cache"), "--oracle", str(folder / "oracle"), *how],
            folder,
        )  # fmt: skip
        assert mined.returncode == 0, mined.stderr
        document = json.loads((folder / "mined" / "population.json").read_text())
        document["held_out"] = {**document["held_out"], "tuning": []}
        (folder / "mined" / "all.json").write_text(json.dumps(document))
        sample = run(
            driver(str(population), "--critic", "recorded:useful", "--critic22-reruns", "1",
                   "--cache", str(folder / "ab-cache"), "--json", str(folder / "ab.json"), *how),
            folder,
        )  # fmt: skip
        assert sample.returncode == 0, sample.stderr
        scored = run(
            driver(str(folder / "mined" / "all.json"), "--critic",
                   f"replay:{folder / 'oracle'}", "--critic22-reruns", "1",
                   "--cache", str(folder / "mined-cache"), "--json",
                   str(folder / "mined-ab.json"), *how),
            folder,
        )  # fmt: skip
        assert scored.returncode == 0, scored.stderr
        outputs[where] = {
            "mined": {
                p.relative_to(folder / "mined").as_posix(): p.read_bytes()
                for p in sorted((folder / "mined").rglob("*"))
                if p.is_file()
            },
            "sample": (table(sample.stdout, folder), report(folder / "ab.json", folder)),
            "scored": (table(scored.stdout, folder), report(folder / "mined-ab.json", folder)),
            "stderr": mined.stderr + sample.stderr + scored.stderr,
        }
    local, remote = outputs["local"], outputs["cluster"]
    assert len(local["mined"]) >= 3 and remote["mined"] == local["mined"]
    assert remote["sample"][0] == local["sample"][0]
    assert without_times(remote["sample"][1]) == without_times(local["sample"][1])
    keys = [{k: v["key"] for k, v in side["sample"][1]["runs"].items()} for side in (local, remote)]
    assert keys[0] == keys[1]  # the same units: the cache of one serves the other
    assert remote["scored"][0] == local["scored"][0]
    assert without_times(remote["scored"][1]) == without_times(local["scored"][1])
    measured = remote["scored"][1]["held_out"]["measured"]
    assert measured == local["scored"][1]["held_out"]["measured"] == 2
    commands = [r["command"] for r in remote["scored"][1]["runs"].values() if r["command"]]
    assert commands and all("/dask/worker" in " ".join(c) for c in commands)  # shipped there
    assert not any("<run>" in " ".join(c) for c in commands)  # never the client's folder
    assert "workers [" in remote["stderr"] and "workers [" not in local["stderr"]
    assert "dashboard http://127.0.0.1:" in remote["stderr"]


def test_a_worker_killed_mid_task_costs_a_retry_not_a_case(
    cluster: Cluster, tmp_path: Path
) -> None:
    """One worker is killed (with its children) while it runs a unit: the run completes,
    the unit runs again on the other worker, and every unit is counted once."""
    population = sub_population(tmp_path, CASES[1:])
    out = tmp_path / "ab.json"
    command = driver(str(population), "--critic", "recorded:useful", "--critic22-reruns", "1",
                     "--cache", str(tmp_path / "cache"), "--json", str(out))  # fmt: skip
    env = {**os.environ, "CRITIC22_SCHEDULER": cluster.address}  # the flag's environment twin
    client = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        scratch = tmp_path / "dask" / "worker1" / "tmp"
        deadline = time.monotonic() + 120
        while not list(scratch.glob("critic22-ab-*")):  # worker1 is mid-task
            assert client.poll() is None, client.communicate()
            assert time.monotonic() < deadline, "worker1 never started a unit"
            time.sleep(0.02)
        cluster.kill("worker1")
        stdout, stderr = client.communicate(timeout=600)
    finally:
        if client.poll() is None:  # pragma: no cover - only when the test fails
            client.kill()
            client.wait()
    assert client.returncode == 0, stderr
    document = json.loads(out.read_text())
    assert len(document["runs"]) == 3 and not any(r["error"] for r in document["runs"].values())
    assert document["held_out"]["measured"] == 1 and not document["excluded"]
    assert document["arms"]["a"]["false_rejection"]["n"] == 1  # the one good case, once
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 3
    last = [line for line in stderr.splitlines() if "runs 3/3" in line][-1]
    assert "0 failed" in last and "3 done 0 running" in last, last  # all on the survivor
    assert "Remove worker" in (tmp_path / "dask" / "scheduler" / "log").read_text()
    assert "decision (spec §9.6)" in stdout
