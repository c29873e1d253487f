"""The critic client in one process: :func:`pytest_critic22.critic.critic.review` over real HTTP,
through litellm's openai/ provider, against the loopback server of tests/fake_llm.py.

What goes on the wire (blinding, the code a test needs, the cut of an over-long packet), how
many requests one review makes (re-asks bounded by the retries), how every failure becomes no
findings with its cause recorded, the answer cache, and the trace a replay reads. The packets
are the plugin's: the sample case's patch read by :func:`read_inputs`, its impact evidence
gathered over real git worktrees by :func:`gather_evidence`, the system prompt of
:func:`prompt_for`. The plugin's wiring of the same client (one request per run, serial and
under xdist; the critic-off arm; a failure's summary line) is proved end to end in
tests/test_critic.py.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_critic22.apps.samples import case_dir, materialize
from pytest_critic22.checks import REGISTRY
from pytest_critic22.config.inputs import read_text_or_file
from pytest_critic22.config.settings import ReviewOptions
from pytest_critic22.critic.critic import CriticRun, CriticSettings, litellm_completion, review
from pytest_critic22.critic.finding import parse_findings
from pytest_critic22.kinds import builtin_kinds
from pytest_critic22.model.packet import ReviewPacket
from pytest_critic22.model.patch import ParsedPatch
from pytest_critic22.pipeline.review import Inputs, prompt_for, read_inputs
from pytest_critic22.report.terminal import critic_line
from tests.fake_llm import FakeLLM, fake_llm

DROPS = case_dir("textstats", "median-drops-guard")


MODEL = "openai/critic-test"


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


#: Long enough that no machine's load turns an answer into a timeout: only the timeout case
#: has a short deadline, next to a server that never answers in time.
PATIENT = 120.0


@pytest.fixture(autouse=True)
def _api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


@pytest.fixture(scope="module")
def system() -> str:
    """The system prompt the plugin sends: its grammar from the built-in kinds and checks."""
    return prompt_for(builtin_kinds(), REGISTRY)


def inputs_of(folder: Path, **options: Any) -> tuple[ReviewOptions, Inputs]:
    """The case's patch read and blinded exactly as the plugin reads it."""
    opts = ReviewOptions(
        patch=str(DROPS / "patch.diff"),
        invocation_dir=folder,
        rootpath=folder,
        model=MODEL,
        preservation="off",  # as the end-to-end runs: the packet without obligations
        **options,
    )
    return opts, read_inputs(opts)


def ask(
    server: FakeLLM,
    packet: ReviewPacket,
    patch: ParsedPatch,
    state: Path,
    system: str,
    **changes: Any,
) -> CriticRun:
    """One review as the plugin asks it: traces and cache under ``state``."""
    settings = CriticSettings(model=MODEL, api_base=server.url, **{"timeout": PATIENT, **changes})
    return review(
        packet,
        patch.edit_ids,
        settings,
        litellm_completion(settings),
        trace_dir=state / "traces",
        cache_dir=state / "cache",
        system=system,
    )


LITELLM_STAND_IN = """
import gc
COLLECTING = gc.isenabled()  # as the import finds it
suppress_debug_info = telemetry = None
def get_supported_openai_params(model):
    return []
"""


@pytest.mark.parametrize("enabled", [True, False])
def test_litellm_is_imported_with_the_collector_off_and_it_is_back_as_it_was(
    tmp_path: Path, enabled: bool
) -> None:
    """litellm's import runs with the cyclic collector off (a fifth of its CPU); the process
    gets it back as it was, off included. A module of that name stands in for litellm here,
    to see the import from inside: the real one stays loaded for the other tests."""
    import gc
    import sys

    (tmp_path / "litellm.py").write_text(LITELLM_STAND_IN)
    real = sys.modules.pop("litellm", None)
    sys.path.insert(0, str(tmp_path))
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        litellm_completion(CriticSettings(model=MODEL))
        assert gc.isenabled() is enabled
        assert sys.modules["litellm"].COLLECTING is False
    finally:
        (gc.enable if was else gc.disable)()
        sys.path.remove(str(tmp_path))
        sys.modules.pop("litellm", None)
        if real is not None:
            sys.modules["litellm"] = real


def test_blinding_holds_on_the_wire(tmp_path: Path, system: str) -> None:
    request = tmp_path / "request.json"
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
    _, inputs = inputs_of(tmp_path, request=str(request))
    with fake_llm([("content", "[]")]) as server:
        ask(server, inputs.packet, inputs.patch, tmp_path / "state", system)
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
    (trace,) = (tmp_path / "state" / "traces").glob("request-*.json")
    assert KEY not in trace.read_text() and "RATIONALE-PLANTED" not in trace.read_text()


@pytest.fixture(scope="module")
def textstats(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample repository, committed (real git); read only by the tests that use it."""
    return materialize("textstats", tmp_path_factory.mktemp("textstats") / "repo")


def test_malformed_records_are_re_asked_within_the_bound_then_retired(
    tmp_path: Path, system: str
) -> None:
    _, inputs = inputs_of(tmp_path)
    bad = json.dumps([{**GOOD_RECORD, "severity": "critical", "claim": "FIRST-ANSWER-CLAIM"}])
    with fake_llm([("content", bad)]) as server:
        run = ask(server, inputs.packet, inputs.patch, tmp_path, system, retries=2)
        requests = server.requests
    assert len(requests) == 3  # one call plus two re-asks, never more
    assert run.calls == 3
    retry = requests[1]["messages"][-1]["content"]
    assert "severity 'critical' is not 'blocking' or 'advisory'" in retry
    assert "FIRST-ANSWER-CLAIM" not in retry  # fresh context: no earlier findings as votes
    assert run.parsed is not None and run.parsed.findings == ()
    assert [r.reason for r in run.parsed.rejected] == [
        "severity 'critical' is not 'blocking' or 'advisory'"
    ]


def test_a_re_ask_that_succeeds_is_used(tmp_path: Path, system: str) -> None:
    _, inputs = inputs_of(tmp_path)
    good = json.dumps([GOOD_RECORD])
    with fake_llm([("content", "no json at all"), ("content", good)]) as server:
        run = ask(server, inputs.packet, inputs.patch, tmp_path, system)
        assert len(server.bodies) == 2
    assert run.failure == "" and run.raw == good and run.calls == 2
    assert run.parsed is not None
    assert [f.claim for f in run.parsed.blocking] == [GOOD_RECORD["claim"]]


def test_a_verdict_in_the_answer_has_no_effect(tmp_path: Path, system: str) -> None:
    _, inputs = inputs_of(tmp_path)
    answer = json.dumps({"verdict": "reject", "findings": []})
    with fake_llm([("content", answer)]) as server:
        run = ask(server, inputs.packet, inputs.patch, tmp_path, system)
        assert len(server.bodies) == 1
    # An empty findings list, used as such: no failure, no finding, nothing that could reject.
    assert run.failure == "" and run.parsed is not None
    assert run.parsed.findings == () and run.parsed.error == ""
    assert "verdict" not in json.dumps(run.summary())


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
        (("sleep", 600, "[]"), "timeout"),  # endless next to the 2 s deadline
        (("close",), ""),
        (("content", ""), "empty output"),
        (("content", "I think the patch is fine."), "unusable output"),
    ],
    ids=["5xx", "rate-limit", "context", "timeout", "dropped", "empty", "prose"],
)
def test_every_failure_is_an_empty_l_column_not_a_broken_run(
    tmp_path: Path, system: str, behaviour: tuple[Any, ...], cause: str
) -> None:
    _, inputs = inputs_of(tmp_path)
    deadline = {"timeout": 2.0} if cause == "timeout" else {}
    with fake_llm([behaviour]) as server:
        start = time.monotonic()
        run = ask(server, inputs.packet, inputs.patch, tmp_path, system, retries=0, **deadline)
        elapsed = time.monotonic() - start
        assert len(server.bodies) == 1  # retries=0: one request, whatever went wrong
    assert run.failure and cause in run.failure
    assert run.parsed is None or run.parsed.findings == ()
    assert run.summary()["failure"] == run.failure  # what the report and the ledger record
    assert not (tmp_path / "cache").exists()  # a failure is never cached
    # A hang bound, not a speed claim: the deadline ended the call, not the server's 600 s.
    assert elapsed < 300
    for trace in (tmp_path / "traces").iterdir():
        assert KEY not in trace.read_text()


def test_connection_refused_is_an_empty_l_column(tmp_path: Path, system: str) -> None:
    _, inputs = inputs_of(tmp_path)
    with fake_llm([("content", "[]")]) as closed:
        pass  # the port is closed once the server is gone
    run = ask(closed, inputs.packet, inputs.patch, tmp_path, system)
    assert closed.bodies == []
    assert run.failure.startswith("connection failed") and run.raw is None and run.calls == 1


def test_a_saved_trace_replays_to_the_same_findings(tmp_path: Path, system: str) -> None:
    """The trace's response is a findings file: --critic22-findings reads it (the same
    function, the same parser) into the findings, and the routes, of the live answer."""
    _, inputs = inputs_of(tmp_path)
    answer = json.dumps([GOOD_RECORD, {**GOOD_RECORD, "location": "e3", "claim": "other"}])
    with fake_llm([("content", answer)]) as server:
        live = ask(server, inputs.packet, inputs.patch, tmp_path, system)
    (response,) = (tmp_path / "traces").glob("response-1.txt")
    request = json.loads(response.with_name("request-1.json").read_text())
    assert request["model"] == MODEL and request["messages"][0]["role"] == "system"
    assert request["messages"] == json.loads(server.bodies[0])["messages"]
    assert KEY not in response.with_name("request-1.json").read_text()
    raw = read_text_or_file("@" + str(response), "--critic22-findings", tmp_path)
    assert raw == answer
    replayed = parse_findings(raw, inputs.patch.edit_ids)
    assert live.parsed is not None and len(live.parsed.findings) == 2
    assert replayed.findings == live.parsed.findings
    assert replayed.routes == live.parsed.routes


def test_an_identical_packet_reuses_the_cached_answer_unless_fresh(
    tmp_path: Path, system: str
) -> None:
    _, inputs = inputs_of(tmp_path)
    with fake_llm([("content", json.dumps([GOOD_RECORD]))]) as server:
        first = ask(server, inputs.packet, inputs.patch, tmp_path, system)
        again = ask(server, inputs.packet, inputs.patch, tmp_path, system)
        assert len(server.bodies) == 1
        fresh = ask(server, inputs.packet, inputs.patch, tmp_path, system, fresh=True)
        assert len(server.bodies) == 2
    assert not first.cached and again.cached and not fresh.cached
    assert again.raw == first.raw and again.calls == 0
    assert again.parsed is not None and len(again.parsed.findings) == 1
    line = critic_line({"engaged": True, "source": "model", "model": MODEL, **again.summary()})
    assert line.startswith(f"critic: {MODEL} (cached answer, ")
