"""Bad input and unwritable outputs: one ``ERROR:`` line, exit status 4, nothing left behind.

Each case is checked before any worktree is built, so a refused run registers no worktree,
leaves no run folder in the temp dir, and creates no file in the repository.
"""

from __future__ import annotations

import inspect
import json
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_critic22.config.inputs import InputError, decode_utf8
from pytest_critic22.critic.finding import parse_findings
from pytest_critic22.execution.ledger import folder_write_problem, write_problem
from pytest_critic22.model.packet import build_packet
from pytest_critic22.model.patch import parse_patch

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")


PATCH = b"--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n"


def test_decode_utf8_counts_lines_and_character_columns_from_one() -> None:
    assert decode_utf8("é\n".encode(), "x") == "é\n"
    with pytest.raises(InputError, match=r"^f line 1 is not valid UTF-8 \(byte 0xfe at column 1\)"):
        decode_utf8(b"\xfe", "f")
    with pytest.raises(InputError, match=r"f line 3 .* \(byte 0xe9 at column 4\); re-encode it"):
        decode_utf8(b"a\n\nb" + "é".encode() + b"c\xe9d\n", "f", "it")


def test_undecodable_repository_text_in_the_evidence_still_has_a_digest() -> None:
    patch = parse_patch(PATCH.decode())
    latin1 = b"caf\xe9".decode("utf-8", "surrogateescape")  # as evidence.py reads a file
    packet, _ = build_packet(patch, impact_evidence={"snippet": latin1})
    plain, _ = build_packet(patch, impact_evidence={"snippet": "cafe"})
    assert packet.digest.startswith("sha256:") and packet.digest != plain.digest


def test_write_problem_finds_out_by_writing_and_leaves_nothing_behind(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "report.json"
    assert write_problem(target) is None
    assert list(tmp_path.iterdir()) == []  # neither the file nor the folders it made
    existing = tmp_path / "ledger.jsonl"
    existing.write_text('{"kept": true}\n')
    assert write_problem(existing) is None
    assert existing.read_text() == '{"kept": true}\n'
    assert folder_write_problem(tmp_path) is None
    assert [p.name for p in tmp_path.iterdir()] == ["ledger.jsonl"]


def test_write_problem_says_what_is_in_the_way(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    assert (
        write_problem(tmp_path / "f" / "g" / "h.json")
        == f"{tmp_path / 'f'} is a file, not a folder"
    )
    assert write_problem(tmp_path) == f"{tmp_path} is a folder"
    assert folder_write_problem(tmp_path / "f") == f"{tmp_path / 'f'} is a file, not a folder"
    assert [p.name for p in tmp_path.iterdir()] == ["f"]


def advisory(number: int) -> dict[str, object]:
    return {
        "location": "e1",
        "claim": f"claim {number}",
        "severity": "advisory",
        "evidence": "",
        "falsification": "",
        "confidence": 0.5,
    }


def test_ten_thousand_findings_drop_in_one_summary_line() -> None:
    records = [advisory(n) for n in range(10_000)]
    parsed = parse_findings(json.dumps(records), ["e1"], max_findings=20)
    assert len(parsed.findings) == 20
    assert len(parsed.dropped) == 9980  # the detail stays for the JSON report
    assert parsed.dropped_summary() == (
        "9980 records dropped beyond --critic22-max-findings=20 (records 21-10000)",
    )


def test_duplicates_and_the_cap_are_one_line_each() -> None:
    records = [advisory(1), advisory(2), advisory(1), advisory(3), advisory(2), advisory(4)]
    parsed = parse_findings(json.dumps(records), ["e1"], max_findings=2)
    assert parsed.dropped_summary() == (
        "2 records dropped as duplicates of earlier findings (records 3, 5)",
        "2 records dropped beyond --critic22-max-findings=2 (records 4, 6)",
    )
    assert parse_findings(json.dumps(records[:3]), ["e1"]).dropped_summary() == (
        "1 record dropped as a duplicate of an earlier finding (record 3)",
    )
    assert parse_findings(json.dumps(records[:2]), ["e1"]).dropped_summary() == ()


def test_a_ctrl_c_while_the_probe_runs_waits_for_it_then_stops_the_run() -> None:
    """runconfig.end_probe: Ctrl-C reaches the waiting controller; it waits for the probe
    still (its child ends at the same Ctrl-C, its folder is removed), then stops."""
    from pytest_critic22.plugin.runconfig import end_probe

    interrupted, cleaned, ended = threading.Event(), threading.Event(), threading.Event()

    def on_sigint(signum: int, frame: object) -> None:
        interrupted.set()
        raise KeyboardInterrupt

    def probe() -> None:  # the Ctrl-C comes while the controller waits for it
        main = threading.main_thread().ident or 0
        deadline = time.monotonic() + 60
        while not _waiting(sys._current_frames()[main]) and time.monotonic() < deadline:
            time.sleep(0.001)
        signal.pthread_kill(main, signal.SIGINT)
        interrupted.wait(timeout=60)
        time.sleep(0.2)  # still cleaning up: the controller must not be gone yet
        cleaned.set()
        ended.set()

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        threading.Thread(target=probe, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            end_probe(ended)
        assert cleaned.is_set()
    finally:
        signal.signal(signal.SIGINT, previous)


def _waiting(frame: Any) -> bool:
    """The thread of ``frame`` is blocked in ``Condition.wait``'s ``waiter.acquire()`` (a
    signal there leaves the condition's lock as it should be), called by ``end_probe``."""
    lines, first = inspect.getsourcelines(threading.Condition.wait)
    blocking = max(first + i for i, line in enumerate(lines) if line.strip() == "waiter.acquire()")
    if frame is None or (frame.f_code, frame.f_lineno) != (
        threading.Condition.wait.__code__,
        blocking,
    ):
        return False
    while frame is not None and frame.f_code.co_name != "end_probe":
        frame = frame.f_back
    return frame is not None
