"""Three verdicts: REJECT, INCOMPLETE, PROCEED — "could not look" is never "found nothing"."""

from __future__ import annotations

import pytest

from pytest_critic22.model.results import Outcome
from pytest_critic22.verification.decide import error_summary, gate, import_failure

REFUTED = Outcome("refuted", "passes on patched")


FLAKY = Outcome("inconclusive", "flaky: failed 1 of 3 runs on the patched tree")


BLIND = Outcome("inconclusive", "the tree cannot import pkg._version", environment=True)


VERIFIED = Outcome("verified", "fails on patched (3/3 runs) and passes on base")


def test_refuted_and_ordinary_inconclusive_outcomes_proceed() -> None:
    verdict = gate([("F1", "blocking", REFUTED), ("F2", "blocking", FLAKY)])
    assert verdict.verdict == "proceed" and verdict.problems == ()


def test_an_environment_inconclusive_makes_the_review_incomplete() -> None:
    verdict = gate([("F1", "blocking", REFUTED), ("F2", "blocking", BLIND)])
    assert verdict.verdict == "incomplete"
    assert verdict.problems == ("F2: the tree cannot import pkg._version",)


def test_an_advisory_finding_never_makes_a_verdict_incomplete() -> None:
    assert gate([("F1", "advisory", BLIND)]).verdict == "proceed"


def test_a_problem_of_the_run_makes_it_incomplete_and_an_interrupt_says_so() -> None:
    assert gate([], problems=["the findings file is unusable"]).verdict == "incomplete"
    interrupted = gate([("F1", "blocking", REFUTED)], interrupted=True)
    assert interrupted.verdict == "incomplete" and interrupted.interrupted
    assert interrupted.problems[0].startswith("interrupted")


def test_a_verified_defect_rejects_whatever_could_not_be_looked_at() -> None:
    verdict = gate(
        [("F1", "blocking", VERIFIED), ("F2", "blocking", BLIND)],
        problems=["interrupted before these ran: F3"],
        interrupted=True,
    )
    assert verdict.verdict == "reject" and verdict.verified == ("F1",)


@pytest.mark.parametrize(
    ("output", "line"),
    [
        (
            "E       fixture 'stamp' not found\n>  available fixtures: cache",
            "fixture 'stamp' not found",
        ),
        (
            "E   ModuleNotFoundError: No module named 'x'",
            "ModuleNotFoundError: No module named 'x'",
        ),
        ('E     File "t.py", line 2\nE       def f(:\nE   SyntaxError: bad', "SyntaxError: bad"),
        ("nothing to see", ""),
    ],
    ids=["fixture", "import", "syntax", "none"],
)
def test_a_setup_error_is_summarised_in_one_line(output: str, line: str) -> None:
    assert error_summary(output) == line


def test_import_failure_names_the_module_and_the_file_that_imported_it() -> None:
    output = (
        "ImportError while importing test module 'tests/test_critic22_f1.py'.\n"
        "Traceback:\n"
        "tests/test_critic22_f1.py:1: in <module>\n    from pkg import core\n"
        "src/pkg/__init__.py:1: in <module>\n    from ._version import v\n"
        "E   ModuleNotFoundError: No module named 'pkg._version'\n"
    )
    assert import_failure(output) == ("pkg._version", "src/pkg/__init__.py")
    assert import_failure("1 failed in 0.1s") is None
