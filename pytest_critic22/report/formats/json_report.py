"""``--critic22-report=FILE``: the review as JSON, for a validator (the default format)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from pytest_critic22.report.formats import isolated, output_path, write_output

if TYPE_CHECKING:
    from pytest_critic22.model.results import Disposition
    from pytest_critic22.pipeline.review import Review, RunInfo
    from pytest_critic22.verification.procedures import FindingResult


@pytest.hookimpl(trylast=True)
def pytest_critic22_review_finished(
    review: Review,
    results: dict[str, FindingResult],
    disposition: Disposition,
    run: RunInfo,
    config: pytest.Config,
) -> None:
    from pytest_critic22.model.inert import inert_data
    from pytest_critic22.report import terminal as report

    path = output_path(config, "critic22_report")
    if path is None:
        return
    with isolated(config, "JSON report"):
        document = report.json_report(
            run_id=run.run_id,
            review=review,
            results=results,
            disposition=disposition,
            ledger=run.ledger,
            notes=run.notes,
            sandbox=run.sandbox,
        )
        # A lone surrogate (from the critic's JSON) as text: strict JSON readers reject it.
        text = json.dumps(inert_data(document), indent=2, sort_keys=True)
        write_output(path, text + "\n")
