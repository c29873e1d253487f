"""The small fail-closed fixes, on real files, links and processes.

A symbolic link inside ``.critic22/`` is one clear error and never a write outside the
repository; ``apply FILE`` at the loop's checkpoint reads only a regular file of bounded
size (and asks again otherwise); Ctrl-C in ``critic22 loop`` is one line, exit status 130,
and a state the same command resumes from; ``--jobs`` below 1 is a usage error.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from pytest_critic22.apps.loop import state
from pytest_critic22.apps.loop.checkpoint import MAX_DIFF_BYTES, Reply, ask, read_diff
from pytest_critic22.critic.critic import _read_cache, _write_cache
from pytest_critic22.execution.ledger import Ledger, ensure_state_dir, write_problem
from pytest_critic22.execution.statedir import StateLinkError, make_folder, write_file

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="symbolic links, FIFOs, os.openpty"),
    pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning"),
]


#: Each link case: the link's path in the repository, and whether it names a folder.
LINKS = {
    ".critic22": True,
    ".critic22/ledger.jsonl": False,
    ".critic22/cache": True,
    ".critic22/.gitignore": False,
    ".critic22/review-stage": True,
}


def message(link: str) -> str:
    return f"{link} is a symbolic link; refusing to follow it (remove it)"


def plant(repo: Path, link: str, outside: Path) -> Path:
    """``repo/link`` -> a path in ``outside`` (a folder that exists, or a file that does not:
    a write through the link would create it). The link's target."""
    outside.mkdir(exist_ok=True)
    target = outside / ("folder" if LINKS[link] else "file")
    if LINKS[link]:
        target.mkdir()
    (repo / link).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, repo / link)
    return target


def remove(path: Path) -> None:
    """Remove a folder of the test's own (links in it removed, never followed)."""
    if path.is_symlink():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def untouched(outside: Path) -> None:
    """Nothing was written outside the repository: the link's target is as it was made."""
    found = sorted(str(p.relative_to(outside)) for p in outside.rglob("*"))
    assert found in ([], ["folder"]), found


def test_every_state_writer_refuses_a_link_at_every_known_place(tmp_path: Path) -> None:
    """The ledger, the .gitignore, the caches, the review loop's state and acquittal log,
    and a plain atomic write: each raises StateLinkError naming the link, writing nothing."""
    state_dir = tmp_path / ".critic22"
    stage = tmp_path / state.STAGE
    receipt = state.Receipt("run_20261204_0123abcd", 1, "replay", "medium", "ready", 10, "t", "z")
    writers = {
        ".critic22": lambda: ensure_state_dir(state_dir),
        ".critic22/ledger.jsonl": lambda: Ledger(state_dir / "ledger.jsonl", "r").append("x"),
        ".critic22/cache": lambda: _write_cache(state_dir / "cache", "key", "raw"),
        ".critic22/.gitignore": lambda: ensure_state_dir(state_dir),
        ".critic22/review-stage": lambda: state.write_state(
            stage, state.LoopState("run_20261204_0123abcd", 1, "a", "in_progress", 2, "", (), "z")
        ),
    }
    for link, write in writers.items():
        plant(tmp_path, link, tmp_path / "outside")
        with pytest.raises(StateLinkError) as raised:
            write()
        assert str(raised.value) == message(link)
        untouched(tmp_path / "outside")
        remove(tmp_path / ".critic22")
        remove(tmp_path / "outside")
    # The acquittal log, a folder made level by level, and an atomic write: the same.
    plant(tmp_path, ".critic22/review-stage", tmp_path / "out")
    with pytest.raises(StateLinkError, match=r"^\.critic22/review-stage is a symbolic link"):
        state.AcquittalLog(stage / state.ACQUITTAL_LOG).append(receipt)
    with pytest.raises(StateLinkError, match="review-stage is a symbolic link"):
        make_folder(stage / "runs" / "r" / "round-1")
    with pytest.raises(StateLinkError, match="review-stage is a symbolic link"):
        write_file(stage / "final.diff", "diff")
    with pytest.raises(StateLinkError, match="review-stage is a symbolic link"):
        state.AcquittalLog(stage / state.ACQUITTAL_LOG).receipts()
    untouched(tmp_path / "out")


def test_a_link_deeper_in_the_cache_is_refused_and_never_read(tmp_path: Path) -> None:
    graph = tmp_path / ".critic22" / "cache" / "graph"
    graph.mkdir(parents=True)
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"raw": "not the cache's"}))
    os.symlink(secret, graph / "key.json")
    assert _read_cache(graph, "key") is None  # a link is a miss, never the file it names
    with pytest.raises(StateLinkError, match=r"cache/graph/key\.json is a symbolic link"):
        _write_cache(graph, "key", "raw")
    assert json.loads(secret.read_text()) == {"raw": "not the cache's"}
    # Without any link, the same calls write and read the cache.
    os.unlink(graph / "key.json")
    _write_cache(graph, "key", "raw")
    assert _read_cache(graph, "key") == "raw" and not (graph / "key.json").is_symlink()


def test_the_writability_probe_names_the_link_and_probes_nothing_through_it(
    tmp_path: Path,
) -> None:
    target = plant(tmp_path, ".critic22/ledger.jsonl", tmp_path / "out")
    problem = write_problem(tmp_path / ".critic22" / "ledger.jsonl")
    assert problem == message(".critic22/ledger.jsonl")
    assert not target.exists()
    # A ledger the user chose outside .critic22/ is the user's: a link there is followed.
    os.symlink(tmp_path / "mine.jsonl", tmp_path / "chosen.jsonl")
    Ledger(tmp_path / "chosen.jsonl", "r").append("x")
    assert (tmp_path / "mine.jsonl").is_file()


FIX = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


def test_apply_reads_only_a_bounded_regular_file_and_asks_again_otherwise(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")  # no writer: an open without O_NONBLOCK would never return
    (tmp_path / "big.diff").write_bytes(b"+" * (MAX_DIFF_BYTES + 1))
    (tmp_path / "latin1.diff").write_bytes(b"+caf\xe9\n")
    (tmp_path / "fix.diff").write_text(FIX)
    bad = ["/dev/zero", tmp_path / "fifo", tmp_path, tmp_path / "big.diff"]
    bad += [tmp_path / "latin1.diff", tmp_path / "missing.diff"]
    replies = "".join(f"apply {name}\n" for name in [*bad, tmp_path / "fix.diff"])
    out = io.StringIO()
    reply = ask(io.StringIO(replies), out, "p", fixes=1, attempts=len(bad) + 1)
    assert reply == Reply("apply", path=str(tmp_path / "fix.diff"), diff=FIX)
    # The prompt, one line per refused reply (after its "> "), and the last "> ".
    said = out.getvalue().splitlines()[1:-1]
    assert [line.removeprefix("> ").split(":")[0] for line in said] == [f"apply {n}" for n in bad]
    assert "/dev/zero: not a regular file" in said[0] and "fifo: not a regular file" in said[1]
    assert "not a regular file" in said[2] and "larger than 2 MiB" in said[3]
    assert "not UTF-8" in said[4] and "cannot read it (No such file" in said[5]
    assert read_diff(str(tmp_path / "fix.diff")) == FIX
    (tmp_path / "crlf.diff").write_bytes(FIX.replace("\n", "\r\n").encode())
    assert read_diff(str(tmp_path / "crlf.diff")) == FIX  # as the loop always read it


def test_a_diff_of_exactly_the_limit_is_read(tmp_path: Path) -> None:
    (tmp_path / "edge.diff").write_bytes(b"+" * MAX_DIFF_BYTES)
    assert len(read_diff(str(tmp_path / "edge.diff"))) == MAX_DIFF_BYTES
