"""The loop's deterministic parts, in-process: verdict and score, reading a report,
composition in a private index, the debate's and fixer's parsing, review independence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_critic22.apps.loop.asking import debate_messages, hunks_only, parse_fix, parse_ruling
from pytest_critic22.apps.loop.independence import family
from pytest_critic22.apps.loop.independence import independence as _independence
from pytest_critic22.apps.loop.model import ItemResult, RoundRecord
from pytest_critic22.apps.loop.options import LoopOptions
from pytest_critic22.apps.loop.rounds import decisive_output, items_of, scar_entries, split_test
from pytest_critic22.apps.loop.verdict import is_positive, score_of, verdict_of
from pytest_critic22.apps.samples import SAMPLES_DIR

SAMPLE = SAMPLES_DIR / "textstats"


def item(status: str, source: str = "critic", **kw: Any) -> ItemResult:
    fields: dict[str, Any] = {
        "id": "F1",
        "source": source,
        "claim": "c",
        "location": "e1",
        "procedure": "test",
        "status": status,
        "reason": "r",
    }
    fields.update(kw)
    return ItemResult(**fields)


@pytest.mark.parametrize(
    ("statuses", "verdict", "score", "positive"),
    [
        ([], "ready", 10, True),
        (["refuted", "refuted"], "ready", 10, True),
        (["inconclusive"], "almost", 9, True),
        (["inconclusive"] * 4, "almost", 6, True),
        (["inconclusive"] * 5, "almost", 5, False),  # almost with 5+ inconclusive: no
        (["verified"], "not ready", 6, False),  # score 6 but not ready: no
        (["verified", "inconclusive"], "not ready", 5, False),
        (["verified"] * 3, "not ready", 0, False),  # never below 0
    ],
)
def test_verdict_and_score_come_from_execution_only(
    statuses: list[str], verdict: str, score: int, positive: bool
) -> None:
    items = [item(s) for s in statuses]
    assert verdict_of(items) == verdict
    assert score_of(items) == score
    assert is_positive(score, verdict) is positive


def test_blocked_is_never_positive() -> None:
    assert not is_positive(10, "BLOCKED")


def _report() -> dict[str, Any]:
    finding = {
        "location": "e1",
        "claim": "breaks",
        "severity": "blocking",
        "evidence": "x",
        "falsification": "test:\ndef test_x():\n    assert 0\nrepair:\n--- a/m.py\n+++ b/m.py\n",
        "confidence": 0.9,
    }
    return {
        "findings": [
            {
                "id": "F1",
                "finding": finding,
                "route": {"kind": "test", "executable": True},
                "outcome": {"status": "verified", "reason": "fails"},
                "counterfactual": "repair-1",
                "logs": {
                    "patched": [{"status": "failed", "output": "AssertionError on patched"}],
                    "counterfactual": {"status": "passed", "output": "1 passed"},
                },
            },
            {
                "id": "F2",
                "finding": dict(finding, severity="advisory"),
                "route": {"kind": "test", "executable": True},
                "outcome": {"status": "advisory", "reason": ""},
            },
            {
                "id": "F3",
                "finding": finding,
                "route": {"kind": "test", "executable": True},
                "outcome": {"status": "not run", "reason": "the session stopped early"},
            },
            {
                "id": "F4",
                "finding": dict(finding, falsification="it is bad"),
                "route": {"kind": None, "executable": False},
                "outcome": {"status": "advisory", "reason": "downgraded"},
            },
            {
                "id": "S1",
                "finding": dict(finding, falsification="scar:\ndef test_y():\n    pass\n"),
                "route": {"kind": "scar", "executable": True},
                "outcome": {"status": "refuted", "reason": "passes"},
            },
        ],
        "preservation": [
            {"group": "tests/t.py", "tests": ["tests/t.py::a"], "outcome": "refuted", "reason": ""}
        ],
    }


def test_items_count_blocking_executable_findings_and_groups() -> None:
    items = items_of(_report())
    assert [(i.id, i.source, i.status) for i in items] == [
        ("F1", "critic", "verified"),
        ("F3", "critic", "inconclusive"),  # could not look: never "nothing found"
        ("S1", "scar", "refuted"),
        ("preserve[tests/t.py]", "validator", "refuted"),
    ]
    second = items_of(_report(), prefix="N", source="second-critic")
    assert [i.id for i in second][:2] == ["N1", "N3"]


def test_decisive_output_shows_both_trees() -> None:
    text = decisive_output(_report()["findings"][0])
    assert "patched tree: failed" in text and "AssertionError on patched" in text
    assert "repair-1 tree: passed" in text


def test_scar_entries_are_earlier_verified_tests_once() -> None:
    f1 = item("verified", falsification="test:\ndef test_a():\n    assert 1\n")
    again = item("verified", id="F2", falsification="test:\ndef test_a():\n    assert 1\n")
    static = item("verified", id="F3", procedure="static", falsification="static: x")
    refuted = item("refuted", id="F4", falsification="test:\ndef test_b():\n    pass\n")
    entries = scar_entries([(1, [f1, static, refuted]), (2, [again])])
    assert entries == [{"id": "R1-F1", "claim": "c", "test": "def test_a():\n    assert 1\n"}]
    assert split_test("static: removed-guard e1") is None


def test_a_ruling_is_data_and_a_revision_needs_a_falsification() -> None:
    assert parse_ruling('{"ruling": "withdraw", "argument": "wrong"}').ruling == "withdraw"
    assert parse_ruling('{"ruling": "revise", "argument": "a"}').ruling == "keep"
    answer = 'sure: {"ruling": "REVISE", "argument": "a", "falsification": "test: x"}'
    revised = parse_ruling(answer)
    assert (revised.ruling, revised.falsification) == ("revise", "test: x")
    assert parse_ruling("I accept the verdict").ruling == "no answer"
    assert parse_ruling(None).ruling == "no answer"
    assert parse_ruling('{"ruling": "accept"}').ruling == "no answer"  # no accept action


def test_a_fixers_diff_is_taken_from_fences_or_prose() -> None:
    assert parse_fix("Here:\n```diff\n--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-a\n+b\n```\n") == (
        "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-a\n+b\n"
    )
    assert parse_fix("diff --git a/m.py b/m.py\n--- a/m.py").startswith("diff --git")
    assert parse_fix("I would change the guard") == ""
    assert parse_fix(None) == ""


def test_debate_request_carries_hunks_never_the_authors_message() -> None:
    patch = (SAMPLE / "cases" / "median-drops-guard" / "patch.diff").read_text()
    messages = debate_messages(item("inconclusive"), "--- patched tree ---\nout", patch)
    text = json.dumps(messages)
    assert "I am 95% confident" not in text and "Co-authored-by" not in text
    assert "return (ordered[mid - 1] + ordered[mid]) / 2" in text  # the hunks are there
    assert hunks_only(patch).startswith("diff --git")


@pytest.mark.parametrize(
    ("model", "fam"),
    [
        ("openai/gpt-4o", "openai"),
        ("gpt-4o-mini", "openai"),
        ("anthropic/claude-sonnet-4", "anthropic"),
        ("openrouter/anthropic/claude-3", "anthropic"),
        ("gemini/gemini-2.0-flash", "google"),
        ("ollama/somemodel", "ollama"),
        ("mystery", None),
    ],
)
def test_model_family(model: str, fam: str | None) -> None:
    assert family(model) == fam


@pytest.mark.parametrize(
    ("critic", "author", "fixer", "independence", "acceptance"),
    [
        ("openai/gpt-4o", None, None, "unknown", "provisional"),
        ("openai/gpt-4o", "gpt-4o-mini", None, "same-family", "provisional"),
        ("openai/gpt-4o", "claude-3", None, "cross-family", "accepted"),
        ("openai/gpt-4o", "claude-3", "o3-mini", "same-family", "provisional"),
    ],
)
def test_review_independence(
    critic: str, author: str | None, fixer: str | None, independence: str, acceptance: str
) -> None:
    opts = LoopOptions(Path("."), Path("p"), model=critic, author_model=author, fixer_model=fixer)
    assert _independence(opts) == {
        "review_independence": independence,
        "acceptance_status": acceptance,
    }
    replayed = LoopOptions(Path("."), Path("p"), findings_dir=Path("d"), author_model=author)
    assert _independence(replayed)["review_independence"] == "unknown"


def test_a_round_record_round_trips() -> None:
    record = RoundRecord(
        run_id="run_20261130_0123abcd",
        round=2,
        max_rounds=4,
        verdict="ready",
        score=10,
        positive=True,
        status="acquitted",
        items=(item("refuted"),),
        extra={"base": "abc"},
    )
    again = RoundRecord.from_dict(json.loads(json.dumps(record.to_dict())))
    assert again == record


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{}", "expected a JSON list"),
        ("[1]", "needs string id, claim and test"),
        ('[{"id": "--junitxml=x", "claim": "c", "test": "def test_a(): pass"}]', "not a name"),
        ('[{"id": "R1-F1", "claim": "c", "test": "x = 1"}]', "defines no test function"),
        ("not json", "not valid JSON"),
    ],
)
def test_scar_file_is_checked_data(tmp_path: Path, content: str, message: str) -> None:
    from pytest_critic22.config.inputs import InputError, read_scar

    (tmp_path / "scar.json").write_text(content)
    with pytest.raises(InputError, match=message) as caught:
        read_scar("scar.json", tmp_path)
    assert str(caught.value).startswith("--critic22-scar: ") and "\n" not in str(caught.value)


def test_scar_findings_are_blocking_and_never_the_critics(tmp_path: Path) -> None:
    from pytest_critic22.config.inputs import read_scar
    from pytest_critic22.pipeline.review import scar_findings

    (tmp_path / "scar.json").write_text(
        json.dumps([{"id": "R1-F1", "claim": "c", "test": "def test_a():\n    assert 1\n"}])
    )
    (routed,) = scar_findings(read_scar("scar.json", tmp_path))
    assert routed.item_name == "S1[whole-patch]" and routed.blocking
    assert routed.procedure is not None and routed.procedure.kind == "scar"
    assert routed.finding.claim == "scar tissue of R1-F1: c"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--critic22-spec", "spec.md", "p.diff"], "passed on as --critic22-NAME=VALUE"),
        (["p.diff", "tests/test_x.py"], "unexpected 'tests/test_x.py'"),
        (["p.diff", "--critic22-report=x.json"], "the loop's own business"),
        (["p.diff", "--junitxml=x"], "unexpected '--junitxml=x'"),
        (["p.diff", "-o"], "-o needs a value"),
    ],
)
def test_loop_command_line_refuses_what_it_cannot_pass_on(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_critic22.apps.loop.cli import main

    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2 and message in capsys.readouterr().err


def test_loop_command_line_makes_file_values_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import argparse

    from pytest_critic22.apps.loop.cli import _forwarded

    monkeypatch.chdir(tmp_path)
    got = _forwarded(argparse.ArgumentParser(), ["--critic22-spec=@s.md", "-o", "a=b"])
    assert got == (f"--critic22-spec=@{tmp_path / 's.md'}", "-o", "a=b")
