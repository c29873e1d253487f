"""Rough edges of ``critic22 loop`` a new user met (issue 43, item 5): the sandbox warning a
plain review shows, and AUTO_REVIEW.html's runs told apart, each with its real time.

Two real loops on the bundled sample, where bubblewrap cannot run (a ``bwrap`` on PATH that
fails, as a broken install does): the review falls back to rlimits, and the loop says so."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest

from pytest_critic22.apps.loop import state
from pytest_critic22.apps.loop.driver import run_loop
from pytest_critic22.apps.loop.options import LoopOptions
from pytest_critic22.apps.loop.render import AUTO_REVIEW_HTML
from pytest_critic22.apps.samples import SAMPLES_DIR, materialize
from pytest_critic22.execution.sandbox import FALLBACK_WARNING, RLIMITS_LIMITS
from tests.unit.test_formats_html import _Page

pytestmark = pytest.mark.e2e

CASE = SAMPLES_DIR / "textstats" / "loops" / "repair-then-acquit"


@pytest.fixture
def no_bubblewrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``bwrap`` first on PATH that cannot run anything: ``auto`` falls back to rlimits."""
    folder = tmp_path / "bin"
    folder.mkdir()
    fake = folder / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


def _loop(repo: Path, max_rounds: int) -> tuple[str, str]:
    out = io.StringIO()
    opts = LoopOptions(
        repo=repo,
        patch=CASE / "patch.diff",
        findings_dir=CASE,
        max_rounds=max_rounds,
        plugin_args=("--critic22-reruns=1",),
    )
    result = run_loop(opts, out=out)
    return result.run_id, out.getvalue()


@pytest.mark.usefixtures("no_bubblewrap")
def test_the_sandbox_warning_once_and_every_run_labelled_with_its_time(tmp_path: Path) -> None:
    repo = materialize("textstats", tmp_path / "repo")
    first, said = _loop(repo, 2)  # two reviews: round 1, then the repaired candidate
    # the warning a plain review prints, once for the whole loop (issue 43: never shown)
    warnings = [line for line in said.splitlines() if line.startswith("warning: sandbox:")]
    assert len(warnings) == 2, said
    assert warnings[0].startswith(f"warning: {FALLBACK_WARNING} (bwrap exited 1")
    assert warnings[1] == f"warning: {RLIMITS_LIMITS}"
    assert said.index("warning: sandbox") < said.index("Round 1/2 review complete")
    log = (repo / state.STAGE / "AUTO_REVIEW.md").read_text()
    assert log.count("**Note**: sandbox: rlimits only") == 2  # each round's record says so
    second, _ = _loop(repo, 1)
    page = (repo / state.STAGE / AUTO_REVIEW_HTML).read_text()
    shown = _Page(page)
    nav = re.search(r"<nav>(.*?)</nav>", page, re.DOTALL)
    assert nav is not None
    rows = re.findall(r"<div>(.*?)</div>", nav[1])
    assert len(rows) == 2  # one row per run, not every run's rounds in one unlabelled line
    today = state.iso_z(state.utc_now())[:10]
    labels = []
    for run_id, row, outcome in zip(
        (first, second), rows, ("acquitted (ready)", "max-rounds (not ready)"), strict=True
    ):
        label = re.sub(r"<[^>]+>", "|", row).split("|")[1]
        assert label.startswith(f"{run_id} · {today} ") and f" · {outcome} · " in label, label
        labels.append(label)
        assert f">Run {label}</h2>" in page  # the run's heading in the page, the same label
    # real timings: each round's wall time, and the run's total, never 0.0 s
    timed = re.findall(r"^Run: (\S+) · round \d of \d · [^·]+· [^·]+· ([0-9.]+) s · ", log, re.M)
    rounds = [float(seconds) for run_id, seconds in timed if run_id == first]
    assert len(rounds) == 2 and all(s >= 1.0 for s in rounds), timed
    totals = [float(label.rsplit(" · ", 1)[1].removesuffix(" s")) for label in labels]
    assert totals[0] == pytest.approx(sum(rounds), abs=0.11) and totals[1] >= 1.0
    assert not re.search(r"(?<![0-9])0\.0+ s", shown.text)
