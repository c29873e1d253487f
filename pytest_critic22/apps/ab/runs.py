"""Runs (I/O) of ``critic22 ab``: one unit = one case in one run kind; each one cached.

A review unit runs the plugin's own pipeline (:func:`pytest_critic22.apps.api.review`) on a scratch
copy of the case's base; the ground-truth unit runs the hidden tests, after the reviews, on
another scratch copy. A finished unit's record is cached under a key of everything it depends
on (:func:`unit_key`), so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_critic22.apps.ab.population import Case, CriticChoice
from pytest_critic22.execution.child_files import prune_orphans

#: Bump when the cached records change shape.
CACHE_SCHEMA = 1

RUN_KINDS = ("validator", "critic", "unblinded", "ground-truth")
_STRIPPED_ENV = ("CRITIC", "PYTEST_ADDOPTS", "PYTEST_PLUGINS")


@dataclass(frozen=True, slots=True)
class RunOptions:
    reruns: int | None = None  # --critic22-reruns (None: the plugin's default)
    timeout: float | None = None  # --critic22-procedure-timeout
    engage: str = "auto"  # --critic22-engage of the critic arms
    # The model's options (--override-ini=critic22_temperature=0, ...).
    critic_args: tuple[str, ...] = ()
    run_timeout: float = 1800.0  # one whole plugin run

    def plugin_args(self) -> list[str]:
        args = []
        if self.reruns is not None:
            args.append(f"--critic22-reruns={self.reruns}")
        if self.timeout is not None:
            args.append(f"--critic22-procedure-timeout={self.timeout:g}")
        return args


@dataclass(frozen=True, slots=True)
class Unit:
    case: Case
    kind: str  # one of RUN_KINDS
    critic: CriticChoice | None
    options: RunOptions
    key: str
    cache_file: Path


def plugin_inputs(
    case: Case, kind: str, critic: CriticChoice | None, options: RunOptions
) -> dict[str, Any]:
    """The keyword arguments of :func:`pytest_critic22.apps.api.review` for a review unit.

    Pure. The ground truth is not among them, by construction: nothing here reads it.
    """
    inputs: dict[str, Any] = {
        "spec": case.spec,
        "root_cause": case.root_cause,
        "obligations": case.obligations,
        "base": case.base,
        "extra_args": options.plugin_args(),
    }
    if kind == "validator":
        inputs["engage"] = "never"
        return inputs
    if critic is None:
        raise ValueError(f"a {kind} run needs a critic")
    inputs["engage"] = options.engage
    if critic.kind == "model":
        if kind == "unblinded":
            raise ValueError("a live model cannot be run unblinded")
        inputs["model"] = critic.name
        inputs["api_base"] = critic.api_base
        inputs["extra_args"] = [*options.plugin_args(), *options.critic_args]
        return inputs
    recording = critic.recording(case, unblinded=kind == "unblinded")
    if recording is None:
        raise ValueError(f"no {kind} recording of {critic.label} for case {case.id}")
    inputs["findings"] = recording
    return inputs


def plugin_input_texts(
    cases: Iterable[Case], critic: CriticChoice, options: RunOptions = RunOptions()
) -> Iterator[tuple[str, str, str]]:
    """(case id, kind, text) of everything a review unit hands the plugin: the arguments and
    every file they name. Used to audit that no ground truth ever reaches a plugin input."""
    for case in cases:
        for kind in ("validator", "critic", "unblinded"):
            if kind == "unblinded" and (
                critic.kind == "model" or critic.recording(case, unblinded=True) is None
            ):
                continue
            inputs = plugin_inputs(case, kind, critic, options)
            yield case.id, kind, json.dumps(inputs, default=str)
            for value in (case.patch, *inputs.values()):
                if isinstance(value, Path) and value.is_file():
                    yield case.id, kind, value.read_text(encoding="utf-8", errors="replace")
            for path in sorted(case.repo.rglob("*")):
                if path.is_file() and path.suffix in (".py", ".toml", ".cfg", ".ini", ".txt"):
                    yield case.id, kind, path.read_text(encoding="utf-8", errors="replace")


_SCRATCH = "critic22-ab-"


def run_unit(unit: Unit) -> dict[str, Any]:
    """Run one unit; return its record. The caller caches it (unless the run failed): the
    worker that runs it may not share the caller's disk."""
    started = time.monotonic()
    # Named by PID: what a run killed by SIGKILL left, the next one removes.
    prune_orphans(_SCRATCH)
    scratch = Path(tempfile.mkdtemp(prefix=f"{_SCRATCH}{os.getpid()}-"))
    repo = scratch / "repo"
    try:
        try:
            materialize(unit.case, repo)
        except (OSError, RuntimeError) as exc:
            record: dict[str, Any] = {"error": f"the repository cannot be prepared: {exc}"}
        else:
            if unit.kind == "ground-truth":
                record = run_ground_truth(unit.case, repo, unit.options)
            else:
                record = _review_record(unit, repo)
    except Exception as exc:  # one broken run must not stop the others: reported, not cached
        record = {"error": f"{type(exc).__name__}: {exc}"}
    finally:
        _remove_scratch(scratch, repo)
    record.update(
        schema=CACHE_SCHEMA,
        key=unit.key,
        case=unit.case.id,
        kind=unit.kind,
        critic=unit.critic.label if unit.critic is not None and unit.kind != "validator" else None,
        elapsed=round(time.monotonic() - started, 3),
    )
    return record


def _review_record(unit: Unit, repo: Path) -> dict[str, Any]:
    from pytest_critic22.apps.api import review

    inputs = plugin_inputs(unit.case, unit.kind, unit.critic, unit.options)
    env = {k: v for k, v in os.environ.items() if k not in _STRIPPED_ENV}
    run = review(
        repo,
        unit.case.patch,
        timeout=unit.options.run_timeout,
        env=env,
        **inputs,
    )
    record = run.to_dict()
    record["cwd"] = "<scratch>/repo"
    answer = _raw_answer(run.raw, repo)
    if answer is not None:
        record["raw_answer"] = answer  # a live model's answer, for ab --record DIR
    return record


def _raw_answer(report: Mapping[str, Any] | None, repo: Path) -> str | None:
    """The model's chosen raw answer (the report's ``critic.answer`` trace file), when the
    file lies in the run's scratch copy; None otherwise."""
    critic = (report or {}).get("critic")
    if not isinstance(critic, dict) or critic.get("source") != "model":
        return None
    name = critic.get("answer")
    if not isinstance(name, str):
        return None
    path = (repo / name).resolve()
    if not path.is_relative_to(repo.resolve().parent) or not path.is_file():
        return None
    return path.read_text(encoding="utf-8", errors="replace")


def materialize(case: Case, dest: Path) -> Path:
    """The case's base as a git repository at ``dest`` (a copy: the original is only read)."""
    from pytest_critic22.apps.samples import materialize as copy_and_commit
    from pytest_critic22.execution.git import commit_all, git

    if (case.repo / ".git").exists():
        git(["clone", "-q", "--no-local", str(case.repo), str(dest)], case.repo.parent)
        git(["checkout", "-q", "--detach", case.base or "HEAD"], dest)
        return dest
    copy_and_commit(case.id, dest, source=case.repo, message=f"base of {case.id}")
    if case.base_patch is not None:
        git(["apply", "--whitespace=nowarn", str(case.base_patch)], dest)
        commit_all(dest, f"base patch of {case.id}")
    return dest


def run_ground_truth(case: Case, repo: Path, options: RunOptions) -> dict[str, Any]:
    """The hidden tests on the base and on the patched tree (a scratch copy, never reviewed).

    ``patched`` is "failed" when at least one hidden test fails there (the defect is real),
    "passed" when all pass, "error" when they cannot run, "none" without hidden tests.
    """
    from pytest_critic22.execution.git import git
    from pytest_critic22.execution.runner import detect_pythonpath, run_pytest

    if not case.ground_truth:
        return {"patched": "none", "base": "none", "tests": {}, "seconds": 0.0}
    if any(test.path is not None for test in case.ground_truth):
        from pytest_critic22.apps.ab.mined import run_mined_ground_truth

        return run_mined_ground_truth(case, repo, options.timeout or 120.0)
    folder = repo / "critic22_ground_truth"
    folder.mkdir()
    for number, test in enumerate(case.ground_truth, 1):
        (folder / f"test_ground_truth_{number}.py").write_text(test.source, encoding="utf-8")
    timeout = options.timeout or 120.0
    pythonpath = detect_pythonpath(repo)
    on_base = run_pytest(repo, [folder.name], timeout=timeout, pythonpath=pythonpath)
    applied = git(["apply", "--whitespace=nowarn", str(case.patch)], repo, check=False)
    if applied.returncode != 0:
        return {
            "patched": "error",
            "base": on_base.status,
            "tests": {},
            "seconds": on_base.seconds,
            "error": f"the patch does not apply: {applied.stderr.strip()[:200]}",
        }
    on_patched = run_pytest(repo, [folder.name], timeout=timeout, pythonpath=pythonpath)
    return {
        "patched": on_patched.status,
        "base": on_base.status,
        "tests": dict(on_patched.tests),
        "reason": on_patched.reason,
        "seconds": round(on_base.seconds + on_patched.seconds, 3),
    }


def _remove_scratch(scratch: Path, repo: Path) -> None:
    from pytest_critic22.execution.trees import trees_root

    with contextlib.suppress(OSError):
        shutil.rmtree(trees_root(repo), ignore_errors=True)
    shutil.rmtree(scratch, ignore_errors=True)


# -- cache keys --------------------------------------------------------------------------------


def _digest_update(h: Any, label: str, data: bytes) -> None:
    h.update(f"{label}\0{len(data)}\0".encode())
    h.update(data)


def _folder_digest(h: Any, folder: Path, base: str | None = None) -> None:
    if (folder / ".git").exists():
        from pytest_critic22.execution.git import git

        # The tree the case is reviewed on: its base when it names one (a mined case's
        # repository moves on; its cases do not), else the repository's HEAD.
        head = git(["rev-parse", f"{base or 'HEAD'}^{{tree}}"], folder).stdout.strip()
        _digest_update(h, "git-tree", head.encode())
        return
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if any(part in ("__pycache__", ".pytest_cache", ".critic22") for part in rel.parts):
            continue
        if path.is_file() and path.suffix != ".pyc":
            _digest_update(h, rel.as_posix(), path.read_bytes())


def case_digest(case: Case, *, with_ground_truth: bool = False) -> str:
    """What a run of the case depends on: the repository, the patch and the packet inputs."""
    h = hashlib.sha256()
    _digest_update(h, "id", case.id.encode())
    _folder_digest(h, case.repo, case.base)
    for label, path in (
        ("patch", case.patch),
        ("spec", case.spec),
        ("root_cause", case.root_cause),
        ("base_patch", case.base_patch),
    ):
        _digest_update(h, label, path.read_bytes() if path is not None else b"-")
    obligations = case.obligations
    if isinstance(obligations, Path):
        _digest_update(h, "obligations-file", obligations.read_bytes())
    else:
        _digest_update(h, "obligations", json.dumps(list(obligations)).encode())
    _digest_update(h, "base", (case.base or "-").encode())
    if with_ground_truth:
        for test in case.ground_truth:
            _digest_update(h, "ground-truth", test.source.encode())
            if test.path is not None:
                _digest_update(h, "ground-truth-at", json.dumps([test.path, *test.nodes]).encode())
        if case.existing_tests:
            existing = [*case.test_args, "--", *case.existing_tests]
            _digest_update(h, "existing", json.dumps(existing).encode())
    return h.hexdigest()


def plugin_digest() -> str:
    """The plugin's version and every source file of the package but this driver's and its
    engines' (and the bundled samples': a case's own files are in its key)."""
    from importlib.metadata import version

    package = Path(__file__).resolve().parents[2]
    h = hashlib.sha256(version("pytest-critic22").encode())
    for path in sorted(package.rglob("*")):
        relative = path.relative_to(package)
        if (
            path.is_file()
            and path.suffix in (".py", ".txt")
            and relative.parts[0] != "sample_repos"
            and relative.parts[:2] != ("apps", "ab")
            and relative.parts != ("apps", "cluster.py")  # where runs run, not what they do
        ):
            _digest_update(h, relative.as_posix(), path.read_bytes())
    return h.hexdigest()


def unit_key(
    case: Case,
    kind: str,
    critic: CriticChoice | None,
    options: RunOptions,
    plugin: str,
) -> str:
    critic_key: str = "none"
    run_options: dict[str, Any] = {"timeout": options.timeout}
    if kind in ("critic", "unblinded") and critic is not None:
        if critic.replayed:
            recording = critic.recording(case, unblinded=kind == "unblinded")
            content = recording.read_bytes() if recording is not None else b""
            critic_key = f"{critic.label}:{hashlib.sha256(content).hexdigest()}"
        else:
            critic_key = f"{critic.label}@{critic.api_base or ''}"
        run_options["engage"] = options.engage
        run_options["critic_args"] = list(options.critic_args) if critic.kind == "model" else []
    if kind != "ground-truth":
        run_options["reruns"] = options.reruns
    payload = {
        "schema": CACHE_SCHEMA,
        "case": case_digest(case, with_ground_truth=kind == "ground-truth"),
        "kind": kind,
        "critic": critic_key,
        "plugin": plugin,
        "options": run_options,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def plan_units(
    cases: Sequence[Case], critic: CriticChoice, options: RunOptions, cache_dir: Path
) -> list[Unit]:
    """The runs the held-out cases need: validator, critic, unblinded (when recorded), truth."""
    plugin = plugin_digest()
    units = []
    for case in cases:
        kinds = ["validator", "critic"]
        if critic.replayed and critic.recording(case, unblinded=True) is not None:
            kinds.append("unblinded")
        kinds.append("ground-truth")
        for kind in kinds:
            key = unit_key(case, kind, critic, options, plugin)
            file = cache_dir / case.id / f"{kind}-{key[:16]}.json"
            units.append(Unit(case, kind, critic, options, key, file))
    return units


def cached_record(unit: Unit) -> dict[str, Any] | None:
    try:
        record = json.loads(unit.cache_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("key") != unit.key:
        return None
    return record
