"""The Python API.

The end-to-end tier: whole pytest runs. The rest, and the whole story: tests/unit/test_api.py.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from pytest_critic22.apps.api import review
from pytest_critic22.apps.samples import case_dir, materialize
from pytest_critic22.execution.child_plugins import installed_plugins, review_blocks


def test_timeout_is_the_whole_reviews_deadline(tmp_path: Path) -> None:
    report = review(tmp_path, tmp_path / "p.diff", timeout=0.05, python=sys.executable)
    assert report.exit_status is None and report.verdict is None and not report.ok
    assert report.error == "the review timed out after 0.05s"


@pytest.mark.e2e
def test_a_real_review_returns_the_typed_report(tmp_path: Path) -> None:
    case = case_dir("textstats", "median-drops-guard")
    repo = materialize("textstats", tmp_path / "repo")
    report = review(
        repo,
        case / "patch.diff",
        spec=case.parent / "spec.md",
        root_cause=case.parent / "root_cause.md",
        obligations=case.parent / "obligations.txt",
        request={"generator_rationale": "trust me, it is fine"},  # a Mapping: written to a file
        findings=case / "findings.json",
        reruns=1,
        procedure_timeout=120,
        # as on a machine that writes bytecode next to the sources (the suite's conftest
        # moves it into a folder of its own): the review's pytest imports the checkout's
        # conftest.py, and must leave no __pycache__ there
        env={
            k: v
            for k, v in os.environ.items()
            if k not in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE")
        },
    )
    expected = json.loads((case / "expected.json").read_text())
    assert report.ok, report.error + "\n" + report.output
    assert not [p for p in repo.rglob("__pycache__") if ".git" not in p.parts]
    assert report.verdict == expected["verdict"] == "reject"
    assert report.exit_status == expected["exit"]
    assert {f.id: f.status for f in report.findings} == expected["findings"]
    assert {p.group: p.outcome for p in report.preservation} == expected["preservation"]
    assert report.counts.verified == 2 and report.counts.rejected == expected["rejected"]
    assert {f.id: f.procedure for f in report.findings}["F2"] == "counterfactual"
    assert "--critic22-reruns=1" in report.command
    assert "--critic22-procedure-timeout=120" in report.command
    assert report.raw is not None
    stripped = [r["where"] for r in report.raw["stripped"]["removals"]]
    assert "$.generator_rationale" in stripped  # the request reached the plugin, blinded
    assert "trust me" not in json.dumps(report.raw)
    # hypothesis' plugin (installed with the suite's extras) is left out: the sample never
    # names it, and the review's own pytest runs no project test
    assert "no:hypothesispytest" in report.command


@pytest.mark.e2e
def test_a_usage_error_with_plugins_left_out_is_run_again_whole(tmp_path: Path) -> None:
    if "xdist" not in {name for name, _ in installed_plugins()}:
        pytest.skip("needs xdist's plugin installed")
    case = case_dir("textstats", "median-drops-guard")
    repo = materialize("textstats", tmp_path / "repo")
    # an option of xdist's that names neither xdist nor -n: unknown with xdist left out
    extra = ["--max-worker-restart=1"]
    assert "xdist" in review_blocks(repo, extra, os.environ)  # so the first run has it out
    report = review(repo, case / "patch.diff", engage="never", extra_args=extra)
    assert report.ok, report.error + "\n" + report.output
    assert report.output.startswith("critic22: run again with every plugin (")
    assert "xdist" in report.output.splitlines()[0] and "exit 4" in report.output
    # the run that counts, the second: every plugin in
    assert [arg for arg in report.command if arg.startswith("no:")] == ["no:cacheprovider"]
    assert report.verdict == "reject"  # the deterministic gates alone: the guard's removal
