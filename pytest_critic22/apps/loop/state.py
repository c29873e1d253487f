"""The loop's memory between invocations: REVIEW_STATE.json and the append-only acquittal log.

``REVIEW_STATE.json`` is overwritten after every round (only the latest round matters) and
says whether a later ``critic22 loop`` resumes or starts fresh; :func:`decide_start` holds
the seed's rules as a pure function so each rule is tested without a file or a clock.
``ACQUITTAL_LOG.jsonl`` is the permanent record of positive verdicts: lines are only ever
appended, and only lines carrying the current ``run_id`` may stop the current run, so a
finished run's acquittal can never end a new one.

Both fail closed: a state file that cannot be read is an error naming it, never a silent
fresh start that would forget a run in progress.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal

from pytest_critic22.apps.loop.verdict import POSITIVE_SCORE
from pytest_critic22.execution.ledger import ensure_state_dir
from pytest_critic22.execution.statedir import (
    STATE_DIR,
    StateLinkError,
    check_known,
    make_folder,
    open_append,
    read_file,
    write_file,
)

__all__ = [
    "ACQUITTAL_LOG",
    "RUN_ID",
    "STAGE",
    "STALE_AFTER",
    "STATE_FILE",
    "AcquittalLog",
    "LoopState",
    "Receipt",
    "Start",
    "StateError",
    "decide_start",
    "iso_z",
    "link_problem",
    "new_loop_id",
    "parse_time",
    "read_state",
    "start",
    "utc_now",
    "write_state",
]

STAGE = Path(".critic22") / "review-stage"
STATE_FILE = "REVIEW_STATE.json"
ACQUITTAL_LOG = "ACQUITTAL_LOG.jsonl"
#: An in-progress state older than this is a killed or abandoned run, not one to resume.
STALE_AFTER = timedelta(hours=24)
#: What the loop keeps in its stage: checked for links, with the state folder's own entries.
STAGE_FILES = (
    STATE_FILE,
    ACQUITTAL_LOG,
    "AUTO_REVIEW.md",
    "AUTO_REVIEW.html",
    "REVIEWER_MEMORY.md",
    "final.diff",
    "runs",
)
RUN_ID = re.compile(r"run_[0-9]{8}_[0-9a-f]{8}\Z")
_TOKEN = re.compile(r"[0-9a-f]{8}\Z")

Status = Literal["in_progress", "completed"]


class StateError(Exception):
    """The state file exists but cannot be trusted; the message is one line naming it."""


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def _as_utc(dt: datetime) -> datetime:
    """Naive datetimes are taken as UTC (the seed's own example timestamp is naive)."""
    return dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt.astimezone(timezone.utc)


def iso_z(dt: datetime) -> str:
    """``2026-11-30T14:22:00Z``: seconds precision and a literal Z, as the seed's receipts."""
    return _as_utc(dt).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: object) -> datetime | None:
    """An aware UTC datetime from ``...Z``, ``...+00:00`` (any offset) or naive ISO text.

    None for anything else, so a caller can treat an unreadable timestamp as stale rather
    than crash on it. (``fromisoformat`` accepts ``Z`` only from Python 3.11.)
    """
    if not isinstance(text, str) or not text.strip():
        return None
    value = text.strip()
    if value[-1] in "Zz":
        value = value[:-1] + "+00:00"
    try:
        return _as_utc(datetime.fromisoformat(value))
    except ValueError:
        return None


def new_loop_id(now: datetime, token: str | None = None) -> str:
    """``run_<YYYYMMDD>_<8 hex>``: the date says when, the random part makes it unique."""
    token = secrets.token_hex(4) if token is None else token
    if not _TOKEN.match(token):
        raise ValueError(f"run id token must be 8 lowercase hex digits, not {token!r}")
    return f"run_{_as_utc(now):%Y%m%d}_{token}"


@dataclass(frozen=True, slots=True)
class LoopState:
    """The seed's REVIEW_STATE.json, field for field."""

    run_id: str
    round: int
    agent_id: str
    status: Status
    last_score: float | int
    last_verdict: str
    pending_experiments: tuple[str, ...]
    timestamp: str

    def __post_init__(self) -> None:
        # Refuse to write what start() would refuse to read.
        _check_round(self.round, "LoopState")
        if self.status not in ("in_progress", "completed"):
            raise StateError(f"LoopState status must be in_progress or completed: {self.status!r}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "round": self.round,
            "agent_id": self.agent_id,
            "status": self.status,
            "last_score": self.last_score,
            "last_verdict": self.last_verdict,
            "pending_experiments": list(self.pending_experiments),
            "timestamp": self.timestamp,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LoopState:
        """Strict on what decides a resume (run_id, round, status); defaults for the rest,
        which legacy files may lack. Raises :class:`StateError`."""
        status = data.get("status")
        if status not in ("in_progress", "completed"):
            raise StateError(f"review state status must be in_progress or completed: {status!r}")
        score = data.get("last_score", 0)
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise StateError(f"review state last_score must be a number: {score!r}")
        pending = data.get("pending_experiments", [])
        if not isinstance(pending, list):
            raise StateError(f"review state pending_experiments must be a list: {pending!r}")
        return cls(
            run_id=str(data.get("run_id", "")),
            round=_check_round(data.get("round"), "review state"),
            agent_id=str(data.get("agent_id", "")),
            status=status,
            last_score=score,
            last_verdict=str(data.get("last_verdict", "")),
            pending_experiments=tuple(str(p) for p in pending),
            timestamp=str(data.get("timestamp", "")),
        )


def _check_round(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise StateError(f"{what} round must be a whole number >= 0, not {value!r}")
    return value


def _read(path: Path) -> dict[str, Any] | None:
    if not os.path.lexists(path):
        return None
    try:
        data = json.loads(read_file(path).decode("utf-8"))  # no link followed in .critic22/
    except StateLinkError as exc:
        raise StateError(f"critic22 loop: {exc}") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise StateError(
            f"critic22 loop: cannot read {path} ({why}); fix or delete it to start fresh"
        ) from exc
    if not isinstance(data, dict):
        raise StateError(
            f"critic22 loop: {path} is not a JSON object; fix or delete it to start fresh"
        )
    return data


def read_state(stage: Path) -> dict[str, Any] | None:
    """The raw state in ``stage``, None when there is none; :class:`StateError` when unreadable."""
    return _read(stage / STATE_FILE)


def link_problem(stage: Path) -> str | None:
    """The first symbolic link in the state folder or the loop's ``stage`` in it, or None: a
    link there (a repository can commit one) would have the loop write, or remove, outside
    the repository."""
    return check_known(stage.parent, [f"{stage.name}/{name}" for name in STAGE_FILES])


def write_state(stage: Path, state: LoopState) -> Path:
    """Replace the state file atomically, so a reader (or a crash) never sees half of one;
    no link followed inside ``.critic22/``
    (:class:`~pytest_critic22.execution.statedir.StateLinkError`)."""
    if stage.parent.name == STATE_DIR:
        ensure_state_dir(stage.parent)  # .critic22/ gets its .gitignore, as the ledger's does
    make_folder(stage)
    target = stage / STATE_FILE
    text = json.dumps(state.to_dict(), indent=2, ensure_ascii=False) + "\n"
    write_file(target, text, sync=True)
    _fsync_dir(stage)
    return target


def _fsync_dir(folder: Path) -> None:
    """Make the rename itself durable where the platform allows it (best effort)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:  # pragma: no cover - e.g. Windows cannot open a folder
        pass


@dataclass(frozen=True, slots=True)
class Start:
    """How this invocation begins: which run, which round, and what to tell the user."""

    run_id: str
    round: int  # the first round to run: 1 for a fresh start
    resumed: bool
    messages: tuple[str, ...]
    discarded: bool  # a stale state file must be (start(): was) deleted
    state: LoopState | None = None  # the state resumed from (with the run_id in use)


def decide_start(
    state: Mapping[str, Any] | None, now: datetime, make_id: Callable[[], str]
) -> Start:
    """The seed's Initialization rules, without I/O. Raises :class:`StateError` on a bad round."""
    if state is None:
        return Start(make_id(), 1, resumed=False, messages=(), discarded=False)
    round_ = _check_round(state.get("round"), "review state")
    old_id, status = state.get("run_id"), state.get("status")

    def fresh(why: str, discarded: bool = False) -> Start:
        new = make_id()
        return Start(new, 1, False, (f"{why}; starting fresh run {new}.",), discarded)

    if status == "completed":
        return fresh(f"Previous run {old_id or '(without run_id)'} completed")
    if status != "in_progress":
        return fresh(f"Review state has unknown status {status!r}")
    saved = parse_time(state.get("timestamp"))
    # A timestamp far in the future is as untrustworthy as one far in the past.
    if saved is None or abs(_as_utc(now) - saved) > STALE_AFTER:
        when = "no readable timestamp" if saved is None else f"timestamp {iso_z(saved)}"
        return fresh(f"Discarded stale review state (run {old_id}, {when}, not within 24 h)", True)
    messages: list[str] = []
    run_id = old_id if isinstance(old_id, str) and RUN_ID.match(old_id) else None
    if run_id is None:
        run_id = make_id()
        messages.append(f"No run_id in legacy state file; assigned {run_id} for this resume.")
    messages.append(f"Recovered from interruption. Resuming at Round {round_ + 1}.")
    resumed = LoopState.from_dict({**state, "run_id": run_id})
    return Start(run_id, round_ + 1, True, tuple(messages), discarded=False, state=resumed)


def start(
    stage: Path, now: datetime | None = None, make_id: Callable[[], str] | None = None
) -> Start:
    """Read the state (``stage`` first, the legacy repository-root file second), decide, and
    delete a stale file so it cannot be resumed later by mistake."""
    when = utc_now() if now is None else now
    ids = make_id if make_id is not None else (lambda: new_loop_id(when))
    path = stage / STATE_FILE
    if not os.path.lexists(path):
        legacy = stage.parent.parent / STATE_FILE
        if os.path.lexists(legacy):
            path = legacy
    decision = decide_start(_read(path), when, ids)
    if decision.discarded:
        path.unlink(missing_ok=True)
    return decision


@dataclass(frozen=True, slots=True)
class Receipt:
    """One acquitting positive verdict, bound to its run."""

    run_id: str
    round: int
    backend: str
    effort: str
    verdict: str
    score: float | int
    trace_id: str
    timestamp: str

    def to_json_line(self) -> str:
        record = {key: getattr(self, key) for key in _RECEIPT_FIELDS}
        return json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Receipt:
        """Raises ValueError unless every field is present with its type."""
        for key, kind in _RECEIPT_FIELDS.items():
            value = data.get(key)
            if isinstance(value, bool) or not isinstance(value, kind):
                raise ValueError(f"receipt {key} has the wrong type: {value!r}")
        return cls(**{key: data[key] for key in _RECEIPT_FIELDS})

    @property
    def positive(self) -> bool:
        return self.score >= POSITIVE_SCORE and self.verdict in ("ready", "almost")


#: The receipt's keys in the seed's order, with the types a valid line must have.
_RECEIPT_FIELDS: dict[str, type | tuple[type, ...]] = {
    "run_id": str,
    "round": int,
    "backend": str,
    "effort": str,
    "verdict": str,
    "score": (int, float),
    "trace_id": str,
    "timestamp": str,
}


class AcquittalLog:
    """``ACQUITTAL_LOG.jsonl``: opened only with O_APPEND, so no line is ever rewritten.

    A crash can leave a torn last line; it is kept as it is (the audit trail is never
    "repaired") and skipped on reading, and the next receipt starts on a line of its own.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, receipt: Receipt) -> bool:
        """Append ``receipt``; False (nothing written) when its (run_id, round) is logged."""
        if not receipt.positive:
            raise ValueError(
                f"only positive verdicts are acquittals: score {receipt.score}, "
                f"verdict {receipt.verdict!r}"
            )
        line = receipt.to_json_line().encode("utf-8")
        fd = open_append(self.path, read=True)  # no link followed inside .critic22/
        try:
            _lock(fd)  # the check and the write are one step for concurrent appenders
            data = _read_all(fd)
            if any((r.run_id, r.round) == (receipt.run_id, receipt.round) for r in _parse(data)):
                return False
            if data and not data.endswith(b"\n"):
                line = b"\n" + line
            written = os.write(fd, line)
            while written < len(line):  # pragma: no cover - regular files take it whole
                written += os.write(fd, line[written:])
            return True
        finally:
            os.close(fd)  # closing releases the lock

    def receipts(self) -> list[Receipt]:
        try:
            data = read_file(self.path)
        except FileNotFoundError:
            return []
        return _parse(data)

    def for_run(self, run_id: str) -> list[Receipt]:
        """The receipts that may stop ``run_id``: its own, never an earlier run's."""
        return [r for r in self.receipts() if r.run_id == run_id]

    def acquitted(self, run_id: str) -> bool:
        return any(r.positive for r in self.for_run(run_id))


def _parse(data: bytes) -> list[Receipt]:
    out: list[Receipt] = []
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw.decode("utf-8"))
            if isinstance(record, dict):
                out.append(Receipt.from_dict(record))
        except ValueError:  # torn or foreign line (UnicodeDecodeError is a ValueError)
            continue
    return out


def _read_all(fd: int) -> bytes:
    """All of the file open at ``fd``, from its start (with O_APPEND, writes still go to
    its end)."""
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def _lock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: O_APPEND alone
        return
    fcntl.flock(fd, fcntl.LOCK_EX)
