"""Population assembly (pure): kept commits -> the population file ``critic22 ab`` reads.

Each kept fix F (parent P) gives two cases over the repository itself (no copy of its
source): ``<F:12>.good`` (the fix's non-test changes) and ``<F:12>.defective`` (the same with
one operator mutant), both on base P, with the fix's commit message as the specification
after the packet's own blinding, and the fix's test files at F as the hidden ground truth
(read from the repository when the population is loaded; scoring only, never a plugin
input). The patches and the specification are the only files written beside the
population.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

__all__ = [
    "HELD_OUT",
    "assemble",
    "blind_message",
    "case_ids",
    "oracle_answer",
    "unified_diff",
]

#: The split of ``critic22 ab``: a case is for tuning iff sha256(id) % 4 == 0.
HELD_OUT: Mapping[str, Any] = {"rule": "sha256-mod", "modulus": 4, "tuning": [0]}

_GIT_TRAILER = re.compile(r"^[A-Za-z][A-Za-z0-9-]*:\s")
_PROVENANCE = re.compile(r"^\s*\(cherry picked from commit [0-9a-f]+\)\s*$", re.I)


def blind_message(message: str) -> str:
    """The commit message as a specification: its trailer block, cherry-pick notes and
    whatever the packet's blinding strips (trailers, rationale, confidence) removed."""
    from pytest_critic22.model.packet import ReviewPacket, blind

    paragraphs = message.strip().split("\n\n")
    if len(paragraphs) > 1 and all(
        _GIT_TRAILER.match(line) for line in paragraphs[-1].splitlines() if line.strip()
    ):
        paragraphs = paragraphs[:-1]
    text = "\n\n".join(paragraphs)
    text = "\n".join(line for line in text.splitlines() if not _PROVENANCE.match(line))
    packet = ReviewPacket(
        specification=text,
        diagnosed_root_cause="",
        preservation_obligations=(),
        impact_evidence={},
    )
    cleaned, _ = blind(packet)
    return cleaned.specification.strip() + "\n"


def case_ids(commit: str) -> tuple[str, str]:
    return f"{commit[:12]}.good", f"{commit[:12]}.defective"


def unified_diff(path: str, old: str, new: str) -> str:
    """A unified diff of one file that ``git apply`` takes (pure, by difflib)."""
    lines = []
    for line in difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        f"a/{path}",
        f"b/{path}",
        n=3,
    ):
        lines.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return f"diff --git a/{path} b/{path}\n" + "".join(lines) if lines else ""


def _ground_truth(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    hidden = list(record["hidden"])
    items = []
    for path in record["test_files"]:
        nodes = [n for n in hidden if n.split("::", 1)[0] == path]
        items.append({"rev": record["commit"], "path": path, "nodes": nodes})
    return items


def assemble(
    records: Sequence[Mapping[str, Any]],
    *,
    repo: str,
    head: str,
    folder: str,
    settings: Mapping[str, Any],
    mining: Mapping[str, Any],
) -> tuple[dict[str, Any], dict[str, str]]:
    """(the population document, {path relative to the population file: text}) for the
    kept ``records`` (in history order). ``folder`` is where the patches go, relative."""
    cases: list[dict[str, Any]] = []
    files: dict[str, str] = {}
    test_args = list(settings.get("test_args", []))
    for record in records:
        commit = str(record["commit"])
        short = commit[:12]
        spec = f"{folder}/{short}/spec.md"
        files[spec] = blind_message(str(record["message"]))
        subject = str(record["message"]).strip().splitlines()[0] if record["message"] else ""
        truth = _ground_truth(record)
        for case_id, label, key in zip(
            case_ids(commit),
            ("good", "defective"),
            ("good_patch", "defective_patch"),
            strict=True,
        ):
            patch = f"{folder}/{short}/{label}.diff"
            files[patch] = str(record[key])
            summary = f"fix {short}: {subject}"
            if label == "defective":
                summary += f" -- twin: {record['mutant']['description']}"
            cases.append(
                {
                    "id": case_id,
                    "repo": repo,
                    "base": record["parent"],
                    "patch": patch,
                    "spec": spec,
                    "label": label,
                    "ground_truth": truth,
                    "existing_tests": list(record["existing"]),
                    "test_args": test_args,
                    "summary": summary,
                    "kinds": ["test"],
                    "caught_by_existing_tests": False,
                    "fix": commit,
                }
            )
    document = {
        "schema": 1,
        "name": f"mined from {PurePosixPath(repo).name}",
        "description": (
            "Mined by critic22 mine from the repository's own history: per kept bug fix, "
            "the fix's non-test changes (good) and one operator mutant of its added lines "
            "that every existing test still accepts (defective). ground_truth names the "
            "fix's test files at the fix commit (read from the repository; scoring only, "
            "never a plugin input) and the hidden tests among them."
        ),
        "held_out": dict(HELD_OUT),
        "mined": {"repository": repo, "head": head, "settings": dict(settings), **mining},
        "cases": cases,
    }
    return document, files


def oracle_answer(record: Mapping[str, Any], label: str, test_source: str) -> list[dict[str, Any]]:
    """The ground-truth critic's answer for one case: the fix's test module as ``test:``,
    and for the defective twin the way back to the good patch as ``repair:``. It checks the
    validator itself: every defective case verified, no good case rejected."""
    falsification = "test:\n" + test_source.rstrip("\n") + "\n"
    if label == "defective":
        path = str(record["mutant"]["path"])
        repair = unified_diff(path, str(record["mutant_source"]), str(record["good_source"]))
        falsification += "repair:\n" + repair
    return [
        {
            "location": "whole-patch",
            "claim": "The patch does not do what the fix's own tests ask."
            if label == "defective"
            else "The fix's own tests fail on the patch.",
            "severity": "blocking",
            "evidence": "the tests the fix commit added",
            "falsification": falsification,
            "confidence": 1.0,
        }
    ]
