"""The population of ``critic22 ab``: its cases, the population file, and the critic choice.

A population file (JSON, paths relative to it) lists labelled cases and declares the rule that
splits them into held-out and tuning cases; :func:`load_population` reads and checks it.
:func:`choose_critic` picks the critic of the b (and c) arms: a recorded set of the population,
or a live model.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

Label = Literal["good", "defective"]


class PopulationError(ValueError):
    """The population file is unusable; the message says where and why."""


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
    # A mined case's test file: written at ``path`` in the tree (replacing the base's
    # version), and only ``nodes`` run (none: a support file, a conftest).
    path: str | None = None
    nodes: tuple[str, ...] = ()


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
    # Mined cases: the base's tests that pass there (node ids), run on the patched tree by
    # the ground-truth run with the project's test command's arguments.
    existing_tests: tuple[str, ...] = ()
    test_args: tuple[str, ...] = ()


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
        elif isinstance(item, dict) and isinstance(item.get("rev"), str):
            tests.append(_revision_test(where, repo, item))
        else:
            raise PopulationError(
                f"{where}: ground_truth items are paths, {{'source': TEXT}} or "
                "{'rev': COMMIT, 'path': FILE, 'nodes': [NODEID, ...]}"
            )
    if label == "defective" and not tests:
        raise PopulationError(f"{where}: a defective case needs its ground-truth test(s)")
    base = raw.get("base")
    if base is not None and not (isinstance(base, str) and (repo / ".git").exists()):
        raise PopulationError(f"{where}: 'base' (a revision) needs repo to be a git repository")
    if isinstance(base, str) and (not base or base.startswith("-")):
        raise PopulationError(f"{where}: 'base' {base!r} is not a revision")
    kinds = raw.get("kinds", [])
    if not isinstance(kinds, list) or not all(isinstance(k, str) for k in kinds):
        raise PopulationError(f"{where}: 'kinds' must be a list of procedure kinds")
    caught = raw.get("caught_by_existing_tests")
    existing, test_args = raw.get("existing_tests", []), raw.get("test_args", [])
    for key, value in (("existing_tests", existing), ("test_args", test_args)):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise PopulationError(f"{where}: '{key}' must be a list of strings")
    from pytest_critic22.apps.mine.select import check_test_args

    problem = check_test_args(test_args)
    if problem:
        raise PopulationError(f"{where}: test_args: {problem}")
    if existing and base is None:
        raise PopulationError(f"{where}: 'existing_tests' needs 'base' (a revision)")
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
        existing_tests=tuple(existing),
        test_args=tuple(test_args),
    )


def _revision_test(where: str, repo: Path, item: dict[str, Any]) -> GroundTruthTest:
    """A test file as it is at a commit of the case's repository (a mined case's hidden
    tests): read from the repository now, never copied into the population."""
    from pytest_critic22.execution.git import show_file
    from pytest_critic22.model.nodeids import check_nodeid

    path, nodes, rev = item.get("path"), item.get("nodes", []), str(item["rev"])
    if not isinstance(path, str) or not path:
        raise PopulationError(f"{where}: a ground_truth revision item needs its 'path'")
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts or path.startswith("-"):
        raise PopulationError(f"{where}: ground_truth path {path!r} is not inside the repository")
    if not isinstance(nodes, list) or not all(isinstance(n, str) for n in nodes):
        raise PopulationError(f"{where}: ground_truth 'nodes' must be a list of node ids")
    for node in nodes:
        problem = check_nodeid(node)
        if problem or node.split("::", 1)[0] != path:
            raise PopulationError(
                f"{where}: ground_truth node {node!r}: {problem or 'not in ' + path}"
            )
    if not (repo / ".git").exists() or rev.startswith("-"):
        raise PopulationError(f"{where}: ground_truth 'rev' needs repo to be a git repository")
    data = show_file(repo, rev, path)
    if data is None:
        raise PopulationError(f"{where}: ground_truth {path!r} is not in {rev[:12]} of {repo}")
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError:
        raise PopulationError(f"{where}: ground_truth {path!r} is not UTF-8 text") from None
    return GroundTruthTest(f"{path}@{rev[:12]}", source, path, tuple(nodes))


def _resolve(root: Path, value: str) -> Path:
    candidate = Path(value).expanduser()
    return (candidate if candidate.is_absolute() else root / candidate).resolve()


@dataclass(frozen=True, slots=True)
class CriticChoice:
    """Recorded outputs (``recorded:NAME``: a set of the population, a folder of
    ``<case id>.json``), replayed raw answers (``replay:DIR``: any folder of
    ``<case id>.json`` or ``<case id>.txt``), or a live model."""

    kind: Literal["recorded", "model", "replay"]
    name: str  # the set's name, the folder, or the litellm model string
    folder: Path | None = None
    api_base: str | None = None

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.name}"

    @property
    def replayed(self) -> bool:
        """Recorded answers (a set or a folder), not a live model."""
        return self.kind != "model"

    def recording(self, case: Case, *, unblinded: bool = False) -> Path | None:
        if self.folder is None:
            return None
        suffixes = (".json", ".txt") if self.kind == "replay" else (".json",)
        for suffix in suffixes:
            path = self.folder / f"{case.id}{'.unblinded' if unblinded else ''}{suffix}"
            if path.is_file():
                return path
        return None


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
    if critic.startswith("replay:") and critic[len("replay:") :]:
        folder = Path(critic[len("replay:") :]).expanduser().resolve()
        if not folder.is_dir():
            raise PopulationError(f"--critic replay:DIR: {folder} is not a folder")
        choice = CriticChoice("replay", str(folder), folder, None)
        missing = [c.id for c in population.held_out() if choice.recording(c) is None]
        if missing:
            raise PopulationError(
                f"replay folder {folder} has no answer (<case id>.json or .txt) for held-out "
                f"case(s): {', '.join(missing)}"
            )
        return choice
    raise PopulationError(f"--critic must be recorded:NAME, replay:DIR or model, not {critic!r}")
