"""Ctrl-C in ``critic22 loop``: one line, and the state of the last finished round kept.

A round is committed by ``REVIEW_STATE.json`` (:mod:`.driver`); a round under way when
Ctrl-C comes (its review, its checkpoint) is redone whole on resume, never half-counted.
What an interruption must add is a state file for a run that has none yet (Ctrl-C in its
first round, where a stale or completed file of an earlier run may stand): without one, the
same command would start another run instead of resuming this one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_critic22.apps.loop import state

if TYPE_CHECKING:
    from pytest_critic22.execution.ledger import Ledger

__all__ = ["LoopInterrupted", "no_interrupts", "save_interrupted"]


class LoopInterrupted(KeyboardInterrupt):
    """Ctrl-C, with the state saved at the last finished round (the same command resumes
    after it); the message is one line saying so. A KeyboardInterrupt, so a caller of
    :func:`pytest_critic22.loop` that handles Ctrl-C handles this one too."""


@contextlib.contextmanager
def no_interrupts() -> Iterator[None]:
    """SIGINT ignored for the block, so a second Ctrl-C cannot stop the state half-saved
    (in the main thread; Python delivers signals nowhere else)."""
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)


def save_interrupted(
    stage: Path, run_id: str, saved: state.LoopState | None, agent: str, ledger: Ledger
) -> tuple[state.LoopState | None, LoopInterrupted]:
    """Write the state of an interrupted run: ``saved`` (what the state file holds of it, or
    None when no round of it is there: round 0, resumed at round 1), in progress, with a
    fresh timestamp. The state now on disk, and the exception to raise."""
    with no_interrupts():
        if saved is not None and saved.status == "completed":
            return saved, LoopInterrupted(
                f"critic22 loop: interrupted; run {run_id} had ended at round {saved.round} "
                "(its state is saved)"
            )
        now = state.iso_z(state.utc_now())
        if saved is None:
            saved = state.LoopState(run_id, 0, agent, "in_progress", 0, "", (), now)
        else:
            saved = dataclasses.replace(saved, timestamp=now)
        try:
            state.write_state(stage, saved)
        except OSError as exc:
            return None, LoopInterrupted(
                f"critic22 loop: interrupted; the state of round {saved.round} could not be "
                f"saved ({exc})"
            )
        with contextlib.suppress(OSError):  # the audit trail's line; the state is what counts
            ledger.append("loop-interrupted", {"round": saved.round})
    return saved, LoopInterrupted(
        f"critic22 loop: interrupted; state saved at round {saved.round} "
        "(resume with the same command)"
    )
