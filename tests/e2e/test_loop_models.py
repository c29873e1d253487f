"""``hard`` and ``nightmare`` against a loopback OpenAI-compatible server through litellm:
the debate turn, the fixer and the second critic are separate recorded requests, only
execution changes an outcome, and nothing the author wrote reaches any request.

Each review that asks a model is a pytest child that imports litellm, the costliest step
here: ``nightmare`` asks the model for both critics in both rounds, and so also carries the
first critic's own requests (its memory, the review's independence); ``hard`` replays its
critic's findings (``findings_dir``), its subject being the debate turn and the fixer, which
the loop itself asks over HTTP."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_critic22.apps.loop import state
from pytest_critic22.apps.loop.driver import run_loop
from pytest_critic22.apps.loop.options import LoopOptions
from pytest_critic22.apps.samples import SAMPLES_DIR, materialize
from tests.fake_llm import fake_llm

pytestmark = pytest.mark.e2e

CASE = SAMPLES_DIR / "textstats" / "loops" / "repair-then-acquit"
MODEL = "openai/critic-test"
#: What the author wrote in the patch's message: none of it may reach a request.
AUTHOR = ("I am 95% confident", "Co-authored-by", "Generated-by", "Patch Agent", "model-x")
GUARD_FIX = """\
--- a/textstats/stats.py
+++ b/textstats/stats.py
@@ -8,2 +8,4 @@
 def mean(values):
+    if not values:
+        raise ValueError("mean of empty data")
     return sum(values) / max(len(values), 1)
"""


def _finding(claim: str, falsification: str, location: str = "e2") -> dict[str, Any]:
    return {
        "location": location,
        "claim": claim,
        "severity": "blocking",
        "evidence": "e2 rewrites mean()",
        "falsification": falsification,
        "confidence": 0.5,
    }


def _answer(*findings: dict[str, Any], memory: str = "") -> tuple[str, str]:
    body: dict[str, Any] = {"findings": list(findings)}
    if memory:
        body["memory_update"] = memory
    return ("content", json.dumps(body))


F1 = json.loads((CASE / "round-1.json").read_text())[0]
EMPTY_NOT_SIGNALLED = (
    "test:\nfrom textstats import mean\n\ndef test_one():\n    assert mean([2]) == 2\n"
)
REVISED = (
    "test:\nimport pytest\nfrom textstats import mean\n\ndef test_empty_is_signalled():\n"
    "    with pytest.raises(ValueError, match='empty'):\n        mean([])\n"
)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    return materialize("textstats", tmp_path / "repo")


def _contents(request: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in request["messages"])


def _no_author_text(requests: list[dict[str, Any]]) -> None:
    for request in requests:
        text = _contents(request)
        for words in AUTHOR:
            assert words not in text, words


def test_hard_debate_and_fixer_are_separate_requests_decided_by_execution(
    repo: Path, tmp_path: Path
) -> None:
    # The critic, replayed: round 1, F1 verified (with a repair) and F2, whose test is wrong
    # (refuted); round 2, nothing new.
    critic = tmp_path / "critic"
    critic.mkdir()
    wrong_test = _finding("mean([]) no longer signals empty data", EMPTY_NOT_SIGNALLED)
    (critic / "round-1.json").write_text(json.dumps({"findings": [F1, wrong_test]}))
    (critic / "round-2.json").write_text(json.dumps({"findings": [], "memory_update": "none"}))
    script = [
        # the debate turn on F2: a revision, which is executed
        (
            "content",
            json.dumps({"ruling": "revise", "argument": "wrong test", "falsification": REVISED}),
        ),
        # the fixer, for F2 (verified by the revision, no repair)
        ("content", "```diff\n" + GUARD_FIX + "```"),
    ]
    with fake_llm(script) as server:
        opts = LoopOptions(
            repo=repo,
            patch=CASE / "patch.diff",
            findings_dir=critic,
            model=MODEL,
            api_base=server.url,
            fixer_model="openai/fixer-test",
            difficulty="hard",
            max_rounds=2,
            plugin_args=("--critic22-reruns=1",),
        )
        result = run_loop(opts, out=io.StringIO())
        requests = server.requests
    # no second critic in hard: the debate turn and the fixer are the only requests
    assert len(requests) == 2, [r["model"] for r in requests]
    debate, fixer = requests
    assert debate["model"] == "critic-test" and "Rule on it" in debate["messages"][0]["content"]
    assert "mean([]) no longer signals empty data" in _contents(debate)
    assert "--- patched tree" in _contents(debate)  # the decisive output of both trees
    assert fixer["model"] == "fixer-test" and "smallest fix" in fixer["messages"][0]["content"]
    _no_author_text(requests)
    one = result.rounds[0]
    assert one.critic_source == "replay"
    (turn,) = one.debate
    assert (turn.finding_id, turn.before, turn.ruling, turn.after) == (
        "F2",
        "refuted",
        "revise",
        "verified",
    )
    f2 = next(i for i in one.items if i.id == "F2")
    assert f2.source == "debate" and f2.status == "verified"
    assert {(f.finding_id, f.origin, f.status) for f in one.fixes} == {
        ("F1", "repair", "applied"),
        ("F2", "fixer", "skipped"),  # the same guard: no longer applies after F1's repair
    }
    assert result.status == "acquitted" and result.rounds[1].score == 10
    stage = repo / state.STAGE
    assert "### Debate Transcript" in (stage / "AUTO_REVIEW.md").read_text()
    traces = repo / ".critic22" / "traces" / one.trace_id
    assert (traces / "debate-F2.request.json").is_file()
    assert (traces / "fixer-F2.response.txt").is_file()


def test_nightmare_second_critic_reads_whole_modules_fresh_while_the_first_remembers(
    repo: Path, subtests: pytest.Subtests
) -> None:
    script = [
        _answer(F1),  # round 1: the critic
        _answer(),  # round 1: the second critic
        _answer(memory="guard is back"),  # round 2: the critic
        _answer(),  # round 2: the second critic
    ]
    with fake_llm(script) as server:
        opts = LoopOptions(
            repo=repo,
            patch=CASE / "patch.diff",
            model=MODEL,
            api_base=server.url,
            second_model="openai/second-test",
            # never asked (F1 comes with its repair): only the review's independence reads it
            fixer_model="openai/fixer-test",
            author_model="anthropic/claude-x",
            difficulty="nightmare",
            plugin_args=("--critic22-reruns=1",),
        )
        result = run_loop(opts, out=io.StringIO())
        requests = server.requests
    assert [r["model"] for r in requests] == ["critic-test", "second-test"] * 2
    first, second, again, second_again = requests
    with subtests.test("the second critic reads whole modules in a fresh context"):
        for fresh in (second, second_again):
            text = _contents(fresh)
            assert "## Full source of the touched modules" in text
            assert "def clamp(" in text  # the whole module, not only the hunks
            assert "Your Reviewer Memory" not in text
    with subtests.test("the first critic reads the hunks, and its memory from round 2 on"):
        assert "## Full source" not in _contents(first)
        assert "## Full source" not in _contents(again)
        assert "Your Reviewer Memory" not in _contents(first)
        assert "Your Reviewer Memory" in _contents(again)
    with subtests.test("nothing the author wrote reaches any request"):
        _no_author_text(requests)
    with subtests.test("acquitted after round 1's repair, both critics' answers traced"):
        assert result.status == "acquitted" and [r.score for r in result.rounds] == [2, 10]
        traces = repo / ".critic22" / "traces" / result.rounds[0].trace_id
        assert (traces / "second-critic.critic" / "answer.txt").is_file()
        assert (traces / "review.critic" / "answer.txt").is_file()
        assert result.rounds[0].second_raw.strip().startswith("{")
    with subtests.test("an anthropic author, but a fixer of the critic's family: provisional"):
        one = result.rounds[0]
        assert one.review_independence == "same-family"
        assert one.acceptance_status == "provisional"


def test_hard_with_a_recorded_critic_from_the_command_line_keeps_the_model(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``critic22 loop … --critic22-findings DIR --difficulty hard --critic22-model M``: the
    recorded critic replaces the first critic only; the debate turn asks M (issue 43: the
    command line dropped M and refused, "needs --critic22-model", exit 2)."""
    from pytest_critic22.apps.loop.cli import main

    critic = tmp_path / "critic"
    critic.mkdir()
    wrong_test = _finding("mean([]) no longer signals empty data", EMPTY_NOT_SIGNALLED)
    (critic / "round-1.json").write_text(json.dumps({"findings": [wrong_test]}))
    ruling = {"ruling": "keep", "argument": "the guard is gone", "falsification": ""}
    with fake_llm([("content", json.dumps(ruling))]) as server:
        monkeypatch.chdir(repo)
        status = main(
            [
                str(CASE / "patch.diff"),
                f"--critic22-findings={critic}",
                "--difficulty=hard",
                f"--critic22-model={MODEL}",
                f"--critic22-api-base={server.url}",
                "--max-rounds=1",
                "--critic22-reruns=1",
            ]
        )
        requests = server.requests
    out = capsys.readouterr()
    # max rounds with the regression preservation verified: not acquitted, not a usage error
    assert status == 1, out.err
    (debate,) = requests
    assert debate["model"] == "critic-test" and "Rule on it" in debate["messages"][0]["content"]
    record = json.loads(
        next((repo / state.STAGE / "runs").glob("*/round-1/record.json")).read_text()
    )
    assert record["critic_source"] == "replay"
    assert [(t["finding_id"], t["ruling"]) for t in record["debate"]] == [("F1", "keep")]
