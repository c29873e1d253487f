"""``hard`` and ``nightmare`` against a loopback OpenAI-compatible server through litellm:
the debate turn, the fixer and the second critic are separate recorded requests, only
execution changes an outcome, and nothing the author wrote reaches any request."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_critic22.reviewloop import state
from pytest_critic22.reviewloop.driver import run_loop
from pytest_critic22.reviewloop.model import LoopOptions
from pytest_critic22.samples import SAMPLES_DIR, materialize
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


def test_hard_debate_and_fixer_are_separate_requests_decided_by_execution(repo: Path) -> None:
    script = [
        # round 1: the critic — F1 verified (with a repair), F2's test is wrong (refuted)
        _answer(F1, _finding("mean([]) no longer signals empty data", EMPTY_NOT_SIGNALLED)),
        # the debate turn on F2: a revision, which is executed
        (
            "content",
            json.dumps({"ruling": "revise", "argument": "wrong test", "falsification": REVISED}),
        ),
        # the fixer, for F2 (verified by the revision, no repair)
        ("content", "```diff\n" + GUARD_FIX + "```"),
        # round 2: the critic, with its memory
        _answer(memory="nothing new"),
    ]
    with fake_llm(script) as server:
        opts = LoopOptions(
            repo=repo,
            patch=CASE / "patch.diff",
            model=MODEL,
            api_base=server.url,
            fixer_model="openai/fixer-test",
            author_model="anthropic/claude-x",
            difficulty="hard",
            max_rounds=2,
            plugin_args=("--critic22-reruns=1",),
        )
        result = run_loop(opts, out=io.StringIO())
        requests = server.requests
    assert len(requests) == 4, [r["model"] for r in requests]
    critic, debate, fixer, again = requests
    assert "Rule on it" in debate["messages"][0]["content"]
    assert "mean([]) no longer signals empty data" in _contents(debate)
    assert "--- patched tree" in _contents(debate)  # the decisive output of both trees
    assert fixer["model"] == "fixer-test" and "smallest fix" in fixer["messages"][0]["content"]
    assert "Your Reviewer Memory" in _contents(again)
    assert "Your Reviewer Memory" not in _contents(critic)
    _no_author_text(requests)
    one = result.rounds[0]
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
    # an anthropic author, but the fixer is of the critic's own family
    assert one.review_independence == "same-family"
    assert one.acceptance_status == "provisional"
    assert result.status == "acquitted" and result.rounds[1].score == 10
    stage = repo / state.STAGE
    assert "### Debate Transcript" in (stage / "AUTO_REVIEW.md").read_text()
    traces = repo / ".critic22" / "traces" / one.trace_id
    assert (traces / "debate-F2.request.json").is_file()
    assert (traces / "fixer-F2.response.txt").is_file()


def test_nightmare_second_critic_reads_whole_modules_in_a_fresh_context(repo: Path) -> None:
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
            difficulty="nightmare",
            plugin_args=("--critic22-reruns=1",),
        )
        result = run_loop(opts, out=io.StringIO())
        requests = server.requests
    assert [r["model"] for r in requests] == ["critic-test", "second-test"] * 2
    first, second, again, second_again = requests
    for fresh in (second, second_again):
        text = _contents(fresh)
        assert "## Full source of the touched modules" in text
        assert "def clamp(" in text  # the whole module, not only the hunks
        assert "Your Reviewer Memory" not in text
    assert "## Full source" not in _contents(first)
    assert "Your Reviewer Memory" in _contents(again)
    _no_author_text(requests)
    assert result.status == "acquitted" and [r.score for r in result.rounds] == [2, 10]
    traces = repo / ".critic22" / "traces" / result.rounds[0].trace_id
    assert (traces / "second-critic.critic" / "answer.txt").is_file()
    assert (traces / "review.critic" / "answer.txt").is_file()
    assert result.rounds[0].second_raw.strip().startswith("{")
