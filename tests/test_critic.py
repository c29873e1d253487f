"""The critic over real HTTP: litellm's openai/ provider against a local recording server."""

from __future__ import annotations

import ast
import json
import time
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


def test_a_verdict_in_the_answer_has_no_effect(pytester: pytest.Pytester, repo: Path) -> None:
    with fake_llm([("content", json.dumps({"verdict": "reject", "findings": []}))]) as server:
        result = run(pytester, server.url)
    assert result.ret == pytest.ExitCode.OK  # --critic22-only, no blocking finding: proceed
    assert report_of(pytester)["disposition"]["verdict"] == "proceed"


def test_blinding_holds_on_the_wire(pytester: pytest.Pytester, repo: Path) -> None:
    request = pytester.path.parent / "request.json"
    request.write_text(
        json.dumps(
            {
                "specification": "median() averages the two middle values. I am 0.93 sure.",
                "generator_rationale": "RATIONALE-PLANTED",
                "self_confidence": 0.93,
                "peer_votes": ["VOTE-PLANTED"],
                "provenance": {"model": "MODEL-PLANTED"},
            }
        )
    )
    with fake_llm([("content", "[]")]) as server:
        run(pytester, server.url, f"--critic22-request={request}")
        (body,) = server.bodies
    for planted in (
        b"RATIONALE-PLANTED",
        b"VOTE-PLANTED",
        b"MODEL-PLANTED",
        b"0.93",
        b"agent@models.example",  # the patch's From: header
        b"Co-authored-by",
        b"95% confident",  # the commit message
        KEY.encode(),
    ):
        assert planted not in body, planted
    assert b"median() averages the two middle values." in body


def packet_of(body: bytes) -> dict[str, Any]:
    """The review packet as the model received it, from a request body."""
    user = json.loads(body)["messages"][1]["content"]
    text = user.split("Review packet (JSON):\n", 1)[1].split("\n\nValid locations:", 1)[0]
    packet: dict[str, Any] = json.loads(text)
    return packet


MEAN = "def mean(values):\n    return sum(values) / max(len(values), 1)\n"
MEDIAN = (
    "def median(values):\n"
    "    if not values:\n"
    '        raise ValueError("median of empty data")\n'
    "\n"
    "    ordered = sorted(values)\n"
    "    mid = len(ordered) // 2\n"
    "    if len(ordered) % 2 == 0:\n"
    "        return (ordered[mid - 1] + ordered[mid]) / 2\n"
    "    return ordered[mid]\n"
)


def test_the_request_shows_the_code_a_test_needs(pytester: pytest.Pytester, repo: Path) -> None:
    """A multi-hunk patch (three edits in two files): the request holds each touched function's
    full source, the fixtures of the sample's tests/conftest.py and a usage example, and the
    prompt says where the critic's test runs."""
    with fake_llm([("content", "[]")]) as server:
        run(pytester, server.url)
        (body,) = server.bodies
    system = json.loads(body)["messages"][0]["content"]
    assert "test_critic22_<id>.py" in system and "conftest.py fixtures" in system
    packet = packet_of(body)
    assert set(packet) == {
        "specification",
        "diagnosed_root_cause",
        "preservation_obligations",
        "impact_evidence",
        "candidate_patch",
    }
    hunks = [e["hunk"] for e in packet["candidate_patch"]["atomic_edits"]]
    assert len(hunks) == 3
    evidence = packet["impact_evidence"]
    sources = {t["symbol"]: t["source"] for t in evidence["touched_source"]}
    assert sources["textstats.stats.mean"] == MEAN
    assert sources["textstats.stats.median"] == MEDIAN
    assert not any("median of empty data" in hunk for hunk in hunks)  # more than the hunk shows
    assert "def test_median_even():" in sources["tests.test_stats.test_median_even"]

    fixtures = evidence["fixtures"]
    assert [f["name"] for f in fixtures["available"]] == ["empty", "even_values"]
    assert fixtures["available"][0]["scope"] == "session"  # name= and scope= honoured
    assert fixtures["conftests"] == ["tests/conftest.py"]
    assert fixtures["test_file"] == "tests/test_critic22_<finding id>.py"
    assert "tmp_path" in fixtures["builtin"]

    examples = {e["test"]: e for e in evidence["usage_examples"]}
    assert examples["tests/test_stats.py::test_mean"]["source"] == (
        "def test_mean():\n    assert mean([1, 2, 3, 4]) == 2.5\n"
    )
    assert examples["tests/test_stats.py::test_mean"]["exercises"] == ["textstats.stats.mean"]
    assert (
        "from textstats import clamp, mean, median, mode"
        in (examples["tests/test_stats.py::test_mean"]["imports"])
    )
    assert "truncated" not in evidence


def test_a_packet_over_the_limit_is_cut_the_same_way_every_run(
    pytester: pytest.Pytester, repo: Path
) -> None:
    limit = 4800  # the full packet of this case is about 5500 characters
    with fake_llm([("content", "[]")]) as server:
        for _ in range(2):
            run(pytester, server.url, f"--critic22-max-packet-chars={limit}", "--critic22-fresh")
        first, second = server.bodies
    assert first == second
    packet = packet_of(first)
    canonical = json.dumps(packet, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert len(canonical) <= limit
    evidence = packet["impact_evidence"]
    assert evidence["truncated"].startswith("usage examples dropped")
    assert "usage_examples" in evidence and len(evidence["usage_examples"]) < 2
    assert {t["symbol"]: t["source"] for t in evidence["touched_source"]}[
        "textstats.stats.median"
    ] == MEDIAN  # cut last
    events = read_events(repo / ".critic22" / "ledger.jsonl")
    digests = [e["payload"]["packet_digest"] for e in events if e["event"] == "impact"]
    truncated = [e["payload"]["truncated"] for e in events if e["event"] == "impact"]
    assert len(digests) == 2 and digests[0] == digests[1]
    assert truncated[0] == truncated[1] == evidence["truncated"]


def test_malformed_records_are_re_asked_within_the_bound_then_retired(
    pytester: pytest.Pytester, repo: Path
) -> None:
    bad = json.dumps([{**GOOD_RECORD, "severity": "critical", "claim": "FIRST-ANSWER-CLAIM"}])
    with fake_llm([("content", bad)]) as server:
        run(pytester, server.url, "-o", "critic22_retries=2")
        requests = server.requests
    assert len(requests) == 3  # one call plus two re-asks, never more
    retry = requests[1]["messages"][-1]["content"]
    assert "severity 'critical' is not 'blocking' or 'advisory'" in retry
    assert "FIRST-ANSWER-CLAIM" not in retry  # fresh context: no earlier findings as votes
    document = report_of(pytester)
    assert document["critic"]["calls"] == 3
    assert [r["reason"] for r in document["rejected"]] == [
        "severity 'critical' is not 'blocking' or 'advisory'"
    ]


def test_a_re_ask_that_succeeds_is_used(pytester: pytest.Pytester, repo: Path) -> None:
    with fake_llm([("content", "no json at all"), ("content", json.dumps([GOOD_RECORD]))]) as s:
        result = run(pytester, s.url)
        assert len(s.bodies) == 2
    result.assert_outcomes(failed=1)


CONTEXT_TOO_LONG = {
    "error": {
        "message": "This model's maximum context length is 8192 tokens.",
        "type": "invalid_request_error",
        "code": "context_length_exceeded",
    }
}


@pytest.mark.parametrize(
    ("behaviour", "cause"),
    [
        (("status", 500, {"error": {"message": "boom"}}), "HTTP 500"),
        (("status", 429, {"error": {"message": "slow down"}}), "rate limited"),
        (("status", 400, CONTEXT_TOO_LONG), "context too long"),
        (("sleep", 600, "[]"), "timeout"),  # endless next to the 4 s deadline
        (("close",), ""),
        (("content", ""), "empty output"),
        (("content", "I think the patch is fine."), "unusable output"),
    ],
    ids=["5xx", "rate-limit", "context", "timeout", "dropped", "empty", "prose"],
)
def test_every_failure_is_an_empty_l_column_not_a_broken_run(
    pytester: pytest.Pytester, repo: Path, behaviour: tuple[Any, ...], cause: str
) -> None:
    with fake_llm([behaviour]) as server:
        start = time.monotonic()
        result = run(
            pytester, server.url, "--critic22-critic-timeout=4", "-o", "critic22_retries=0"
        )
        elapsed = time.monotonic() - start
    assert result.ret == pytest.ExitCode.OK  # no findings, review-only: proceed
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(
        [f"critic: WARNING openai/critic-test gave no usable answer — *{cause}*"]
    )
    document = report_of(pytester)
    assert document["critic"]["absent"] is True and cause in document["critic"]["reason"]
    events = read_events(repo / ".critic22" / "ledger.jsonl")
    (critic,) = [e["payload"] for e in events if e["event"] == "critic"]
    assert critic["absent"] is True
    # A hang bound, not a speed claim: the deadline ended the call, not the server's 600 s.
    assert elapsed < 300
    assert KEY not in (repo / ".critic22" / "ledger.jsonl").read_text()


def test_connection_refused_is_an_empty_l_column(pytester: pytest.Pytester, repo: Path) -> None:
    with fake_llm([("content", "[]")]) as server:
        url = server.url  # the port is closed once the server is gone
    result = run(pytester, url, "--critic22-critic-timeout=10")
    result.stdout.fnmatch_lines(["critic: WARNING * — connection failed*"])


def test_a_saved_trace_replays_to_the_same_outcomes(pytester: pytest.Pytester, repo: Path) -> None:
    answer = json.dumps([GOOD_RECORD, {**GOOD_RECORD, "location": "e3", "claim": "other"}])
    with fake_llm([("content", answer)]) as server:
        run(pytester, server.url)
    live = report_of(pytester)
    (response,) = (repo / ".critic22" / "traces").glob("*/response-1.txt")
    request = json.loads(response.with_name("request-1.json").read_text())
    assert request["model"] == "openai/critic-test" and request["messages"][0]["role"] == "system"
    assert KEY not in response.with_name("request-1.json").read_text()
    pytester.runpytest_subprocess(
        f"--critic22={DROPS / 'patch.diff'}",
        f"--critic22-findings={response}",
        "--critic22-only",
        "--critic22-reruns=1",
        "--critic22-preservation=off",
        f"--critic22-report={pytester.path.parent / 'report.json'}",
    )
    replayed = report_of(pytester)
    assert [(f["id"], f["outcome"]) for f in replayed["findings"]] == [
        (f["id"], f["outcome"]) for f in live["findings"]
    ]


def test_an_identical_packet_reuses_the_cached_answer_unless_fresh(
    pytester: pytest.Pytester, repo: Path
) -> None:
    with fake_llm([("content", json.dumps([GOOD_RECORD]))]) as server:
        run(pytester, server.url)
        run(pytester, server.url).stdout.fnmatch_lines(["critic: * (cached answer, *"])
        assert len(server.bodies) == 1
        run(pytester, server.url, "--critic22-fresh")
        assert len(server.bodies) == 2


@pytest.mark.parametrize(
    ("env", "args", "reason"),
    [
        ({"CRITIC": "off"}, [], "CRITIC=off in the environment"),
        ({}, ["--critic22-engage=never"], "--critic22-engage=never"),
    ],
)
def test_the_critic_off_arm_sends_nothing(
    pytester: pytest.Pytester,
    repo: Path,
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str],
    args: list[str],
    reason: str,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with fake_llm([("content", json.dumps([GOOD_RECORD]))]) as server:
        result = run(pytester, server.url, *args)
        assert server.bodies == []
    result.stdout.fnmatch_lines([f"critic: not engaged — {reason}"])


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
