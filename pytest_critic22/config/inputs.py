"""Reading the review's inputs from disk: the patch, ``TEXT|@FILE`` options, the request JSON;
and checking, before anything is built, that the run's outputs can be written.

Every problem is an :class:`InputError` whose message is one line that says what to do;
the plugin turns it into ``pytest.UsageError``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "InputError",
    "ScarEntry",
    "check_outputs",
    "decode_utf8",
    "read_obligations",
    "read_patch",
    "read_request",
    "read_scar",
    "read_text_or_file",
]


class InputError(ValueError):
    pass


def read_patch(value: str, base: Path) -> tuple[Path, str]:
    path = _resolve(value, base)
    if not path.is_file():
        raise InputError(f"--critic22: patch file not found: {value}")
    return path, _read(path, "--critic22", what="the patch")


def read_text_or_file(value: str | None, option: str, base: Path) -> str | None:
    """``@FILE`` is the file's text; any other value is the text itself, always."""
    if value is None:
        return None
    path = _file_for(value, option, base)
    return value if path is None else _read(path, option)


def read_obligations(values: Sequence[str] | None, base: Path) -> list[str] | None:
    """Each value is one obligation (the text itself), or ``@FILE``: a file of them, a JSON
    list of strings or one per line (blank lines and ``#`` comments skipped)."""
    if not values:
        return None
    option = "--critic22-obligations"
    out: list[str] = []
    for value in values:
        path = _file_for(value, option, base)
        if path is None:
            out.append(value.strip())
            continue
        text = _read(path, option).strip()
        if text.startswith("["):
            try:
                items = json.loads(text)
            except ValueError as exc:
                raise InputError(f"{option}: {value}: not valid JSON: {exc}") from None
            if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
                raise InputError(f"{option}: {value}: expected a JSON list of strings")
            out.extend(i.strip() for i in items if i.strip())
        else:
            out.extend(
                line.strip()
                for line in text.splitlines()
                if line.strip() and not line.lstrip().startswith("#")
            )
    return out


def _file_for(value: str, option: str, base: Path) -> Path | None:
    """The file ``@FILE`` names, or None: a value without the ``@`` is the text itself,
    even when it happens to name a file."""
    if not value.startswith("@"):
        return None
    name = value[1:]
    if not name.strip():
        raise InputError(f"{option}: '@' must be followed by a file name")
    path = _resolve(name, base)
    if not path.is_file():
        raise InputError(f"{option}: file not found: {name}")
    return path


def read_request(value: str | None, base: Path) -> dict[str, Any] | None:
    if value is None:
        return None
    path = _resolve(value, base)
    if not path.is_file():
        raise InputError(f"--critic22-request: file not found: {value}")
    try:
        data = json.loads(_read(path, "--critic22-request"))
    except ValueError as exc:
        raise InputError(f"--critic22-request: {value} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InputError(f"--critic22-request: {value} must hold a JSON object")
    return data


@dataclass(frozen=True, slots=True)
class ScarEntry:
    """A falsification test verified in an earlier round of the review loop."""

    id: str  # where it came from, e.g. R1-F1
    claim: str
    test: str  # the test's Python source


_SCAR_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")


def read_scar(value: str | None, base: Path) -> tuple[ScarEntry, ...]:
    """``--critic22-scar=FILE``: a JSON list of ``{"id", "claim", "test"}`` objects."""
    if value is None:
        return ()
    option = "--critic22-scar"
    path = _resolve(value, base)
    if not path.is_file():
        raise InputError(f"{option}: file not found: {value}")
    try:
        data = json.loads(_read(path, option))
    except ValueError as exc:
        raise InputError(f"{option}: {value}: not valid JSON: {exc}") from None
    if not isinstance(data, list):
        raise InputError(f"{option}: {value}: expected a JSON list of objects")
    from pytest_critic22.kinds.test import KIND as TEST
    from pytest_critic22.kinds.test import TestData
    from pytest_critic22.model.procedure import NotExecutable

    out: list[ScarEntry] = []
    for number, item in enumerate(data, 1):
        if not isinstance(item, dict) or not all(
            isinstance(item.get(k), str) for k in ("id", "claim", "test")
        ):
            raise InputError(f"{option}: {value}: entry {number} needs string id, claim and test")
        if not _SCAR_ID.match(item["id"]):
            raise InputError(f"{option}: {value}: entry {number}: id {item['id']!r} is not a name")
        parsed = TEST.parse(item["test"])
        if isinstance(parsed, NotExecutable):
            raise InputError(f"{option}: {value}: entry {number}: {parsed.reason}")
        out.append(ScarEntry(item["id"], item["claim"], parsed.payload(TestData).source))
    return tuple(out)


def _resolve(value: str, base: Path) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else base / path


def _read(path: Path, option: str, *, what: str = "the file") -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{option}: cannot read {path}: {exc.strerror}") from None
    return decode_utf8(data, f"{option}: {path.name}", what)


def decode_utf8(data: bytes, name: str, what: str = "the file") -> str:
    """Strict UTF-8: every input ends up in the packet, whose digest is over UTF-8 text.

    The first undecodable byte is reported by line and column (both from 1, the column
    counted in characters, as an editor counts them), so the user can find it.
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        before = data[data.rfind(b"\n", 0, exc.start) + 1 : exc.start]  # valid: the first bad
        column = len(before.decode("utf-8")) + 1
        raise InputError(
            f"{name} line {line} is not valid UTF-8 (byte 0x{data[exc.start]:02x} at column "
            f"{column}); re-encode {what} as UTF-8"
        ) from None


def check_outputs(
    *,
    state_dir: Path,
    ledger: Path,
    ledger_given: bool,
    report: Path | None,
    state_needed: bool,
) -> None:
    """Refuse to start a run whose ledger, state folder or report could not be written.

    ``ledger_given``: the ledger path came from ``--critic22-ledger`` (else it is the
    default one in the state folder). ``state_needed``: something other than the ledger
    must write to the state folder (the model critic's traces and cache).
    """
    from pytest_critic22.execution.ledger import folder_write_problem, write_problem
    from pytest_critic22.execution.statedir import check_known

    # A link in the state folder (a repository can commit one) would have the run write
    # through it, outside the repository: refused whatever else is asked of the folder.
    problem = check_known(state_dir)
    if problem is not None:
        raise InputError(f"critic22: {problem}")
    problem = write_problem(ledger)
    if problem is not None and ledger_given:
        raise InputError(
            f"--critic22-ledger: cannot write {ledger} ({problem}); choose a writable path"
        )
    if problem is not None:
        raise InputError(
            f"--critic22: the state folder {state_dir} is not writable ({problem}); make it "
            "a writable folder, or pass --critic22-ledger=PATH to keep the ledger elsewhere"
        )
    if state_needed and ledger_given:
        problem = folder_write_problem(state_dir)
        if problem is not None:
            raise InputError(
                f"--critic22: the state folder {state_dir} is not writable ({problem}); the "
                "model critic keeps its traces and answer cache there: make it a writable folder"
            )
    if report is not None:
        problem = write_problem(report)
        if problem is not None:
            raise InputError(
                f"--critic22-report: cannot write {report} ({problem}); choose a writable path"
            )
