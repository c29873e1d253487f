"""The Python API: ``pytest_critic22.review(...)`` returns a typed ``ReviewReport``.

Pure tests build the report from a recorded JSON report (the shape ``report.json_report``
writes); one real run reviews a bundled sample end to end.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import pytest_critic22
from pytest_critic22.apps.api import review_command
from pytest_critic22.execution.child_plugins import installed_plugins, review_blocks
from pytest_critic22.report.document import (
    FindingOutcome,
    PreservationOutcome,
    ReviewCounts,
    ReviewReport,
    ReviewRun,
)

#: A JSON report as the plugin wrote it for textstats/median-drops-guard (logs, evidence,
#: the critic record and the packet digest left out).
RECORDED: dict[str, Any] = {
    "schema": 1,
    "run_id": "20250101T000000-abcdef",
    "patch": "/cases/median-drops-guard/patch.diff",
    "base": "HEAD",
    "findings": [
        {
            "id": "F1",
            "finding": {
                "location": "e2",
                "claim": "mean() no longer raises ValueError on empty input; it returns 0.0.",
                "severity": "blocking",
                "evidence": "e2 deletes `if not values: raise ValueError`.",
                "falsification": "test:\nfrom textstats import mean\n...",
                "confidence": 0.9,
            },
            "route": {"kind": "test", "executable": True, "reason": ""},
            "outcome": {
                "status": "verified",
                "reason": "fails on patched (1/1 runs) and passes on the without-e2 tree",
            },
            "counterfactual": "without-e2",
            "logs": {},
        },
        {
            "id": "F2",
            "finding": {
                "location": "e3",
                "claim": "median() of odd-length input changes.",
                "severity": "blocking",
                "evidence": "e3 adds a branch.",
                "falsification": "test:\n...",
                "confidence": 0.99,
            },
            "route": {"kind": "test", "executable": True, "reason": ""},
            "outcome": {"status": "refuted", "reason": "the procedure passes on the patched tree"},
            "counterfactual": "without-e3",
            "logs": {},
        },
        {
            "id": "F3",
            "finding": {
                "location": "e3",
                "claim": "median() may be slow on large input.",
                "severity": "advisory",
                "evidence": "sorted() is O(n log n)",
                "falsification": "Benchmark it on a million values.",
                "confidence": 0.2,
            },
            "route": {"kind": None, "executable": False, "reason": "falsification is empty"},
            "outcome": {"status": "advisory", "reason": "advisory findings are never run"},
            "counterfactual": None,
            "logs": {},
        },
    ],
    "rejected": [{"index": 5, "reason": "missing field(s): claim"}],
    "downgraded": [],
    "dropped": [],
    "counts": {
        "findings": 3,
        "blocking": 2,
        "verified": 1,
        "refuted": 1,
        "inconclusive": 0,
        "advisory": 1,
        "not run": 0,
        "rejected": 1,
        "downgraded": 0,
        "dropped": 0,
    },
    "disposition": {
        "verdict": "reject",
        "verified": ["F1", "preserve[tests/test_stats.py]"],
        "reason": "2 verified blocking defects: F1, preserve[tests/test_stats.py]",
        "problems": [],
        "interrupted": False,
    },
    "preservation": [
        {
            "group": "tests/test_stats.py",
            "tests": ["tests/test_stats.py::test_mean", "tests/test_stats.py::test_mean_empty"],
            "outcome": "verified",
            "reason": "regression: tests/test_stats.py::test_mean_empty pass on the base and fail "
            "on patched (1/1 runs)",
            "logs": {},
        }
    ],
    "impact_evidence": {},
    "engage": {},
    "sandbox": {},
    "notes": [],
    "ledger": "/repo/.critic22/ledger.jsonl",
}


def test_a_recorded_report_becomes_typed() -> None:
    report = ReviewReport.from_json(RECORDED, exit_status=1, seconds=2.5, cwd="/repo")
    assert report.verdict == "reject"
    assert report.findings == (
        FindingOutcome(
            id="F1",
            location="e2",
            severity="blocking",
            claim="mean() no longer raises ValueError on empty input; it returns 0.0.",
            procedure="test",
            status="verified",
            reason="fails on patched (1/1 runs) and passes on the without-e2 tree",
            falsification="test:\nfrom textstats import mean\n...",
            executable=True,
        ),
        FindingOutcome(
            id="F2",
            location="e3",
            severity="blocking",
            claim="median() of odd-length input changes.",
            procedure="test",
            status="refuted",
            reason="the procedure passes on the patched tree",
            falsification="test:\n...",
            executable=True,
        ),
        FindingOutcome(
            id="F3",
            location="e3",
            severity="advisory",
            claim="median() may be slow on large input.",
            procedure=None,
            status="advisory",
            reason="advisory findings are never run",
            falsification="Benchmark it on a million values.",
        ),
    )
    assert report.preservation == (
        PreservationOutcome(
            group="tests/test_stats.py",
            outcome="verified",
            tests=("tests/test_stats.py::test_mean", "tests/test_stats.py::test_mean_empty"),
            reason=RECORDED["preservation"][0]["reason"],
        ),
    )
    assert report.counts == ReviewCounts(
        findings=3, blocking=2, verified=1, refuted=1, advisory=1, rejected=1
    )
    assert report.problems == ()
    assert report.ok and report.raw == RECORDED and report.report is report.raw
    assert (report.exit_status, report.seconds, report.cwd, report.error) == (1, 2.5, "/repo", "")


def test_an_incomplete_report_keeps_its_problems_and_not_run_counts() -> None:
    raw = copy.deepcopy(RECORDED)
    raw["disposition"].update(verdict="incomplete", problems=["a tree could not be built"])
    raw["findings"][0]["outcome"] = {"status": "not run", "reason": "the session stopped early"}
    raw["counts"].update({"verified": 0, "not run": 1})
    report = ReviewReport.from_json(raw)
    assert report.verdict == "incomplete"
    assert report.problems == ("a tree could not be built",)
    assert report.findings[0].status == "not run"
    assert report.counts.not_run == 1 and report.counts.verified == 0


def test_no_report_is_no_verdict() -> None:
    report = ReviewReport.from_json(None, exit_status=None, error="the review timed out after 5s")
    assert report.verdict is None and not report.ok and report.report is None
    assert report.findings == () and report.preservation == () and report.counts == ReviewCounts()
    assert report.error == "the review timed out after 5s"


def test_a_report_of_another_shape_is_read_leniently() -> None:
    report = ReviewReport.from_json(
        {"disposition": {"verdict": "maybe"}, "findings": "nope", "counts": {"verified": "2"}}
    )
    assert report.verdict is None  # not a verdict the gate gives
    assert report.findings == () and report.counts.verified == 0
    assert report.ok  # there is a report: raw keeps all of it


def test_review_run_is_the_same_class_and_to_dict_keeps_its_shape() -> None:
    assert ReviewRun is ReviewReport
    assert pytest_critic22.ReviewReport is ReviewReport
    assert pytest_critic22.ReviewRun is ReviewReport
    assert pytest_critic22.FindingOutcome is FindingOutcome
    report = ReviewReport.from_json(
        RECORDED, exit_status=1, seconds=1.23456, command=("python", "-m", "pytest"), cwd="/r"
    )
    assert report.to_dict() == {  # what critic22 ab caches: unchanged
        "report": RECORDED,
        "exit_status": 1,
        "seconds": 1.235,
        "command": ["python", "-m", "pytest"],
        "cwd": "/r",
        "output": "",
        "error": "",
    }
    json.dumps(report.to_dict())


def test_the_command_has_an_option_for_each_keyword(tmp_path: Path) -> None:
    command = review_command(
        tmp_path / "p.diff",
        tmp_path / "report.json",
        obligations=tmp_path / "obligations.txt",
        request=tmp_path / "request.json",
        reruns=1,
        procedure_timeout=30.0,
        extra_args=["-o", "critic22_retries=0"],
        python="python",
    )
    assert command[:4] == ["python", "-m", "pytest", "-p"]
    assert f"--critic22-obligations=@{tmp_path / 'obligations.txt'}" in command
    assert f"--critic22-request={tmp_path / 'request.json'}" in command
    assert "--critic22-reruns=1" in command
    assert "--critic22-procedure-timeout=30" in command
    assert command[-2:] == ["-o", "critic22_retries=0"]
    assert not [a for a in command if a.startswith("--critic22-timeout")]


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"reruns": 0}, "reruns must be a whole number of at least 1"),
        ({"procedure_timeout": 0.0}, "procedure_timeout must be seconds greater than 0"),
        ({"findings": Path("f.json"), "model": "openai/x"}, "recorded findings or a model"),
    ],
)
def test_bad_keywords_are_refused_before_anything_runs(
    tmp_path: Path, keywords: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        review_command(tmp_path / "p.diff", tmp_path / "r.json", **keywords)


def test_the_reviews_pytest_keeps_the_plugins_its_repository_or_arguments_name(
    tmp_path: Path,
) -> None:
    names = {name for name, _ in installed_plugins()}
    if not {"hypothesispytest", "xdist"} <= names:
        pytest.skip("hypothesis' and xdist's plugins are this check's installed plugins")
    (tmp_path / "conftest.py").write_text("import pytest\n")
    assert {"hypothesispytest", "xdist"} <= set(review_blocks(tmp_path, [], {}))
    assert "xdist" not in review_blocks(tmp_path, ["-n", "2"], {})
    assert "xdist" not in review_blocks(tmp_path, [], {"PYTEST_ADDOPTS": "--dist=load"})
    kept = review_blocks(tmp_path, [], {"PYTEST_PLUGINS": "hypothesis.extra.pytestplugin"})
    assert "hypothesispytest" not in kept
    left_out = {"PYTEST_ADDOPTS": "-p no:hypothesispytest -p no:xdist"}  # no use of either
    assert {"hypothesispytest", "xdist"} <= set(review_blocks(tmp_path, [], left_out))
    (tmp_path / "conftest.py").write_text("from hypothesis import settings\n")
    assert "hypothesispytest" not in review_blocks(tmp_path, [], {})
