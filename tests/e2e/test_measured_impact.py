"""Measured test impact.

The end-to-end tier: whole pytest runs. The rest, and the whole story:
tests/unit/test_measured_impact.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_critic22.execution.git import git
from tests.helpers import write
from tests.integration.test_measured_impact import make_repo
from tests.unit.test_measured_impact import PACKAGE, SPAN

SETDEFAULT = "        self.fields.setdefault('id', int)\n"


def regression_patch(repo: Path) -> Path:
    """Both touched places broken: the span's start, the base class's default field."""
    arrow = PACKAGE["clockwork/arrow.py"].replace(SPAN, "        start = self.value - width\n")
    schema = PACKAGE["clockwork/schema.py"].replace(SETDEFAULT, "")
    write(repo, {"clockwork/arrow.py": arrow, "clockwork/schema.py": schema})
    diff = git(["diff", "--no-ext-diff"], repo).stdout
    git(["checkout", "--", "."], repo)
    out = repo.parent / "patch.diff"
    out.write_text(diff)
    return out


def review(pytester: pytest.Pytester, patch: Path, *extra: str) -> dict[str, object]:
    report = pytester.path.parent / "review.json"
    pytester.runpytest(
        f"--critic22={patch}",
        "--critic22-only",
        "--critic22-reruns=1",
        f"--critic22-report={report}",
        "-p",
        "no:cacheprovider",
        *extra,
    )
    return json.loads(report.read_text())


def outcomes(document: dict[str, object]) -> dict[str, str]:
    groups = document["preservation"]
    assert isinstance(groups, list)
    return {g["group"]: g["outcome"] for g in groups}


def map_records(repo: Path) -> list[dict[str, object]]:
    lines = (repo / ".critic22" / "ledger.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    return [e["payload"] for e in events if e.get("event") == "impact-map"]


@pytest.mark.e2e
def test_regressions_the_graph_cannot_see_are_rejected_with_no_critic(
    pytester: pytest.Pytester,
) -> None:
    repo = make_repo(pytester.path)
    patch = regression_patch(repo)

    graph = review(pytester, patch, "--critic22-preservation=graph")
    assert graph["disposition"]["verdict"] == "proceed"  # type: ignore[index]
    assert outcomes(graph) == {"collection": "refuted"}

    measured = review(pytester, patch)  # auto: the suite fits the budget
    assert measured["disposition"]["verdict"] == "reject"  # type: ignore[index]
    assert outcomes(measured) == {
        "collection": "refuted",
        "tests/test_arrow.py": "verified",
        "tests/test_schema.py": "verified",
    }
    found_by = measured["impact_evidence"]["preservation_found_by"]  # type: ignore[index]
    assert found_by == {
        "tests/test_arrow.py::TestArrow::test_span": "measured",
        "tests/test_arrow.py::TestArrow::test_floor": "measured",
        "tests/test_schema.py::test_schema_has_an_id": "measured",
    }
    assert [r["cached"] for r in map_records(repo)] == [False]

    again = review(pytester, patch)
    assert outcomes(again) == outcomes(measured)
    assert [r["cached"] for r in map_records(repo)] == [False, True]


@pytest.mark.e2e
def test_a_suite_over_the_budget_falls_back_to_the_graph_and_says_so(
    pytester: pytest.Pytester,
) -> None:
    repo = make_repo(pytester.path)
    patch = regression_patch(repo)
    document = review(pytester, patch, "-o", "critic22_impact_budget=0.001")
    assert document["disposition"]["verdict"] == "proceed"  # type: ignore[index]
    notes = document["notes"]
    assert isinstance(notes, list)
    assert any(
        n.startswith("preservation by the code graph only: the suite takes longer than 0.001 s")
        for n in notes
    ), notes
    # remembered: the next run with the same budget does not try again
    review(pytester, patch, "-o", "critic22_impact_budget=0.001")
    records = map_records(repo)
    assert len(records) == 2 and all("unavailable" in r for r in records)
    shutil.rmtree(repo / ".critic22" / "cache" / "impact")
