"""The §9.6 decision of ``critic22 ab`` needs data.

The end-to-end tier: whole pytest runs. The rest, and the whole story:
tests/unit/test_ab_decision.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_critic22.apps.samples import SAMPLES_DIR
from tests.unit.test_ab_decision import (
    decision_line,
)


@pytest.mark.e2e
@pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")
def test_critic22_ab_on_a_population_without_a_defective_case_says_not_enough_data(
    tmp_path: Path,
) -> None:
    """One good case of the bundled population, held out, with its recorded critic."""
    document = json.loads((SAMPLES_DIR / "population.json").read_text())
    (case,) = [c for c in document["cases"] if c["id"] == "inventory.total"]
    assert case["label"] == "good"
    document.update(
        cases=[case],
        held_out={"rule": "sha256-mod", "modulus": 1, "tuning": []},
        recorded=str(SAMPLES_DIR / "recorded"),
    )
    for key in ("repo", "patch", "spec", "root_cause", "obligations"):
        if isinstance(case.get(key), str):
            case[key] = str(SAMPLES_DIR / case[key])
    case["ground_truth"] = [
        g if isinstance(g, dict) else str(SAMPLES_DIR / g) for g in case.get("ground_truth", [])
    ]
    population = tmp_path / "population.json"
    population.write_text(json.dumps(document))
    out = tmp_path / "ab.json"
    command = [
        sys.executable, "-m", "pytest_critic22.apps.ab", str(population),
        "--critic", "recorded:useful", "--jobs", "2", "--critic22-reruns", "1",
        "--cache", str(tmp_path / "cache"), "--json", str(out),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert decision_line(done.stdout).startswith(
        "decision (spec §9.6): not enough data: 0 defective, 1 good measured"
    )
    assert "REMOVE the critic" not in done.stdout
    decision = json.loads(out.read_text())["decision"]
    assert (decision["decision"], decision["keep"]) == ("not enough data", None)
