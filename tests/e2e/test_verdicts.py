"""Three verdicts: REJECT, INCOMPLETE, PROCEED.

The end-to-end tier: whole pytest runs. The rest, and the whole story: tests/unit/test_verdicts.py.
"""

from __future__ import annotations

import json

import pytest

from pytest_critic22.apps.samples import case_dir
from tests.runs import make_sample

DROPS = case_dir("textstats", "median-drops-guard")


def _review(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, object]]:
    report = pytester.path.parent / "report.json"
    result = pytester.runpytest_inprocess(
        f"--critic22={DROPS / 'patch.diff'}",
        f"--critic22-report={report}",
        "--critic22-only",
        "--critic22-preservation=off",
        *args,
    )
    disposition = json.loads(report.read_text())["disposition"]
    assert isinstance(disposition, dict)
    return result, disposition


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("", "the output is empty"),
        ("this is not JSON", "holds no JSON"),
        # "42" (a JSON number): test_allow_incomplete_exits_zero_and_still_records_incomplete
        ('{"a": 1}', "without a 'findings' list"),
        ('[{"a": 1}]', "all rejected"),
    ],
    ids=["empty", "not-json", "an-object", "only-bad-records"],
)
def test_an_unusable_findings_file_is_incomplete_not_proceed(
    pytester: pytest.Pytester, content: str, why: str
) -> None:
    make_sample(pytester, "textstats")
    findings = pytester.path.parent / "findings.json"
    findings.write_text(content)
    result, disposition = _review(pytester, f"--critic22-findings={findings}")
    assert result.ret == 1
    assert disposition["verdict"] == "incomplete"
    assert why in " ".join(disposition["problems"])  # type: ignore[arg-type]
    result.stdout.fnmatch_lines(["verdict: INCOMPLETE*", "ERROR patch.diff::review*"])


@pytest.mark.e2e
def test_allow_incomplete_exits_zero_and_still_records_incomplete(
    pytester: pytest.Pytester,
) -> None:
    make_sample(pytester, "textstats")
    findings = pytester.path.parent / "findings.json"
    findings.write_text("42")
    result, disposition = _review(
        pytester, f"--critic22-findings={findings}", "--critic22-allow-incomplete"
    )
    assert result.ret == 0
    assert disposition["verdict"] == "incomplete"
    assert "JSON int" in " ".join(disposition["problems"])  # type: ignore[arg-type]
    assert "patch.diff::review" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        ["preservation: off (--critic22-preservation=off)", "verdict: INCOMPLETE*"]
    )


@pytest.mark.e2e
def test_an_empty_findings_list_and_a_refuted_only_run_still_proceed(
    pytester: pytest.Pytester,
) -> None:
    make_sample(pytester, "textstats")
    empty = pytester.path.parent / "empty.json"
    empty.write_text("[]")
    result, disposition = _review(pytester, f"--critic22-findings={empty}")
    assert (result.ret, disposition["verdict"]) == (0, "proceed")
    refuted = pytester.path.parent / "refuted.json"
    refuted.write_text(
        json.dumps(
            [
                {
                    "location": "e3",
                    "claim": "median of one value changes",
                    "severity": "blocking",
                    "evidence": "e3 rewrites median",
                    "falsification": "test:\nfrom textstats.stats import median\n\n"
                    "def test_one():\n    assert median([4]) == 4\n",
                    "confidence": 0.9,
                },
                {
                    "location": "e3",
                    "claim": "median needs a clock",
                    "severity": "blocking",
                    "evidence": "e3",
                    "falsification": "test:\ndef test_clock(no_such_fixture):\n    pass\n",
                    "confidence": 0.1,
                },
            ]
        )
    )
    result, disposition = _review(pytester, f"--critic22-findings={refuted}", "-rs")
    # A test of the critic's that cannot set up is an ordinary inconclusive (the critic's
    # mistake, not a tree that could not look), and the summary says why in one line.
    assert (result.ret, disposition["verdict"]) == (0, "proceed")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["      inconclusive: on the patched tree: *: fixture 'no_such_fixture' not found"]
    )


@pytest.mark.e2e
def test_a_required_critic_that_cannot_be_reached_is_incomplete(
    litellm_loaded: None, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_sample(pytester, "textstats")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    # Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
    result, disposition = _review(
        pytester,
        "--critic22-engage=always",
        "--critic22-model=openai/critic",
        "--critic22-api-base=http://127.0.0.1:9/v1",
        "-o",
        "critic22_retries=0",
        "--critic22-critic-timeout=30",
    )
    assert result.ret == 1
    assert disposition["verdict"] == "incomplete"
    assert "the required critic gave no answer" in " ".join(disposition["problems"])  # type: ignore[arg-type]


@pytest.mark.e2e
def test_items_pytest_never_ran_after_an_internal_error_make_the_review_incomplete(
    pytester: pytest.Pytester,
) -> None:
    # xdist's hook in a conftest, and xdist not loaded: pytest refuses the unknown hook when
    # it collects the conftest, after the review was built and before any item ran.
    make_sample(pytester, "textstats")
    (pytester.path / "conftest.py").write_text("def pytest_configure_node(node):\n    pass\n")
    result, disposition = _review(
        pytester, f"--critic22-findings={DROPS / 'findings.json'}", "-p", "no:xdist"
    )
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    assert disposition["verdict"] == "incomplete"  # not "proceed": nothing was looked at
    problems = " ".join(disposition["problems"])  # type: ignore[arg-type]
    assert "pytest ended with exit status 3 before these ran: F1" in problems


@pytest.mark.e2e
def test_items_a_pytest_exit_stopped_before_they_ran_make_the_review_incomplete(
    pytester: pytest.Pytester,
) -> None:
    # pytest.exit(returncode=0) from a conftest once collection is done: exit status 0 asked
    make_sample(pytester, "textstats")
    (pytester.path / "conftest.py").write_text(
        "import pytest\n\ndef pytest_collection_finish(session):\n"
        "    pytest.exit('stop here', returncode=0)\n"
    )
    result, disposition = _review(pytester, f"--critic22-findings={DROPS / 'findings.json'}")
    assert disposition["verdict"] == "incomplete"  # not "proceed": nothing was looked at
    assert disposition["interrupted"] is True
    assert "interrupted before these ran: F1" in " ".join(disposition["problems"])  # type: ignore[arg-type]
    assert result.ret != 0
