"""The CI recipes in ``examples/`` run as written, against the textstats sample.

The sample's ``median-drops-guard`` patch breaks an existing test of ``mean()``, so the
deterministic preservation gate rejects it with no model at all.

* ``github-actions.yml`` is parsed with PyYAML (installed with libcst, a dependency of the
  plugin: nothing added). Its ``run:`` steps are executed with ``bash -e``, as the runner does,
  minus the ``pip install`` lines (the package is installed here); the ``uses:`` steps are not
  run but checked for their shape, and actions/checkout is simulated. The pull request also
  adds files that leave a mark when the reviewing process imports them (a root
  ``conftest.py``, a ``unidiff.py``: ``tests/test_controller_trust.py``): the recipe checks
  its base out before any Python runs, so none is left.
* ``pre-commit`` is run with ``sh`` on a staged change, then on an empty one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped,unused-ignore]

ROOT = Path(__file__).resolve().parents[2]


WORKFLOW = ROOT / "examples" / "github-actions.yml"


def steps_of(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    (job,) = workflow["jobs"].values()
    steps: list[dict[str, Any]] = job["steps"]
    return steps


def test_the_workflow_runs_no_python_in_a_checkout_of_the_pull_request() -> None:
    """Invariant 17 in the recipe: the merge base is checked out before anything is installed
    or run with Python (``python -m`` puts the current folder first on ``sys.path``; the
    install runs the project's build; pytest imports its conftest.py), and the pull request
    only comes back once Python is done, for code scanning."""
    steps = steps_of(yaml.safe_load(WORKFLOW.read_text(encoding="utf-8")))
    names = [step.get("name") or step["uses"] for step in steps]
    runs = [
        "\n".join(ln.split("#")[0] for ln in step.get("run", "").splitlines()) for step in steps
    ]
    (base_at,) = [i for i, run in enumerate(runs) if 'git checkout --quiet --detach "$base"' in run]
    (back_at,) = [
        i for i, run in enumerate(runs) if 'git checkout --quiet --detach "$GITHUB_SHA"' in run
    ]
    python = [i for i, run in enumerate(runs) if "python" in run or "pip" in run]
    assert python and min(python) > base_at and max(python) < back_at, names
    for step in steps[:base_at]:
        assert step.get("uses", "").startswith(("actions/checkout@", "actions/setup-python@"))
    assert 'git diff --no-color --no-ext-diff "$base" HEAD' in runs[base_at]
    assert steps[back_at]["if"] == "always()"
    review = next(run for run in runs if "--critic22=" in run)
    assert "--critic22-only" in review and "--critic22-base" not in review  # HEAD is the base
