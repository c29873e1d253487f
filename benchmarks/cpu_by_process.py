"""Where a command's CPU goes, process by process: ``python benchmarks/cpu_by_process.py -- CMD``.

The command runs in a cgroup of its own (cgroup v1 ``cpuacct`` or v2; needs root), so the total
counts every process it starts, bubblewrap's reparented descendants too, which a parent's
rusage misses. Every process in the cgroup is sampled every 20 ms (``/proc/PID/stat``): each
gets the CPU it had used when last seen, so processes shorter than a sample are missed (the
line "unseen" says how much). The command's output goes to ``--out`` (default: a file in
the temp folder). Made to answer "what does the test suite spend its CPU on" (issue 15)::

    python benchmarks/cpu_by_process.py -- python -m pytest -n 2 -q
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KINDS = [  # (what the command line holds, the kind), first match wins
    ("exec(eval(sys.stdin", "xdist worker (the suite's or a review's)"),
    ("The fork-server", "fork-server session"),
    ("pytest_critic22.child.tracer", "tracer replay (a child pytest)"),
    ("--critic22=", "review (the plugin's own pytest)"),
    ("-mpytest --basetemp", "review (the plugin's own pytest)"),
    ("search.py", "property search"),
]


def kind(command: str) -> str:
    for needle, name in KINDS:
        if needle in command:
            return name
    if "-m pytest -p no:critic22" in command:
        return "child pytest, lean" if "-p no:xdist" in command else "child pytest, whole"
    return "other: " + " ".join(command.split()[:2])[:60]


def make_cgroup() -> tuple[Path, Path]:
    """(the cgroup's folder, the file that holds its total CPU)."""
    name = f"critic22-cpu-{os.getpid()}"
    v1 = Path("/sys/fs/cgroup/cpuacct")
    if v1.is_dir():
        folder = v1 / name
        folder.mkdir()
        return folder, folder / "cpuacct.usage"
    for root in (Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup")):
        if (root / "cgroup.procs").exists():
            folder = root / name
            folder.mkdir()
            return folder, folder / "cpu.stat"
    raise SystemExit("cpu_by_process: no cgroup v1 cpuacct or v2 hierarchy here")


def total_cpu(usage: Path) -> float:
    text = usage.read_text()
    if usage.name == "cpuacct.usage":
        return int(text) / 1e9
    fields = dict(line.split() for line in text.splitlines())
    return int(fields["usage_usec"]) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="the command's output file")
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give a command after --")
    out = args.out or Path(tempfile.gettempdir()) / f"cpu_by_process-{os.getpid()}.out"
    folder, usage = make_cgroup()
    tick = os.sysconf("SC_CLK_TCK")
    seen: dict[str, tuple[float, str]] = {}
    start = time.monotonic()
    with open(out, "w") as sink:
        child = subprocess.Popen(
            command,
            stdout=sink,
            stderr=subprocess.STDOUT,
            preexec_fn=lambda: (folder / "cgroup.procs").write_text(str(os.getpid())),
        )
        while child.poll() is None:
            for pid in (folder / "cgroup.procs").read_text().split():
                try:
                    stat = Path(f"/proc/{pid}/stat").read_text()
                    line = Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
                except OSError:
                    continue
                fields = stat.rsplit(")", 1)[1].split()
                cpu = (int(fields[11]) + int(fields[12])) / tick
                was = seen.get(pid, (0.0, ""))
                seen[pid] = (max(cpu, was[0]), line or was[1])
            time.sleep(0.02)
    wall = time.monotonic() - start
    total = total_cpu(usage)
    folder.rmdir()
    groups: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0])
    for cpu, line in seen.values():
        group = groups[kind(line)]
        group[0] += cpu
        group[1] += 1
    sampled = sum(cpu for cpu, _ in seen.values())
    print(f"exit {child.returncode}, {wall:.0f} s wall, {total:.0f} CPU-s in all (output: {out})")
    print(f"{'CPU-s':>8} {'processes':>9}  kind")
    ranked = sorted(groups.items(), key=lambda item: -item[1][0])
    for name, (cpu, count) in ranked[: args.top]:
        print(f"{cpu:8.1f} {int(count):9d}  {name}")
    print(f"{total - sampled:8.1f} {'':9}  unseen (processes shorter than a sample)")
    sys.exit(child.returncode)


if __name__ == "__main__":
    main()
