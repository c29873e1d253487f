"""The bundled sample repositories: plain folders turned into git repositories on demand.

They ship inside the package (``pytest_critic22/sample_repos/``, package data found with
:mod:`importlib.resources`), so ``critic22 demo`` and ``critic22 ab sample`` work from an
installed wheel, outside any checkout. Each ``sample_repos/NAME/`` holds ``repo/`` (the
project) and ``cases/`` (candidate patches with their specification and recorded critic
outputs); ``sample_repos/population.json`` is the labelled population of ``critic22 ab``.
"""

from __future__ import annotations

import shutil
from importlib.resources import files
from pathlib import Path

from pytest_critic22.execution.git import init_repo

__all__ = [
    "POPULATION",
    "SAMPLES_DIR",
    "case_dir",
    "case_options",
    "materialize",
    "sample_names",
]

# The package is installed as files (a wheel, an editable install): its data is a folder.
SAMPLES_DIR = Path(str(files("pytest_critic22") / "sample_repos"))
#: The bundled labelled population (``critic22 ab sample``).
POPULATION = SAMPLES_DIR / "population.json"
#: Never copied: caches and the plugin's state (the tool caches ignore themselves in git anyway).
_IGNORED = ("__pycache__", ".pytest_cache", "*.pyc", ".critic22", ".mypy_cache", ".ruff_cache")


def sample_names() -> list[str]:
    return sorted(p.name for p in SAMPLES_DIR.iterdir() if (p / "repo").is_dir())


def case_dir(sample: str, case: str) -> Path:
    path = SAMPLES_DIR / sample / "cases" / case
    if not path.is_dir():
        raise FileNotFoundError(f"no case {case!r} in sample {sample!r}")
    return path


def materialize(
    sample: str, dest: Path, *, source: Path | None = None, message: str | None = None
) -> Path:
    """Copy ``sample``'s repository to ``dest`` and commit it; return ``dest``.

    ``source`` copies another plain folder instead (``critic22 ab`` copies a case's
    repository); ``message`` is the commit's message (default ``sample SAMPLE``).
    """
    if source is None:
        source = SAMPLES_DIR / sample / "repo"
        if not source.is_dir():
            raise FileNotFoundError(f"sample repository {sample!r} not found under {SAMPLES_DIR}")
    shutil.copytree(source, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*_IGNORED))
    init_repo(dest, message if message is not None else f"sample {sample}")
    return dest


def case_options(case: Path) -> list[str]:
    """The ``--critic22…`` options that review a case: its patch, recorded critic output,
    and the specification, root cause and obligations (in the case or shared by its sample)."""
    options = [f"--critic22={case / 'patch.diff'}"]
    if (case / "findings.json").is_file():
        options.append(f"--critic22-findings={case / 'findings.json'}")
    for option, name in (
        ("--critic22-spec", "spec.md"),
        ("--critic22-root-cause", "root_cause.md"),
        ("--critic22-obligations", "obligations.txt"),
    ):
        for folder in (case, case.parent):
            if (folder / name).is_file():
                options.append(f"{option}=@{folder / name}")
                break
    return options
