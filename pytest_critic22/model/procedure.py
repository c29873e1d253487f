"""What a procedure kind is: the typed contract every ``falsification`` kind implements.

A kind owns one prefix of the falsification grammar (``test:``, ``static:``, ...): it parses
the text after its prefix into a :class:`Procedure`, says whether that procedure can run on
this patch, and executes it on the trees. The router, the dispatch of generated items and
the grammar section of the critic's prompt are all derived from the registered kinds
(:mod:`pytest_critic22.kinds`); a plugin adds a kind with the
``pytest_critic22_register_procedures`` hook.

A procedure is its kind's name and the kind's own payload (:class:`TestData`,
:class:`NodeIds`, :class:`StaticData`, :class:`TraceData`, :class:`PropertyData`, or a plugin
kind's words, :class:`Args`). The payloads sit here, below the kinds, because a procedure
crosses processes (an xdist worker, the ledger, the loop's state) as one flat record and is
read back here, where no registry is known: the built-in kinds by name, any other as
:class:`Args`.

This module holds data types only and imports nothing of the package at run time; the
kinds' own contract, :class:`pytest_critic22.verification.procedures.ProcedureKind`, sits with the
execution types it names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

__all__ = [
    "COLLECTION",
    "Args",
    "FindingLike",
    "NodeIds",
    "NotExecutable",
    "Payload",
    "Procedure",
    "PropertyData",
    "Route",
    "StaticData",
    "TestData",
    "TraceData",
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
class TestData:
    """``test:`` (and the loop's ``scar``): a test module to write into the trees and run."""

    __test__ = False  # not a pytest test class, whatever its name

    source: str  # the critic's pytest source
    repair: str = ""  # optional unified diff against the patched tree, as applied
    repair_given: str = ""  # the repair as the critic wrote it, when it had to be mended

    def fields(self) -> dict[str, Any]:
        return {"source": self.source, "repair": self.repair, "repair_given": self.repair_given}


@dataclass(frozen=True, slots=True)
class NodeIds:
    """``counterfactual:``, ``preservation``, ``collection``: existing tests, by node id."""

    nodeids: tuple[str, ...] = ()

    def fields(self) -> dict[str, Any]:
        return {"nodeids": list(self.nodeids)}


@dataclass(frozen=True, slots=True)
class StaticData:
    """``static:``: a check of the run's catalog and its arguments."""

    check: str
    args: tuple[str, ...] = ()

    def fields(self) -> dict[str, Any]:
        return {"check": self.check, "args": list(self.args)}


@dataclass(frozen=True, slots=True)
class TraceData:
    """``trace:``: the one test to replay, and how many replays per tree."""

    nodeid: str
    repeat: int

    @property
    def nodeids(self) -> tuple[str, ...]:
        return (self.nodeid,)

    def fields(self) -> dict[str, Any]:
        return {"nodeids": [self.nodeid], "repeat": self.repeat}


@dataclass(frozen=True, slots=True)
class PropertyData:
    """``property:``: ``args`` = (target, relation[, inverse]); ``given`` = one checked
    ``NAME=STRATEGY`` line per parameter (``pytest_critic22.kinds.property.Spec`` reads it
    back, and checks it again: a procedure may come from a record)."""

    args: tuple[str, ...]
    given: str = ""

    def fields(self) -> dict[str, Any]:
        return {"source": self.given, "args": list(self.args)}


@dataclass(frozen=True, slots=True)
class Args:
    """A plugin kind's payload: its words. The one payload a kind this module does not know
    by name carries across processes (an xdist worker, the ledger, the loop's state)."""

    args: tuple[str, ...] = ()

    def fields(self) -> dict[str, Any]:
        return {"args": list(self.args)}


#: What a procedure's kind carries; each kind reads its own.
Payload = TestData | NodeIds | StaticData | TraceData | PropertyData | Args

_P = TypeVar("_P", TestData, NodeIds, StaticData, TraceData, PropertyData, Args)


def _record(kind: str) -> dict[str, Any]:
    """The flat record every procedure serialises to, with its defaults (a kind sets its own)."""
    return {
        "kind": kind,
        "source": "",
        "repair": "",
        "repair_given": "",
        "nodeids": [],
        "check": "",
        "args": [],
        "repeat": 0,
    }


def _payload(kind: str, data: dict[str, Any]) -> Payload:
    """The payload of a record of ``kind``: the built-in kinds by name (the registry is not
    known here); any other kind's words as :class:`Args`."""
    source = str(data.get("source", ""))
    nodeids = tuple(str(n) for n in data.get("nodeids", ()))
    args = tuple(str(a) for a in data.get("args", ()))
    if kind in ("test", "scar"):
        repair = str(data.get("repair", ""))
        return TestData(source, repair, str(data.get("repair_given", "")))
    if kind in ("counterfactual", "preservation", COLLECTION):
        return NodeIds(nodeids)
    if kind == "static":
        return StaticData(str(data.get("check", "")), args)
    if kind == "trace":
        return TraceData(nodeids[0] if nodeids else "", int(data.get("repeat", 0)))
    if kind == "property":
        return PropertyData(args, source)
    return Args(args)


@dataclass(frozen=True, slots=True)
class Procedure:
    """What to execute: the kind's name and the kind's own payload."""

    kind: str
    data: Payload = field(default_factory=Args)

    def to_dict(self) -> dict[str, Any]:
        """One flat record whatever the kind (the ledger's, the loop's state, xdist's)."""
        return _record(self.kind) | self.data.fields()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Procedure:
        kind = str(data["kind"])
        return cls(kind, _payload(kind, data))

    def payload(self, expected: type[_P]) -> _P:
        """The payload, as the type its kind expects (a ``TypeError`` when it is not)."""
        if not isinstance(self.data, expected):
            raise TypeError(
                f"a {self.kind} procedure carries {type(self.data).__name__}, "
                f"not {expected.__name__}"
            )
        return self.data


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
