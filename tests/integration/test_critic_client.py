"""The critic client in one process.

The integration tier: with real git and sandboxed child processes. The rest, and the whole story:
tests/unit/test_critic_client.py.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_critic22.checks import REGISTRY
from pytest_critic22.critic.critic import litellm_completion
from pytest_critic22.execution.git import head_commit
from pytest_critic22.execution.ledger import Ledger, read_events
from pytest_critic22.execution.sandbox import resolve
from pytest_critic22.execution.trees import TreeSet
from pytest_critic22.kinds import builtin_kinds
from pytest_critic22.model.packet import ReviewPacket
from pytest_critic22.pipeline.evidence import gather_evidence
from pytest_critic22.pipeline.services import Services
from tests.fake_llm import fake_llm
from tests.unit.test_critic_client import (
    _api_key,  # noqa: F401  (a fixture)
    ask,
    inputs_of,
    system,  # noqa: F401  (a fixture)
    textstats,  # noqa: F401  (a fixture)
)


def packet_of(body: bytes) -> dict[str, Any]:
    """The review packet as the model received it, from a request body."""
    user = json.loads(body)["messages"][1]["content"]
    text = user.split("Review packet (JSON):\n", 1)[1].split("\n\nValid locations:", 1)[0]
    packet: dict[str, Any] = json.loads(text)
    return packet


@pytest.fixture
def evidence_packet(textstats: Path, tmp_path: Path) -> Iterator[Any]:
    """The packet the plugin sends for the case: impact evidence gathered over fresh real
    worktrees of the sample (a new tree set and graph cache per call), bounded to
    ``max_packet_chars``. Returns (packet, ledger path)."""
    made: list[TreeSet] = []

    def build(**options: Any) -> tuple[ReviewPacket, Path]:
        run_id = f"test-{uuid.uuid4().hex[:8]}"
        folder = tmp_path / run_id
        opts, inputs = inputs_of(textstats, **options)
        trees = TreeSet(textstats, head_commit(textstats), run_id)
        made.append(trees)
        ledger = Ledger(folder / "ledger.jsonl", run_id)
        services = Services(
            repo=textstats,
            trees=trees,
            ledger=ledger,
            sandbox=resolve("rlimits"),
            kinds=builtin_kinds(),
            checks=REGISTRY,
            state_dir=lambda: folder / "state",
            make_completion=litellm_completion,
        )
        evidence = gather_evidence(opts, inputs.patch, inputs.packet, services, with_coverage=False)
        assert not [n for n in evidence.notes if "unavailable" in n], evidence.notes
        return evidence.packet, ledger.path

    yield build
    for trees in made:
        trees.remove_all()


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


def test_the_request_shows_the_code_a_test_needs(
    evidence_packet: Any, tmp_path: Path, system: str
) -> None:
    """A multi-hunk patch (three edits in two files): the request holds each touched function's
    full source, the fixtures of the sample's tests/conftest.py and a usage example, and the
    prompt says where the critic's test runs."""
    packet, _ = evidence_packet()
    _, inputs = inputs_of(tmp_path)
    with fake_llm([("content", "[]")]) as server:
        ask(server, packet, inputs.patch, tmp_path / "state", system)
        (body,) = server.bodies
    system_sent = json.loads(body)["messages"][0]["content"]
    assert system_sent == system
    assert "test_critic22_<id>.py" in system_sent and "conftest.py fixtures" in system_sent
    wire = packet_of(body)
    assert set(wire) == {
        "specification",
        "diagnosed_root_cause",
        "preservation_obligations",
        "impact_evidence",
        "candidate_patch",
    }
    hunks = [e["hunk"] for e in wire["candidate_patch"]["atomic_edits"]]
    assert len(hunks) == 3
    evidence = wire["impact_evidence"]
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
    evidence_packet: Any, tmp_path: Path, system: str
) -> None:
    full, _ = evidence_packet()
    limit = 4600
    assert len(full.canonical_json()) > limit + 400  # the cut has something to cut
    _, inputs = inputs_of(tmp_path)
    ledgers = []
    with fake_llm([("content", "[]")]) as server:
        for run in range(2):  # fresh trees, a fresh graph cache, a fresh answer cache
            packet, ledger = evidence_packet(max_packet_chars=limit)
            ledgers.append(ledger)
            ask(server, packet, inputs.patch, tmp_path / f"state-{run}", system)
        first, second = server.bodies
    assert first == second
    wire = packet_of(first)
    canonical = json.dumps(wire, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert len(canonical) <= limit
    evidence = wire["impact_evidence"]
    assert evidence["truncated"].startswith("usage examples dropped")
    assert "usage_examples" in evidence and len(evidence["usage_examples"]) < 2
    assert {t["symbol"]: t["source"] for t in evidence["touched_source"]}[
        "textstats.stats.median"
    ] == MEDIAN  # cut last
    impacts = [
        e["payload"] for path in ledgers for e in read_events(path) if e["event"] == "impact"
    ]
    assert len(impacts) == 2
    assert impacts[0]["packet_digest"] == impacts[1]["packet_digest"]
    # The digest the ledger records is the packet that went on the wire.
    text = json.loads(first)["messages"][1]["content"].split("Review packet (JSON):\n", 1)[1]
    text = text.split("\n\nValid locations:", 1)[0]
    assert impacts[0]["packet_digest"] == "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    assert impacts[0]["truncated"] == impacts[1]["truncated"] == evidence["truncated"]
