"""The critic in the plugin, end to end: litellm's openai/ provider against a local recording
server, from a real `pytest --critic22` run.

Only what needs the plugin is here (one request per run serial and under xdist, its findings
as items; the critic-off arm; a failure's summary line). The client's retries, cache, failure
mapping, packet cutting and blinding are checked in one process, over the same HTTP, in
tests/test_critic_client.py.
"""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

import pytest_critic22
from pytest_critic22.ledger import read_events
from pytest_critic22.samples import case_dir
from tests.e2e import make_sample
from tests.fake_llm import fake_llm

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning"),
]

DROPS = case_dir("textstats", "median-drops-guard")
GOOD_RECORD = {
    "location": "e2",
    "claim": "mean() of empty input no longer raises ValueError.",
    "severity": "blocking",
    "evidence": "e2 deletes the guard.",
    "falsification": "test:\nimport pytest\nfrom textstats import mean\n\n"
    "def test_empty():\n    with pytest.raises(ValueError):\n        mean([])\n",
    "confidence": 0.7,
}
KEY = "sk-planted-api-key-0123456789"


@pytest.fixture
def repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("CRITIC", raising=False)
    monkeypatch.delenv("CRITIC22_MODEL", raising=False)
    return make_sample(pytester, "textstats")


def run(pytester: pytest.Pytester, url: str, *extra: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        f"--critic22={DROPS / 'patch.diff'}",
        "--critic22-model=openai/critic-test",
        f"--critic22-api-base={url}",
        "--critic22-only",
        "--critic22-reruns=1",
        "--critic22-preservation=off",  # this patch's regression would be caught without a critic
        f"--critic22-report={pytester.path.parent / 'report.json'}",
        *extra,
    )


def report_of(pytester: pytest.Pytester) -> dict[str, Any]:
    return json.loads((pytester.path.parent / "report.json").read_text())


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_exactly_one_request_per_run_and_its_findings_become_items(
    pytester: pytest.Pytester, repo: Path, xdist: list[str]
) -> None:
    answer = json.dumps({"findings": [GOOD_RECORD]})
    with fake_llm([("content", answer)]) as server:
        result = run(pytester, server.url, *xdist)
        assert len(server.bodies) == 1
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["critic: openai/critic-test (1 call(s), 120 tokens, prompt critic-v3)"]
    )
    document = report_of(pytester)
    assert document["critic"]["calls"] == 1 and document["critic"]["source"] == "model"
    assert document["disposition"]["verdict"] == "reject"
    # The wiring: the packet on the wire carries the gathered evidence, and it is the packet
    # the ledger recorded.
    user = json.loads(server.bodies[0])["messages"][1]["content"]
    text = user.split("Review packet (JSON):\n", 1)[1].split("\n\nValid locations:", 1)[0]
    sources = {t["symbol"] for t in json.loads(text)["impact_evidence"]["touched_source"]}
    assert {"textstats.stats.mean", "textstats.stats.median"} <= sources
    events = read_events(repo / ".critic22" / "ledger.jsonl")
    (impact,) = [e["payload"] for e in events if e["event"] == "impact"]
    assert impact["packet_digest"] == "sha256:" + hashlib.sha256(text.encode()).hexdigest()


FAILED_CALL = ("status", 500, {"error": {"message": "boom"}})


def test_a_failed_call_is_an_empty_l_column_and_the_summary_says_why(
    pytester: pytest.Pytester, repo: Path
) -> None:
    """The plugin's side of a failure (each kind of failure and its cause are checked in one
    process in tests/test_critic_client.py): no findings, the run proceeds, the summary line
    warns with the cause, and the report and the ledger record it without the key."""
    with fake_llm([FAILED_CALL]) as server:
        result = run(pytester, server.url, "-o", "critic22_retries=0")
        assert len(server.bodies) == 1
    assert result.ret == pytest.ExitCode.OK  # no findings, review-only: proceed
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(
        ["critic: WARNING openai/critic-test gave no usable answer — *HTTP 500*"]
    )
    document = report_of(pytester)
    assert document["critic"]["absent"] is True and "HTTP 500" in document["critic"]["reason"]
    assert document["findings"] == [] and document["disposition"]["verdict"] == "proceed"
    events = read_events(repo / ".critic22" / "ledger.jsonl")
    (critic,) = [e["payload"] for e in events if e["event"] == "critic"]
    assert critic["absent"] is True
    assert KEY not in (repo / ".critic22" / "ledger.jsonl").read_text()


def test_the_critic_off_arm_sends_nothing(
    pytester: pytest.Pytester, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CRITIC=off in the child's environment, with a model configured: no request at all
    (--critic22-engage=never is run end to end in tests/test_impact.py)."""
    monkeypatch.setenv("CRITIC", "off")
    with fake_llm([("content", json.dumps([GOOD_RECORD]))]) as server:
        result = run(pytester, server.url)
        assert server.bodies == []
    result.stdout.fnmatch_lines(["critic: not engaged — CRITIC=off in the environment"])
    result.assert_outcomes()
    assert report_of(pytester)["critic"]["engaged"] is False


def test_engage_always_without_a_model_is_a_usage_error(
    pytester: pytest.Pytester, repo: Path
) -> None:
    result = pytester.runpytest(f"--critic22={DROPS / 'patch.diff'}", "--critic22-engage=always")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --critic22-engage=always needs a critic*"])


def test_only_critic_py_imports_the_model_client() -> None:
    package = Path(pytest_critic22.__file__).parent
    importers = set()
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(n.split(".")[0] in ("litellm", "openai", "anthropic") for n in names):
                importers.add(path.name)
    assert importers == {"critic.py"}


def test_the_critic_has_no_accept_or_reject_action() -> None:
    from pytest_critic22 import critic

    public = [name for name in dir(critic) if not name.startswith("_")]
    for word in ("accept", "reject", "approve", "verdict", "veto"):
        assert not [name for name in public if word in name.lower()]
    assert set(critic.CriticRun.__dataclass_fields__) == {
        "raw",
        "parsed",
        "attempts",
        "failure",
        "cached",
        "prompt_version",
    }
