"""``critic22 ab``: critic-on against critic-off on a labelled population of patches.

Honest measurement (spec §9): every held-out case of a population runs through the plugin's
own pipeline (:func:`pytest_critic22.api.review`, never a second implementation of the gate)
in each arm, and the arms are compared on the same cases:

a. **validator alone** — ``--critic22-engage=never``: the preservation items (the existing
   tests that reach the touched symbols, and obligations that are test ids) on the patched
   tree, against the base;
b. **critic, then validator** — the plugin as it runs: the critic's blocking findings are
   executed (falsification on worktrees) and the gate decides, the validator's items included;
c. **blinding off** — b, with the generator's rationale and confidence shown to the critic.
   Recorded critics supply ``<set>/<case>.unblinded.json`` for it (absent: the arm is n/a);
   a live model cannot be run unblinded yet, since the plugin strips rationale and confidence
   from every request and has no switch to let them through;
d. **routing off** — b's findings act as verdicts without execution: reject iff a blocking
   finding was emitted (or the validator verified a regression). Computed from b's report;
e. **gate off** — the critic's confidence decides: reject iff a blocking finding has
   confidence >= 0.5 (:data:`CONFIDENCE_THRESHOLD`; or the validator verified a regression).
   Computed from b's report.

Definitions (per arm, over the held-out cases only):

- **caught**: the arm rejects the patch. For a, b and c that is "at least one verified
  blocking item" (a finding, or a preservation regression); for d and e it is their rule.
- **verified-defect recall**: caught defective cases / defective cases. Of those, the ones
  that **agree with the ground truth** are the cases where at least one of the case's hidden
  tests fails on the patched tree (the defect is real). The ground truth is case-level: it
  does not check that the verified finding is about the same defect as the hidden test.
- **over-veto false-positive rate**: blocking findings killed by their own falsification
  (outcome ``refuted``) / blocking findings emitted (after the parser's downgrades). d and e
  emit the same findings as b, so the same number; the validator alone emits none (0 of 0).
- **false rejection rate**: rejected good cases / good cases — the over-veto that reaches a
  verdict.
- **inconclusive rate**: executed blocking items (findings and preservation groups) whose
  outcome is inconclusive / executed blocking items. d executes only the preservation items.
- **critic calls, tokens, wall time**: per case. A replayed recording counts as one call with
  no tokens; d and e have no runs of their own (they are b's runs, read differently).

Intervals are 95%: Wilson score intervals for rates (claims within a case are counted as
independent, which they are not quite), Student-t intervals for means. The paired comparison
of two arms is the exact McNemar test (the binomial test on the discordant cases); "beyond
noise" means a one-sided exact McNemar p-value below :data:`ALPHA`.

The decision rule (spec §9.6) keeps the critic iff (1) recall is strictly higher with the
critic than without, (2) the over-veto is not worse than the validator alone's — compared on
what reaches a verdict, the false rejection rate, since the validator alone makes no claims of
its own (0 of 0) — and (3) removing the critic degrades at least one measure (recall, or false
rejections) beyond noise. Otherwise: remove the critic, an empty L column.

The hidden ground-truth tests are read only by :func:`run_ground_truth`, after the reviews,
on a copy of the patched tree; they never reach a plugin input. Every run is cached under
``--cache`` keyed by (case content digest, run kind, critic, plugin version), so an
interrupted run resumes where it stopped.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import multiprocessing
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

__all__ = [
    "ALPHA",
    "ARMS",
    "CONFIDENCE_THRESHOLD",
    "AbReport",
    "AbRun",
    "Ablation",
    "ArmCase",
    "ArmMetrics",
    "Case",
    "CaseResult",
    "Claim",
    "Clause",
    "CriticChoice",
    "Decision",
    "GroundTruthTest",
    "HeldOutRule",
    "MeanInterval",
    "Paired",
    "Population",
    "PopulationError",
    "Rate",
    "ReviewSummary",
    "RunOptions",
    "Unit",
    "ablation",
    "arm_case",
    "arm_metrics",
    "build_report",
    "case_digest",
    "choose_critic",
    "compare",
    "decide",
    "load_population",
    "main",
    "materialize",
    "mcnemar",
    "mean_interval",
    "paired",
    "plan_units",
    "plugin_digest",
    "plugin_input_texts",
    "plugin_inputs",
    "render",
    "run_ground_truth",
    "run_population",
    "run_unit",
    "summarize",
    "t_quantile",
    "unit_key",
    "wilson",
]

#: One-sided significance level for "beyond noise".
ALPHA = 0.05
#: Gate off (arm e): a blocking finding with at least this confidence rejects the patch.
CONFIDENCE_THRESHOLD = 0.5
#: The 97.5% quantile of the standard normal distribution (two-sided 95%).
Z95 = 1.959963984540054
#: Bump when the cached records change shape.
CACHE_SCHEMA = 1

Label = Literal["good", "defective"]
ArmName = Literal["a", "b", "c", "d", "e"]
ARMS: tuple[ArmName, ...] = ("a", "b", "c", "d", "e")
ARM_TITLES: Mapping[str, str] = {
    "a": "a validator",
    "b": "b critic+validator",
    "c": "c blinding off",
    "d": "d routing off",
    "e": "e gate off",
}
MECHANISMS: Mapping[str, str] = {"c": "blinding", "d": "routing", "e": "gate"}
RUN_KINDS = ("validator", "critic", "unblinded", "ground-truth")
_IGNORED = ("__pycache__", ".pytest_cache", "*.pyc", ".critic22", ".mypy_cache", ".ruff_cache")
_STRIPPED_ENV = ("CRITIC", "PYTEST_ADDOPTS", "PYTEST_PLUGINS")


class PopulationError(ValueError):
    """The population file is unusable; the message says where and why."""


# =============================================================================================
# The population
# =============================================================================================


@dataclass(frozen=True, slots=True)
class HeldOutRule:
    """A case is for tuning iff ``int(sha256(id).hexdigest(), 16) % modulus`` is in ``tuning``."""

    modulus: int
    tuning: tuple[int, ...]

    def is_tuning(self, case_id: str) -> bool:
        digest = int(hashlib.sha256(case_id.encode("utf-8")).hexdigest(), 16)
        return digest % self.modulus in self.tuning

    def describe(self) -> str:
        residues = ", ".join(str(r) for r in self.tuning) or "nothing"
        return (
            f"a case is for tuning iff int(sha256(id), 16) % {self.modulus} is in "
            f"[{residues}]; every other case is held out"
        )


@dataclass(frozen=True, slots=True)
class GroundTruthTest:
    name: str  # where it came from (a file, or "inline 1")
    source: str


@dataclass(frozen=True, slots=True)
class Case:
    id: str
    repo: Path  # a plain folder (copied and committed) or a git repository (cloned)
    patch: Path
    label: Label
    spec: Path | None = None
    root_cause: Path | None = None
    obligations: Path | tuple[str, ...] = ()
    ground_truth: tuple[GroundTruthTest, ...] = ()
    base: str | None = None  # a revision, when repo is a git repository
    base_patch: Path | None = None  # applied and committed on a plain folder to form the base
    summary: str = ""
    kinds: tuple[str, ...] = ()  # the procedure kinds that can show the defect
    caught_by_existing_tests: bool | None = None


@dataclass(frozen=True, slots=True)
class Population:
    path: Path
    name: str
    rule: HeldOutRule
    cases: tuple[Case, ...]
    recorded: Path  # the folder of recorded critic sets
    critics: Mapping[str, str] = field(default_factory=dict)  # set name -> description

    def held_out(self) -> tuple[Case, ...]:
        return tuple(c for c in self.cases if not self.rule.is_tuning(c.id))

    def tuning(self) -> tuple[Case, ...]:
        return tuple(c for c in self.cases if self.rule.is_tuning(c.id))


def load_population(path: Path) -> Population:
    """Read and check a population file (paths in it are relative to the file)."""
    path = Path(path).resolve()
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PopulationError(f"{path}: cannot read: {exc.strerror}") from None
    except ValueError as exc:
        raise PopulationError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise PopulationError(f"{path}: expected a JSON object")
    if document.get("schema", 1) != 1:
        raise PopulationError(f"{path}: unknown schema {document.get('schema')!r} (expected 1)")
    rule = _rule(path, document.get("held_out"))
    raw_cases = document.get("cases")
    if not isinstance(raw_cases, list) or not raw_cases:
        raise PopulationError(f"{path}: 'cases' must be a non-empty list")
    cases = tuple(_case(path.parent, index, raw) for index, raw in enumerate(raw_cases, 1))
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise PopulationError(f"{path}: case id {case.id!r} appears twice")
        seen.add(case.id)
    critics = document.get("critics") or {}
    if not isinstance(critics, dict):
        raise PopulationError(f"{path}: 'critics' must map set names to descriptions")
    return Population(
        path=path,
        name=str(document.get("name") or path.stem),
        rule=rule,
        cases=cases,
        recorded=_resolve(path.parent, str(document.get("recorded") or "recorded")),
        critics={str(k): str(v) for k, v in critics.items()},
    )


def _rule(path: Path, raw: Any) -> HeldOutRule:
    if not isinstance(raw, dict) or raw.get("rule") != "sha256-mod":
        raise PopulationError(
            f"{path}: 'held_out' must declare the split rule, e.g. "
            '{"rule": "sha256-mod", "modulus": 4, "tuning": [0]}'
        )
    modulus, tuning = raw.get("modulus"), raw.get("tuning", [])
    if not isinstance(modulus, int) or isinstance(modulus, bool) or modulus < 1:
        raise PopulationError(f"{path}: held_out.modulus must be a whole number >= 1")
    if not isinstance(tuning, list) or not all(
        isinstance(r, int) and not isinstance(r, bool) and 0 <= r < modulus for r in tuning
    ):
        raise PopulationError(f"{path}: held_out.tuning must list residues in 0..{modulus - 1}")
    return HeldOutRule(modulus, tuple(sorted(set(tuning))))


_ID_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def _case(root: Path, index: int, raw: Any) -> Case:
    where = f"case {index}"
    if not isinstance(raw, dict):
        raise PopulationError(f"{where}: expected an object")
    case_id = raw.get("id")
    if not isinstance(case_id, str) or not case_id or not set(case_id) <= _ID_CHARS:
        raise PopulationError(f"{where}: 'id' must be a non-empty string of [A-Za-z0-9._-]")
    where = f"case {case_id!r}"
    label = raw.get("label")
    if label not in ("good", "defective"):
        raise PopulationError(f"{where}: 'label' must be 'good' or 'defective', not {label!r}")

    def file(key: str, required: bool = False) -> Path | None:
        value = raw.get(key)
        if value is None:
            if required:
                raise PopulationError(f"{where}: '{key}' is required")
            return None
        if not isinstance(value, str):
            raise PopulationError(f"{where}: '{key}' must be a path")
        resolved = _resolve(root, value)
        if not resolved.exists():
            raise PopulationError(f"{where}: {key} {value!r} does not exist")
        return resolved

    repo = file("repo", required=True)
    patch = file("patch", required=True)
    assert repo is not None and patch is not None
    if not repo.is_dir():
        raise PopulationError(f"{where}: repo {raw['repo']!r} is not a folder")
    obligations: Path | tuple[str, ...] = ()
    raw_obligations = raw.get("obligations")
    if isinstance(raw_obligations, list):
        if not all(isinstance(o, str) for o in raw_obligations):
            raise PopulationError(f"{where}: 'obligations' must be a file or a list of strings")
        obligations = tuple(raw_obligations)
    elif raw_obligations is not None:
        found = file("obligations")
        assert found is not None
        obligations = found
    truths = raw.get("ground_truth", [])
    if not isinstance(truths, list):
        raise PopulationError(f"{where}: 'ground_truth' must be a list")
    tests: list[GroundTruthTest] = []
    for number, item in enumerate(truths, 1):
        if isinstance(item, str):
            test_file = _resolve(root, item)
            if not test_file.is_file():
                raise PopulationError(f"{where}: ground_truth {item!r} does not exist")
            tests.append(GroundTruthTest(item, test_file.read_text(encoding="utf-8")))
        elif isinstance(item, dict) and isinstance(item.get("source"), str):
            tests.append(GroundTruthTest(f"inline {number}", item["source"]))
        else:
            raise PopulationError(f"{where}: ground_truth items are paths or {{'source': TEXT}}")
    if label == "defective" and not tests:
        raise PopulationError(f"{where}: a defective case needs its ground-truth test(s)")
    base = raw.get("base")
    if base is not None and not (isinstance(base, str) and (repo / ".git").exists()):
        raise PopulationError(f"{where}: 'base' (a revision) needs repo to be a git repository")
    kinds = raw.get("kinds", [])
    if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
        raise PopulationError(f"{where}: 'kinds' must be a list of procedure kinds")
    caught = raw.get("caught_by_existing_tests")
    return Case(
        id=case_id,
        repo=repo,
        patch=patch,
        label=label,
        spec=file("spec"),
        root_cause=file("root_cause"),
        obligations=obligations,
        ground_truth=tuple(tests),
        base=base,
        base_patch=file("base_patch"),
        summary=str(raw.get("summary") or ""),
        kinds=tuple(kinds),
        caught_by_existing_tests=caught if isinstance(caught, bool) else None,
    )


def _resolve(root: Path, value: str) -> Path:
    candidate = Path(value).expanduser()
    return (candidate if candidate.is_absolute() else root / candidate).resolve()


# =============================================================================================
# The critic of the b (and c) arms
# =============================================================================================


@dataclass(frozen=True, slots=True)
class CriticChoice:
    """Recorded outputs (``recorded:NAME``: a folder of ``<case id>.json``) or a live model."""

    kind: Literal["recorded", "model"]
    name: str  # the set's name, or the litellm model string
    folder: Path | None = None
    api_base: str | None = None

    @property
    def label(self) -> str:
        return f"recorded:{self.name}" if self.kind == "recorded" else f"model:{self.name}"

    def recording(self, case: Case, *, unblinded: bool = False) -> Path | None:
        if self.folder is None:
            return None
        path = self.folder / f"{case.id}{'.unblinded' if unblinded else ''}.json"
        return path if path.is_file() else None


def choose_critic(
    population: Population, critic: str | None, model: str | None, api_base: str | None
) -> CriticChoice:
    """``--critic recorded:NAME`` or ``--critic model`` (with ``--critic22-model``)."""
    model = model or os.environ.get("CRITIC22_MODEL") or None
    if critic is None:
        if model is None:
            raise PopulationError(
                "choose a critic: --critic recorded:NAME (a recorded set) or "
                "--critic22-model MODEL (a live model)"
            )
        critic = "model"
    if critic == "model":
        if model is None:
            raise PopulationError("--critic model needs --critic22-model MODEL")
        return CriticChoice("model", model, None, api_base)
    if critic.startswith("recorded:") and critic[len("recorded:") :]:
        name = critic[len("recorded:") :]
        folder = population.recorded / name
        if not folder.is_dir():
            known = sorted(p.name for p in population.recorded.glob("*") if p.is_dir())
            raise PopulationError(
                f"no recorded critic set {name!r} in {population.recorded} "
                f"(known: {', '.join(known) or 'none'})"
            )
        missing = [c.id for c in population.held_out() if not (folder / f"{c.id}.json").is_file()]
        if missing:
            raise PopulationError(
                f"recorded set {name!r} has no output for held-out case(s): {', '.join(missing)}"
            )
        return CriticChoice("recorded", name, folder, None)
    raise PopulationError(f"--critic must be recorded:NAME or model, not {critic!r}")


# =============================================================================================
# Runs (I/O): one unit = one case in one run kind; each one cached
# =============================================================================================


@dataclass(frozen=True, slots=True)
class RunOptions:
    reruns: int | None = None  # --critic22-reruns (None: the plugin's default)
    timeout: float | None = None  # --critic22-timeout
    engage: str = "auto"  # --critic22-engage of the critic arms
    critic_args: tuple[str, ...] = ()  # the model's options (--critic22-temperature=0, ...)
    run_timeout: float = 1800.0  # one whole plugin run

    def plugin_args(self) -> list[str]:
        args = []
        if self.reruns is not None:
            args.append(f"--critic22-reruns={self.reruns}")
        if self.timeout is not None:
            args.append(f"--critic22-timeout={self.timeout:g}")
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
    """The keyword arguments of :func:`pytest_critic22.api.review` for a review unit.

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


def run_unit(unit: Unit) -> dict[str, Any]:
    """Run one unit; return its record, cached (atomically) unless the run failed."""
    if _STOPPING:
        raise KeyboardInterrupt
    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="critic22-ab-"))
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
    if not record.get("error"):
        _write_atomic(unit.cache_file, record)
    return record


def _review_record(unit: Unit, repo: Path) -> dict[str, Any]:
    from pytest_critic22.api import review

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
    return record


def materialize(case: Case, dest: Path) -> Path:
    """The case's base as a git repository at ``dest`` (a copy: the original is only read)."""
    from pytest_critic22.gitio import commit_all, git, init_repo

    if (case.repo / ".git").exists():
        git(["clone", "-q", "--no-local", str(case.repo), str(dest)], case.repo.parent)
        git(["checkout", "-q", "--detach", case.base or "HEAD"], dest)
        return dest
    shutil.copytree(case.repo, dest, ignore=shutil.ignore_patterns(*_IGNORED))
    init_repo(dest, f"base of {case.id}")
    if case.base_patch is not None:
        git(["apply", "--whitespace=nowarn", str(case.base_patch)], dest)
        commit_all(dest, f"base patch of {case.id}")
    return dest


def run_ground_truth(case: Case, repo: Path, options: RunOptions) -> dict[str, Any]:
    """The hidden tests on the base and on the patched tree (a scratch copy, never reviewed).

    ``patched`` is "failed" when at least one hidden test fails there (the defect is real),
    "passed" when all pass, "error" when they cannot run, "none" without hidden tests.
    """
    from pytest_critic22.gitio import git
    from pytest_critic22.runner import detect_pythonpath, run_pytest

    if not case.ground_truth:
        return {"patched": "none", "base": "none", "tests": {}, "seconds": 0.0}
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
    from pytest_critic22.trees import trees_root

    with contextlib.suppress(OSError):
        shutil.rmtree(trees_root(repo), ignore_errors=True)
    shutil.rmtree(scratch, ignore_errors=True)


def _write_atomic(path: Path, record: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(record, fh, sort_keys=True)
    os.replace(tmp, path)


# -- cache keys --------------------------------------------------------------------------------


def _digest_update(h: Any, label: str, data: bytes) -> None:
    h.update(f"{label}\0{len(data)}\0".encode())
    h.update(data)


def _folder_digest(h: Any, folder: Path) -> None:
    if (folder / ".git").exists():
        from pytest_critic22.gitio import git

        head = git(["rev-parse", "HEAD^{tree}"], folder).stdout.strip()
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
    _folder_digest(h, case.repo)
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
    return h.hexdigest()


def plugin_digest() -> str:
    """The plugin's version and every source file of the package but this driver's."""
    import pytest_critic22

    package = Path(pytest_critic22.__file__).resolve().parent
    h = hashlib.sha256(pytest_critic22.__version__.encode())
    for path in sorted(package.rglob("*")):
        if path.is_file() and path.suffix in (".py", ".txt") and path.name != "ab.py":
            _digest_update(h, path.relative_to(package).as_posix(), path.read_bytes())
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
        if critic.kind == "recorded":
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
        if critic.kind == "recorded" and critic.recording(case, unblinded=True) is not None:
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


# -- the pool ----------------------------------------------------------------------------------

_STOPPING = False


def _worker_init() -> None:
    """Workers leave Ctrl-C to the driver, which stops them with SIGTERM."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop_worker)


def _stop_worker(signum: int, frame: Any) -> None:
    global _STOPPING
    _STOPPING = True
    raise KeyboardInterrupt


def _to_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


class Progress:
    """``cases done/total, runs done/total (cached), elapsed`` on one line of stderr."""

    def __init__(self, units: Sequence[Unit], stream: IO[str] | None) -> None:
        self.stream = stream
        self.start = time.monotonic()
        self.left: dict[str, int] = {}
        for unit in units:
            self.left[unit.case.id] = self.left.get(unit.case.id, 0) + 1
        self.cases = len(self.left)
        self.runs = len(units)
        self.done = 0
        self.cached = 0
        self.tty = bool(stream is not None and stream.isatty())

    def advance(self, unit: Unit, *, cached: bool) -> None:
        self.done += 1
        self.cached += int(cached)
        self.left[unit.case.id] -= 1
        if not cached or self.tty:
            self.show()

    @property
    def cases_done(self) -> int:
        return sum(1 for n in self.left.values() if n == 0)

    def line(self) -> str:
        seconds = int(time.monotonic() - self.start)
        return (
            f"critic22 ab: cases {self.cases_done}/{self.cases} done, runs {self.done}/"
            f"{self.runs} ({self.cached} from the cache), {seconds // 60:02d}:{seconds % 60:02d} "
            "elapsed"
        )

    def show(self) -> None:
        if self.stream is None:
            return
        if self.tty:
            self.stream.write("\r" + self.line())
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.stream is not None and self.tty:
            self.stream.write("\n")
            self.stream.flush()


def execute(
    units: Sequence[Unit],
    *,
    jobs: int,
    fresh: bool,
    progress: Progress,
    runner: Callable[[Unit], dict[str, Any]] = run_unit,
) -> dict[tuple[str, str], dict[str, Any]]:
    """Every unit's record: from the cache unless ``fresh``, else run (in a pool of ``jobs``).

    Raises KeyboardInterrupt when interrupted; the units finished by then stay cached.
    """
    records: dict[tuple[str, str], dict[str, Any]] = {}
    todo: list[Unit] = []
    for unit in units:
        record = None if fresh else cached_record(unit)
        if record is None:
            todo.append(unit)
        else:
            record["cached"] = True
            records[(unit.case.id, unit.kind)] = record
            progress.advance(unit, cached=True)
    if progress.cached and not progress.tty:
        progress.show()
    if not todo:
        return records
    try:
        previous: Any = signal.signal(signal.SIGTERM, _to_interrupt)
    except ValueError:  # not the main thread: leave SIGTERM alone
        previous = None
    try:
        if jobs <= 1:
            for unit in todo:
                record = runner(unit)
                record["cached"] = False
                records[(unit.case.id, unit.kind)] = record
                progress.advance(unit, cached=False)
            return records
        _run_pool(todo, jobs, runner, records, progress)
        return records
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _run_pool(
    todo: Sequence[Unit],
    jobs: int,
    runner: Callable[[Unit], dict[str, Any]],
    records: dict[tuple[str, str], dict[str, Any]],
    progress: Progress,
) -> None:
    # spawn: no fork of a process that may hold threads (a test's server, the executor's own)
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_worker_init)
    pending: dict[Future[dict[str, Any]], Unit] = {}
    try:
        pending = {pool.submit(runner, unit): unit for unit in todo}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                unit = pending.pop(future)
                record = future.result()
                record["cached"] = False
                records[(unit.case.id, unit.kind)] = record
                progress.advance(unit, cached=False)
    except BaseException:
        for future in pending:
            future.cancel()
        workers = getattr(pool, "_processes", None) or {}
        for pid in list(workers):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


# =============================================================================================
# From records to per-arm outcomes (pure)
# =============================================================================================


@dataclass(frozen=True, slots=True)
class Claim:
    """A blocking finding of the critic (as parsed: downgraded ones are not blocking)."""

    status: str  # verified | refuted | inconclusive | not run
    confidence: float


@dataclass(frozen=True, slots=True)
class ReviewSummary:
    """What the metrics need from one plugin run."""

    verdict: Literal["reject", "proceed"]
    claims: tuple[Claim, ...] = ()
    preservation: tuple[str, ...] = ()  # the outcome of each preservation group
    calls: int = 0  # critic calls (a replayed recording is one)
    tokens: int = 0
    seconds: float = 0.0

    @property
    def validator_rejects(self) -> bool:
        return "verified" in self.preservation


@dataclass(frozen=True, slots=True)
class CaseResult:
    case_id: str
    label: Label
    ground_truth: str  # failed | passed | error | none (of the hidden tests on the patched tree)
    validator: ReviewSummary
    critic: ReviewSummary
    unblinded: ReviewSummary | None = None

    @property
    def defect_confirmed(self) -> bool:
        return self.ground_truth == "failed"


@dataclass(frozen=True, slots=True)
class ArmCase:
    """One case as one arm sees it."""

    rejected: bool
    emitted: int  # blocking claims of the critic
    killed: int  # ... refuted by their own falsification
    executed: int  # blocking items run (claims executed and preservation groups)
    inconclusive: int  # ... with an inconclusive outcome
    calls: int
    tokens: int
    seconds: float | None  # None: the arm has no run of its own


def summarize(record: Mapping[str, Any]) -> ReviewSummary | None:
    """A cached review record -> ReviewSummary (None when the run gave no report)."""
    report = record.get("report")
    if not isinstance(report, dict):
        return None
    verdict = report.get("disposition", {}).get("verdict")
    if verdict not in ("reject", "proceed"):
        return None
    claims = []
    for wrapped in report.get("findings", []):
        finding = wrapped.get("finding", {})
        if finding.get("severity") != "blocking":
            continue
        claims.append(
            Claim(
                status=str(wrapped.get("outcome", {}).get("status", "not run")),
                confidence=float(finding.get("confidence", 0.0)),
            )
        )
    critic = report.get("critic", {})
    calls = 0
    if critic.get("engaged"):
        calls = 1 if critic.get("source") == "replay" else int(critic.get("calls", 0) or 0)
    tokens = int((critic.get("tokens") or {}).get("total_tokens", 0) or 0)
    return ReviewSummary(
        verdict=verdict,
        claims=tuple(claims),
        preservation=tuple(
            str(p.get("outcome", "not run")) for p in report.get("preservation", [])
        ),
        calls=calls,
        tokens=tokens,
        seconds=float(record.get("seconds", 0.0) or 0.0),
    )


def arm_case(arm: str, result: CaseResult) -> ArmCase | None:
    """How arm ``arm`` sees one case (None: the arm was not run for it)."""
    if arm == "a":
        review = result.validator
        claims: tuple[Claim, ...] = ()
        rejected = review.verdict == "reject"
    elif arm in ("b", "d", "e"):
        review = result.critic
        claims = review.claims
        if arm == "b":
            rejected = review.verdict == "reject"
        elif arm == "d":
            rejected = bool(claims) or review.validator_rejects
        else:
            rejected = review.validator_rejects or any(
                c.confidence >= CONFIDENCE_THRESHOLD for c in claims
            )
    elif arm == "c":
        if result.unblinded is None:
            return None
        review = result.unblinded
        claims = review.claims
        rejected = review.verdict == "reject"
    else:
        raise ValueError(f"unknown arm {arm!r}")
    run_claims = () if arm == "d" else claims
    executed = [c.status for c in run_claims if c.status != "not run"] + [
        p for p in review.preservation if p != "not run"
    ]
    return ArmCase(
        rejected=rejected,
        emitted=len(claims),
        killed=sum(1 for c in claims if c.status == "refuted"),
        executed=len(executed),
        inconclusive=sum(1 for s in executed if s == "inconclusive"),
        calls=review.calls,
        tokens=review.tokens,
        seconds=review.seconds if arm in ("a", "b", "c") else None,
    )


# =============================================================================================
# Statistics (pure)
# =============================================================================================


@dataclass(frozen=True, slots=True)
class Rate:
    k: int
    n: int
    low: float
    high: float

    @property
    def value(self) -> float | None:
        return self.k / self.n if self.n else None

    def to_dict(self) -> dict[str, Any]:
        return {"k": self.k, "n": self.n, "rate": self.value, "ci95": [self.low, self.high]}


@dataclass(frozen=True, slots=True)
class MeanInterval:
    n: int
    total: float
    mean: float | None
    low: float | None  # None: fewer than two values, no interval
    high: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "total": self.total, "mean": self.mean, "ci95": [self.low, self.high]}


def wilson(k: int, n: int, z: float = Z95) -> Rate:
    """The Wilson score interval of k successes in n trials (n = 0: the whole of [0, 1])."""
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got {k}/{n}")
    if n == 0:
        return Rate(0, 0, 0.0, 1.0)
    p = k / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return Rate(k, n, low, high)


def _betacf(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((a - 1.0 + m2) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1.0 + m2)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with df degrees of freedom (bisection on the CDF)."""
    if not 0.0 < p < 1.0 or df <= 0:
        raise ValueError("need 0 < p < 1 and df > 0")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        high *= 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if t_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0


def mean_interval(values: Sequence[float]) -> MeanInterval:
    """The mean with its 95% Student-t interval (no interval for fewer than two values)."""
    n = len(values)
    total = float(sum(values))
    if n == 0:
        return MeanInterval(0, 0.0, None, None, None)
    mean = total / n
    if n < 2:
        return MeanInterval(n, total, mean, None, None)
    half = t_quantile(0.975, n - 1) * statistics.stdev(values) / math.sqrt(n)
    return MeanInterval(n, total, mean, mean - half, mean + half)


def mcnemar(first_only: int, second_only: int) -> tuple[float, float, float]:
    """Exact McNemar test on the discordant pairs.

    Returns (two-sided p, one-sided p that the first is more often positive, one-sided p that
    the second is). Under the null each discordant case goes either way with probability 1/2.
    """
    n = first_only + second_only
    if n == 0:
        return 1.0, 1.0, 1.0
    scale = 2.0**n

    def at_least(k: int) -> float:
        return sum(math.comb(n, i) for i in range(k, n + 1)) / scale

    two = min(
        1.0, 2.0 * sum(math.comb(n, i) for i in range(min(first_only, second_only) + 1)) / scale
    )
    return two, at_least(first_only), at_least(second_only)


@dataclass(frozen=True, slots=True)
class Paired:
    """Two arms on the same cases: how often only one of them was positive."""

    measure: str  # "recall" (positive = caught) or "false rejection" (positive = rejected)
    first: str
    second: str
    n: int  # the cases compared
    first_only: int
    second_only: int
    p_two_sided: float
    p_first_more: float  # one-sided
    p_second_more: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "measure": self.measure,
            "arms": [self.first, self.second],
            "n": self.n,
            "first_only": self.first_only,
            "second_only": self.second_only,
            "p_two_sided": self.p_two_sided,
            "p_first_more": self.p_first_more,
            "p_second_more": self.p_second_more,
            "test": "exact McNemar (binomial on discordant cases)",
        }


def paired(measure: str, first: str, second: str, outcomes: Sequence[tuple[bool, bool]]) -> Paired:
    first_only = sum(1 for x, y in outcomes if x and not y)
    second_only = sum(1 for x, y in outcomes if y and not x)
    two, first_more, second_more = mcnemar(first_only, second_only)
    return Paired(
        measure, first, second, len(outcomes), first_only, second_only, two, first_more, second_more
    )


@dataclass(frozen=True, slots=True)
class ArmMetrics:
    arm: str
    available: bool
    note: str = ""  # why not available
    recall: Rate = field(default_factory=lambda: wilson(0, 0))
    agree: int = 0  # caught defective cases whose hidden test fails on patched
    over_veto: Rate = field(default_factory=lambda: wilson(0, 0))
    false_rejection: Rate = field(default_factory=lambda: wilson(0, 0))
    inconclusive: Rate = field(default_factory=lambda: wilson(0, 0))
    calls: MeanInterval = field(default_factory=lambda: mean_interval(()))
    tokens: MeanInterval = field(default_factory=lambda: mean_interval(()))
    wall: MeanInterval | None = None  # None: no runs of its own (d and e are b's runs)

    def to_dict(self) -> dict[str, Any]:
        if not self.available:
            return {"arm": self.arm, "available": False, "note": self.note}
        return {
            "arm": self.arm,
            "available": True,
            "recall": {
                **self.recall.to_dict(),
                "agree_with_ground_truth": wilson(self.agree, self.recall.k).to_dict(),
            },
            "over_veto": self.over_veto.to_dict(),
            "false_rejection": self.false_rejection.to_dict(),
            "inconclusive": self.inconclusive.to_dict(),
            "critic_calls": self.calls.to_dict(),
            "tokens": self.tokens.to_dict(),
            "wall_seconds": self.wall.to_dict() if self.wall is not None else "b's runs",
        }


def arm_metrics(arm: str, results: Sequence[CaseResult], note: str = "") -> ArmMetrics:
    """The metrics of one arm over the given (held-out) cases."""
    seen = [(r, arm_case(arm, r)) for r in results]
    if not results or any(view is None for _, view in seen):
        missing = sum(1 for _, view in seen if view is None)
        return ArmMetrics(arm, False, note or f"not run for {missing} of {len(results)} case(s)")
    views = [(r, v) for r, v in seen if v is not None]
    defective = [(r, v) for r, v in views if r.label == "defective"]
    good = [v for r, v in views if r.label == "good"]
    caught = [(r, v) for r, v in defective if v.rejected]
    wall = [v.seconds for _, v in views if v.seconds is not None]
    return ArmMetrics(
        arm=arm,
        available=True,
        recall=wilson(len(caught), len(defective)),
        agree=sum(1 for r, _ in caught if r.defect_confirmed),
        over_veto=wilson(sum(v.killed for _, v in views), sum(v.emitted for _, v in views)),
        false_rejection=wilson(sum(1 for v in good if v.rejected), len(good)),
        inconclusive=wilson(
            sum(v.inconclusive for _, v in views), sum(v.executed for _, v in views)
        ),
        calls=mean_interval([float(v.calls) for _, v in views]),
        tokens=mean_interval([float(v.tokens) for _, v in views]),
        wall=mean_interval(wall) if len(wall) == len(views) else None,
    )


def compare(first: str, second: str, results: Sequence[CaseResult]) -> tuple[Paired, Paired]:
    """(recall, false rejection) of two arms, paired on the same cases."""
    both = [(r, arm_case(first, r), arm_case(second, r)) for r in results]
    pairs = [(r, x, y) for r, x, y in both if x is not None and y is not None]
    recall = paired(
        "recall",
        first,
        second,
        [(x.rejected, y.rejected) for r, x, y in pairs if r.label == "defective"],
    )
    false_rejection = paired(
        "false rejection",
        first,
        second,
        [(x.rejected, y.rejected) for r, x, y in pairs if r.label == "good"],
    )
    return recall, false_rejection


@dataclass(frozen=True, slots=True)
class Clause:
    text: str
    holds: bool
    detail: str


@dataclass(frozen=True, slots=True)
class Decision:
    keep: bool
    clauses: tuple[Clause, ...]

    @property
    def headline(self) -> str:
        if self.keep:
            return "keep the critic"
        return "remove the critic — an empty L column"

    def to_dict(self) -> dict[str, Any]:
        return {
            "keep": self.keep,
            "decision": "keep" if self.keep else "remove",
            "headline": self.headline,
            "clauses": [
                {"text": c.text, "holds": c.holds, "detail": c.detail} for c in self.clauses
            ],
            "alpha": ALPHA,
        }


def _rate_text(rate: Rate) -> str:
    return f"{rate.k}/{rate.n}"


def _p(value: float) -> str:
    return f"{value:.2g}" if value < 0.01 else f"{value:.3f}".rstrip("0").rstrip(".")


def decide(
    on: ArmMetrics,
    off: ArmMetrics,
    recall: Paired,
    false_rejection: Paired,
    alpha: float = ALPHA,
) -> Decision:
    """Spec §9.6. ``recall`` and ``false_rejection`` pair ``on`` (first) with ``off`` (second)."""
    higher = (
        on.recall.value is not None
        and off.recall.value is not None
        and on.recall.value > off.recall.value
    )
    c1 = Clause(
        "verified-defect recall strictly higher with the critic",
        higher,
        f"{_rate_text(on.recall)} with, {_rate_text(off.recall)} without",
    )
    on_fr, off_fr = on.false_rejection.value or 0.0, off.false_rejection.value or 0.0
    c2 = Clause(
        "over-veto not worse than the validator alone",
        on_fr <= off_fr,
        "the validator alone makes no claims (over-veto "
        f"{_rate_text(off.over_veto)}), so what counts is the over-veto that reaches a verdict: "
        f"good patches rejected {_rate_text(on.false_rejection)} with the critic, "
        f"{_rate_text(off.false_rejection)} without; the critic's claims killed by their own "
        f"falsification: {_rate_text(on.over_veto)}",
    )
    degraded = []
    if recall.p_first_more < alpha:
        degraded.append(f"recall (one-sided p = {_p(recall.p_first_more)})")
    if false_rejection.p_second_more < alpha:
        degraded.append(f"false rejection (one-sided p = {_p(false_rejection.p_second_more)})")
    c3 = Clause(
        "removing the critic degrades at least one measure beyond noise",
        bool(degraded),
        ", ".join(degraded)
        if degraded
        else (
            f"no: caught only with the critic {recall.first_only}, only without "
            f"{recall.second_only} (one-sided p = {_p(recall.p_first_more)}); good patches "
            f"rejected only without the critic {false_rejection.second_only} "
            f"(one-sided p = {_p(false_rejection.p_second_more)}); alpha = {alpha:g}"
        ),
    )
    return Decision(c1.holds and c2.holds and c3.holds, (c1, c2, c3))


@dataclass(frozen=True, slots=True)
class Ablation:
    mechanism: str
    arm: str
    available: bool
    recall: Paired | None = None  # the ablated arm first, b second
    false_rejection: Paired | None = None
    degraded: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": self.mechanism,
            "arm": self.arm,
            "available": self.available,
            "recall": self.recall.to_dict() if self.recall else None,
            "false_rejection": self.false_rejection.to_dict() if self.false_rejection else None,
            "removal_degrades": list(self.degraded),
        }


def ablation(arm: str, results: Sequence[CaseResult], available: bool) -> Ablation:
    """Spec §9.5: the mechanism of ``arm`` removed, against b, on the same cases."""
    mechanism = MECHANISMS[arm]
    if not available:
        return Ablation(mechanism, arm, False)
    recall, false_rejection = compare(arm, "b", results)
    degraded = []
    if recall.p_second_more < ALPHA:
        degraded.append(f"recall (one-sided p = {_p(recall.p_second_more)})")
    if false_rejection.p_first_more < ALPHA:
        degraded.append(f"false rejection (one-sided p = {_p(false_rejection.p_first_more)})")
    return Ablation(mechanism, arm, True, recall, false_rejection, tuple(degraded))


# =============================================================================================
# The report (pure) and its rendering
# =============================================================================================


@dataclass(frozen=True, slots=True)
class AbReport:
    population: str
    critic: str
    rule: str
    held_out: int
    tuning: int
    results: tuple[CaseResult, ...]
    arms: Mapping[str, ArmMetrics]
    recall: Paired
    false_rejection: Paired
    wall_difference: MeanInterval
    decision: Decision
    ablations: tuple[Ablation, ...]
    notes: tuple[str, ...] = ()
    excluded: Mapping[str, str] = field(default_factory=dict)  # case id -> why

    def to_dict(self) -> dict[str, Any]:
        defective = sum(1 for r in self.results if r.label == "defective")
        return {
            "schema": 1,
            "population": self.population,
            "critic": self.critic,
            "held_out": {
                "rule": self.rule,
                "cases": self.held_out,
                "measured": len(self.results),
                "defective": defective,
                "good": len(self.results) - defective,
                "tuning": self.tuning,
            },
            "confidence_threshold": CONFIDENCE_THRESHOLD,
            "arms": {name: metrics.to_dict() for name, metrics in self.arms.items()},
            "paired": {
                "recall": self.recall.to_dict(),
                "false_rejection": self.false_rejection.to_dict(),
                "wall_seconds_difference": self.wall_difference.to_dict(),
            },
            "decision": self.decision.to_dict(),
            "ablations": [a.to_dict() for a in self.ablations],
            "cases": [_case_dict(r, self.arms) for r in self.results],
            "excluded": dict(self.excluded),
            "notes": list(self.notes),
        }


def _case_dict(result: CaseResult, arms: Mapping[str, ArmMetrics]) -> dict[str, Any]:
    views = {arm: arm_case(arm, result) for arm in ARMS if arms[arm].available}
    return {
        "id": result.case_id,
        "label": result.label,
        "ground_truth_on_patched": result.ground_truth,
        "rejected": {arm: view.rejected for arm, view in views.items() if view is not None},
    }


def build_report(
    *,
    population: str,
    critic: str,
    rule: str,
    held_out: int,
    tuning: int,
    results: Sequence[CaseResult],
    c_note: str = "",
    notes: Sequence[str] = (),
    excluded: Mapping[str, str] | None = None,
) -> AbReport:
    arms: dict[str, ArmMetrics] = {arm: arm_metrics(arm, results) for arm in ARMS}
    if c_note:
        arms["c"] = ArmMetrics("c", False, c_note)
    recall, false_rejection = compare("b", "a", results)
    differences = [r.critic.seconds - r.validator.seconds for r in results]
    return AbReport(
        population=population,
        critic=critic,
        rule=rule,
        held_out=held_out,
        tuning=tuning,
        results=tuple(results),
        arms=arms,
        recall=recall,
        false_rejection=false_rejection,
        wall_difference=mean_interval(differences),
        decision=decide(arms["b"], arms["a"], recall, false_rejection),
        ablations=tuple(ablation(arm, results, arms[arm].available) for arm in ("c", "d", "e")),
        notes=tuple(notes),
        excluded=dict(excluded or {}),
    )


def _fraction(value: float) -> str:
    text = f"{value:.2f}"
    return text[1:] if text.startswith("0.") else text


def _rate_cell(rate: Rate) -> str:
    if rate.n == 0:
        return "0/0 —"
    return (
        f"{rate.k}/{rate.n} {_fraction(rate.k / rate.n)} "
        f"[{_fraction(rate.low)},{_fraction(rate.high)}]"
    )


def _mean_cell(mean: MeanInterval | None, digits: int = 2) -> str:
    if mean is None:
        return "(b's runs)"
    if mean.mean is None:
        return "—"
    if mean.low is None or mean.high is None:
        return f"{mean.mean:.{digits}f}"
    return f"{mean.mean:.{digits}f} [{mean.low:.{digits}f},{mean.high:.{digits}f}]"


def render(report: AbReport) -> str:
    """The printed report: one table (recall and over-veto side by side), tests, decision."""
    results = report.results
    defective = [r for r in results if r.label == "defective"]
    good = [r for r in results if r.label == "good"]
    lines = [
        f"critic22 ab — population {report.population}, critic {report.critic}",
        f"held-out: {report.held_out} of {report.held_out + report.tuning} cases "
        f"({report.tuning} for tuning; {report.rule}); measured {len(results)}: "
        f"{len(defective)} defective, {len(good)} good",
        "ground truth (hidden tests on the patched tree): "
        f"{sum(1 for r in defective if r.ground_truth == 'failed')}/{len(defective)} defective "
        "cases fail them, "
        f"{sum(1 for r in good if r.ground_truth in ('passed', 'none'))}/{len(good)} good "
        "cases pass them",
        "",
    ]
    width, cell_width = 28, 23
    columns = [report.arms[arm] for arm in ARMS]
    header = " " * width + "".join(f"{ARM_TITLES[m.arm]:<{cell_width}}" for m in columns)
    lines.append(header.rstrip())

    def row(title: str, cell: Callable[[ArmMetrics], str]) -> None:
        cells = "".join(f"{(cell(m) if m.available else 'n/a'):<{cell_width}}" for m in columns)
        lines.append((f"{title:<{width}}" + cells).rstrip())

    row("verified-defect recall", lambda m: _rate_cell(m.recall))
    row("  agree with ground truth", lambda m: f"{m.agree}/{m.recall.k}")
    row("over-veto (killed/emitted)", lambda m: _rate_cell(m.over_veto))
    row("false rejection (good)", lambda m: _rate_cell(m.false_rejection))
    row("inconclusive (of executed)", lambda m: _rate_cell(m.inconclusive))
    row("critic calls / case", lambda m: _mean_cell(m.calls))
    row("tokens / case", lambda m: _mean_cell(m.tokens, 0))
    row("wall s / case", lambda m: _mean_cell(m.wall, 1))
    lines.append("")
    for metrics in columns:
        if not metrics.available:
            lines.append(f"{ARM_TITLES[metrics.arm]}: n/a — {metrics.note}")
    lines += [
        "rates: k/n rate [95% Wilson interval]; per case: mean [95% t interval]",
        "a = --critic22-engage=never (preservation items only); b = the plugin with the critic; "
        "c = b, the critic shown the generator's rationale;",
        "d = b's findings as verdicts, unexecuted; "
        f"e = b's findings with confidence >= {CONFIDENCE_THRESHOLD:g} as verdicts "
        "(d and e keep the validator's items)",
        "",
        "paired, b (critic on) vs a (critic off), "
        + _count(report.recall.n + report.false_rejection.n)
        + " — exact McNemar test on the discordant cases:",
        f"  recall           caught only with the critic {report.recall.first_only}, only "
        f"without {report.recall.second_only}: p = {_p(report.recall.p_two_sided)} (two-sided), "
        f"{_p(report.recall.p_first_more)} (one-sided)",
        f"  false rejection  good patches rejected only with the critic "
        f"{report.false_rejection.first_only}, only without "
        f"{report.false_rejection.second_only}: p = {_p(report.false_rejection.p_two_sided)} "
        "(two-sided)",
        f"  wall s / case    {_signed(report.wall_difference)} (mean paired difference, 95% t "
        "interval)",
        "",
        "decision (spec §9.6): "
        + ("KEEP the critic" if report.decision.keep else "REMOVE the critic — an empty L column"),
    ]
    for clause in report.decision.clauses:
        lines.append(f"  [{'yes' if clause.holds else 'no '}] {clause.text}: {clause.detail}")
    lines.append("ablations (spec §9.5), each against b on the same cases:")
    for item in report.ablations:
        lines.append("  " + _ablation_line(item, report.arms))
    for note in report.notes:
        lines.append(f"note: {note}")
    for case_id, why in report.excluded.items():
        lines.append(f"excluded: {case_id}: {why}")
    return "\n".join(lines) + "\n"


def _count(n: int) -> str:
    return f"{n} case{'s' if n != 1 else ''}"


def _signed(mean: MeanInterval) -> str:
    if mean.mean is None:
        return "—"
    if mean.low is None or mean.high is None:
        return f"{mean.mean:+.2f}"
    return f"{mean.mean:+.2f} [{mean.low:+.2f},{mean.high:+.2f}]"


def _ablation_line(item: Ablation, arms: Mapping[str, ArmMetrics]) -> str:
    title = f"{item.mechanism} ({item.arm}):"
    if not item.available or item.recall is None or item.false_rejection is None:
        return f"{title:<15} not measured — {arms[item.arm].note}"
    m, b = arms[item.arm], arms["b"]
    text = (
        f"{title:<15} recall {_rate_text(b.recall)} -> {_rate_text(m.recall)}, false rejection "
        f"{_rate_text(b.false_rejection)} -> {_rate_text(m.false_rejection)}, over-veto "
        f"{_rate_text(b.over_veto)} -> {_rate_text(m.over_veto)}"
    )
    if item.degraded:
        return text + f"; removal degrades {', '.join(item.degraded)}: keep {item.mechanism}"
    return (
        text + f"; removal degrades nothing beyond noise here (recall p = "
        f"{_p(item.recall.p_second_more)}, false rejection p = "
        f"{_p(item.false_rejection.p_first_more)})"
    )


# =============================================================================================
# The driver
# =============================================================================================


@dataclass(frozen=True, slots=True)
class AbRun:
    report: AbReport
    records: Mapping[tuple[str, str], Mapping[str, Any]]
    errors: Mapping[str, str]  # case id -> why it is excluded
    reused: int  # runs taken from the cache
    ran: int


def _case_result(
    case: Case, records: Mapping[tuple[str, str], Mapping[str, Any]]
) -> tuple[CaseResult | None, str]:
    validator = summarize(records.get((case.id, "validator"), {}))
    critic = summarize(records.get((case.id, "critic"), {}))
    for kind, summary in (("validator", validator), ("critic", critic)):
        if summary is None:
            record = records.get((case.id, kind), {})
            return None, f"the {kind} run gave no report: {record.get('error') or 'unknown'}"
    assert validator is not None and critic is not None
    unblinded = None
    if (case.id, "unblinded") in records:
        unblinded = summarize(records[(case.id, "unblinded")])
        if unblinded is None:
            record = records[(case.id, "unblinded")]
            return None, f"the unblinded run gave no report: {record.get('error') or 'unknown'}"
    truth = records.get((case.id, "ground-truth"), {})
    ground = str(truth.get("patched") or ("error" if truth.get("error") else "none"))
    return CaseResult(case.id, case.label, ground, validator, critic, unblinded), ""


def run_population(
    population: Population,
    critic: CriticChoice,
    *,
    cache_dir: Path,
    jobs: int = 1,
    fresh: bool = False,
    options: RunOptions = RunOptions(),
    progress: IO[str] | None = None,
    cases: Sequence[Case] | None = None,
) -> AbRun:
    """Run (or read from the cache) every held-out case in every arm; build the report."""
    held_out = tuple(cases) if cases is not None else population.held_out()
    units = plan_units(held_out, critic, options, cache_dir)
    meter = Progress(units, progress)
    try:
        records = execute(units, jobs=jobs, fresh=fresh, progress=meter)
    finally:
        meter.finish()
    results: list[CaseResult] = []
    errors: dict[str, str] = {}
    for case in held_out:
        result, why = _case_result(case, records)
        if result is None:
            errors[case.id] = why
        else:
            results.append(result)
    notes = []
    if critic.kind == "model":
        c_note = (
            "not available with a live model yet: the plugin strips the generator's rationale "
            "and confidence from every request (invariant 6) and has no switch to let them "
            "through"
        )
    else:
        have = sum(1 for r in results if r.unblinded is not None)
        c_note = (
            ""
            if have == len(results) and results
            else f"no unblinded recordings ({have} of {len(results)} held-out cases have "
            f"<case>.unblinded.json in {critic.folder})"
        )
        if critic.kind == "recorded":
            notes.append(
                "recorded critic: each replayed output counts as one critic call with no tokens"
            )
    for result in results:
        if result.label == "defective" and result.ground_truth != "failed":
            notes.append(
                f"label check: {result.case_id} is labelled defective but its hidden tests "
                f"{result.ground_truth} on the patched tree"
            )
        if result.label == "good" and result.ground_truth not in ("passed", "none"):
            notes.append(
                f"label check: {result.case_id} is labelled good but its hidden tests "
                f"{result.ground_truth} on the patched tree"
            )
    report = build_report(
        population=_shown(population.path),
        critic=critic.label,
        rule=population.rule.describe(),
        held_out=len(held_out),
        tuning=len(population.cases) - len(held_out),
        results=results,
        c_note=c_note,
        notes=notes,
        excluded=errors,
    )
    reused = sum(1 for r in records.values() if r.get("cached"))
    return AbRun(report, records, errors, reused, len(records) - reused)


def _shown(path: Path) -> str:
    with contextlib.suppress(ValueError):
        return str(path.relative_to(Path.cwd()))
    return str(path)


def default_cache() -> Path:
    from pytest_critic22.ledger import STATE_DIR, ensure_state_dir

    return ensure_state_dir(Path.cwd() / STATE_DIR) / "ab-cache"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="critic22 ab",
        description="Critic-on vs critic-off on a labelled population of patches (spec §9): "
        "recall and over-veto together, ablations, and the keep-or-remove rule.",
    )
    parser.add_argument("population", type=Path, metavar="POPULATION", help="population JSON")
    parser.add_argument(
        "--critic",
        metavar="recorded:NAME|model",
        help="the critic of the critic arms: a recorded set, or the live model of "
        "--critic22-model (the default when that is given)",
    )
    parser.add_argument("--critic22-model", metavar="MODEL", help="litellm model string")
    parser.add_argument("--critic22-api-base", metavar="URL", help="the provider's base URL")
    parser.add_argument(
        "--critic22-engage",
        choices=("auto", "always"),
        default="auto",
        help="--critic22-engage of the critic arms (default auto, as the plugin)",
    )
    parser.add_argument(
        "--critic22-reruns", type=int, metavar="N", help="passed to every plugin run"
    )
    parser.add_argument(
        "--critic22-timeout", type=float, metavar="SECONDS", help="passed to every plugin run"
    )
    for option, kind, what in (
        ("--critic22-temperature", float, "T"),
        ("--critic22-max-tokens", int, "N"),
        ("--critic22-critic-timeout", float, "SECONDS"),
        ("--critic22-retries", int, "N"),
    ):
        parser.add_argument(option, type=kind, metavar=what, help="passed to the model's runs")
    parser.add_argument("--critic22-fresh", action="store_true", help="passed to the model's runs")
    parser.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="runs in parallel (default: the number of CPUs)",
    )
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the report as JSON")
    parser.add_argument(
        "--cache",
        type=Path,
        metavar="DIR",
        help="where finished runs are kept (default .critic22/ab-cache under the current folder)",
    )
    parser.add_argument("--fresh", action="store_true", help="ignore the cache; rerun everything")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``critic22 ab POPULATION ...``: 0 done, 1 done but some runs failed, 2 bad input,
    130 interrupted (what finished is cached: run the same command again to resume)."""
    args = _parser().parse_args(argv)
    try:
        population = load_population(args.population)
        critic = choose_critic(population, args.critic, args.critic22_model, args.critic22_api_base)
    except PopulationError as exc:
        print(f"critic22 ab: error: {exc}", file=sys.stderr)
        return 2
    if not population.held_out():
        print("critic22 ab: error: the rule leaves no held-out case", file=sys.stderr)
        return 2
    cache = args.cache if args.cache is not None else default_cache()
    critic_args = [
        f"--critic22-{name.replace('_', '-')}={value:g}"
        if isinstance(value, float)
        else f"--critic22-{name.replace('_', '-')}={value}"
        for name in ("temperature", "max_tokens", "critic_timeout", "retries")
        if (value := getattr(args, f"critic22_{name}")) is not None
    ]
    if args.critic22_fresh:
        critic_args.append("--critic22-fresh")
    options = RunOptions(
        reruns=args.critic22_reruns,
        timeout=args.critic22_timeout,
        engage=args.critic22_engage,
        critic_args=tuple(critic_args),
    )
    try:
        run = run_population(
            population,
            critic,
            cache_dir=cache,
            jobs=max(1, args.jobs),
            fresh=args.fresh,
            options=options,
            progress=sys.stderr,
        )
    except BrokenProcessPool as exc:
        print(
            f"\ncritic22 ab: a worker process died ({exc}); finished runs are cached in "
            f"{cache}: run the same command again to resume",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        done = sum(1 for _ in cache.rglob("*.json")) if cache.is_dir() else 0
        print(
            f"\ncritic22 ab: interrupted; {done} finished run(s) are cached in {cache}: run the "
            "same command again to resume",
            file=sys.stderr,
        )
        return 130
    print(
        f"critic22 ab: {run.reused} run(s) reused from the cache, {run.ran} run now ({cache})",
        file=sys.stderr,
    )
    sys.stdout.write(render(run.report))
    if args.json is not None:
        document = run.report.to_dict()
        document["runs"] = {
            f"{case_id}/{kind}": {
                "cached": bool(record.get("cached")),
                "key": record.get("key"),
                "seconds": record.get("seconds"),
                "error": record.get("error") or "",
                "command": record.get("command"),
            }
            for (case_id, kind), record in sorted(run.records.items())
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    return 1 if run.errors else 0


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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
