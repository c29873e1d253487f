"""What a procedure kind is: the typed contract every ``falsification`` kind implements.

A kind owns one prefix of the falsification grammar (``test:``, ``static:``, ...): it parses
the text after its prefix into a :class:`Procedure`, says whether that procedure can run on
this patch, and executes it on the trees. The router, the dispatch of generated items and
the grammar section of the critic's prompt are all derived from the registered kinds
(:mod:`pytest_critic22.kinds`); a plugin adds a kind with the
``pytest_critic22_register_procedures`` hook.

This module holds data types only and imports nothing of the package at run time; the
kinds' own contract, :class:`pytest_critic22.verification.procedures.ProcedureKind`, sits with the
execution types it names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    pass

__all__ = [
    "COLLECTION",
    "FindingLike",
    "NotExecutable",
    "Procedure",
    "Route",
    "kind_description",
]

#: The collection check's preservation group (``preserve[collection]``) and procedure kind.
COLLECTION = "collection"


def kind_description(kind: object) -> str:
    """What a finding of ``kind`` means, in one sentence a developer reads atop a code
    scanning alert: the kind's ``description`` attribute (part of the kind's contract, beside
    ``name`` and ``grammar``), or a default for a plugin's kind written before there was one,
    or for a kind known by its name only (``kind`` a ``str``: not registered here)."""
    name = kind if isinstance(kind, str) else getattr(kind, "name", "")
    text = getattr(kind, "description", "")
    if isinstance(text, str) and text.strip():
        return " ".join(text.split())
    return f"Findings of the {name or 'unnamed'} procedure."


@dataclass(frozen=True, slots=True)
class Procedure:
    """What to execute. Only the fields its kind uses are set."""

    kind: str
    source: str = ""  # test: the critic's pytest source; property: the ``given:`` strategies
    repair: str = ""  # test: optional unified diff against the patched tree, as applied
    repair_given: str = ""  # test: the repair as the critic wrote it, when mended
    nodeids: tuple[str, ...] = ()  # counterfactual/preservation: tests; trace: the one test
    check: str = ""  # static: the check's name
    args: tuple[str, ...] = ()  # static: the check's arguments; property: target, relation…
    repeat: int = 0  # trace: how many replays per tree

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "source": self.source,
            "repair": self.repair,
            "repair_given": self.repair_given,
            "nodeids": list(self.nodeids),
            "check": self.check,
            "args": list(self.args),
            "repeat": self.repeat,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Procedure:
        return cls(
            kind=str(data["kind"]),
            source=str(data.get("source", "")),
            repair=str(data.get("repair", "")),
            repair_given=str(data.get("repair_given", "")),
            nodeids=tuple(str(n) for n in data.get("nodeids", ())),
            check=str(data.get("check", "")),
            args=tuple(str(a) for a in data.get("args", ())),
            repeat=int(data.get("repeat", 0)),
        )


@dataclass(frozen=True, slots=True)
class NotExecutable:
    reason: str
    kind: str | None = None  # the kind the prefix named, when it named one


@dataclass(frozen=True, slots=True)
class Route:
    """A finding's route: one procedure, or why there is none."""

    procedure: Procedure | None
    reason: str = ""

    @property
    def executable(self) -> bool:
        return self.procedure is not None


class FindingLike(Protocol):
    """What a kind reads of a finding (``pytest_critic22.critic.finding.FindingLike`` is one)."""

    @property
    def location(self) -> str: ...

    @property
    def claim(self) -> str: ...

    @property
    def severity(self) -> str: ...

    @property
    def falsification(self) -> str: ...
