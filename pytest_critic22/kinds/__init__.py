"""The registry of procedure kinds: one place that says what a falsification may be.

The router's prefixes, the dispatch of generated items and the grammar section of the
critic's prompt are all read from a :class:`KindRegistry`. The built-in kinds are
``test``, ``counterfactual``, ``static``, ``trace``, ``property`` and the validator's own
``preservation``; a plugin adds more with the ``pytest_critic22_register_procedures`` hook::

    def pytest_critic22_register_procedures(registry):
        registry.register(MyKind())   # name, grammar, parse, validate, execute

Adding a kind touches nothing in this package.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pytest_critic22.model.procedure import NotExecutable, Procedure, Route
from pytest_critic22.verification.procedures import Scope

if TYPE_CHECKING:
    from pytest_critic22.model.procedure import FindingLike
    from pytest_critic22.verification.procedures import (
        ExecutionContext,
        FindingResult,
        ProcedureKind,
    )

__all__ = [
    "BUILTIN",
    "KindRegistry",
    "NotExecutable",
    "Procedure",
    "Route",
    "Scope",
    "builtin_kinds",
]

_NAME = re.compile(r"^[a-z][a-z0-9-]*$")

#: The built-in kinds, in the order the prompt lists them.
BUILTIN = (
    "test",
    "counterfactual",
    "static",
    "trace",
    "property",
    "preservation",
    "collection",
    "scar",
)


class KindRegistry:
    """Procedure kinds by name; the router and the prompt read it in registration order."""

    def __init__(self) -> None:
        self._kinds: dict[str, ProcedureKind] = {}

    def register(self, kind: ProcedureKind) -> None:
        name = getattr(kind, "name", "")
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(
                f"a procedure kind's name is its grammar prefix: lowercase letters, digits and "
                f"'-', starting with a letter; got {name!r}"
            )
        if name in self._kinds:
            raise ValueError(f"a procedure kind named {name!r} is already registered")
        missing = [m for m in ("grammar", "parse", "validate", "execute") if not hasattr(kind, m)]
        if missing:
            raise TypeError(f"procedure kind {name!r} lacks {', '.join(missing)}")
        self._kinds[name] = kind

    def get(self, name: str) -> ProcedureKind | None:
        return self._kinds.get(name)

    def names(self) -> list[str]:
        return list(self._kinds)

    def offered(self) -> list[ProcedureKind]:
        """The kinds the critic may use (those with a grammar), in registration order."""
        return [k for k in self._kinds.values() if k.grammar]

    def __iter__(self) -> Iterator[ProcedureKind]:
        return iter(self._kinds.values())

    # -- the router ---------------------------------------------------------------------
    def parse(self, text: str) -> Procedure | NotExecutable:
        """The first line's prefix picks the kind; the claim's wording never does."""
        if not text or not text.strip():
            return NotExecutable("falsification is empty")
        offered = [k.name for k in self.offered()]
        prefix = re.compile(
            r"^\s*(" + "|".join(re.escape(n) for n in offered) + r")\s*:", re.IGNORECASE
        )
        match = prefix.match(text) if offered else None
        if match is None:
            first = text.strip().splitlines()[0][:60]
            return NotExecutable(
                f"falsification does not start with {_either(offered)} (got {first!r})"
            )
        kind = self._kinds[match.group(1).lower()]
        try:
            parsed = kind.parse(text[match.end() :])
        except Exception as exc:  # a plugin's parser: its failure is the finding's, not ours
            return NotExecutable(f"{kind.name}: the kind's parser failed: {exc!r}", kind.name)
        if isinstance(parsed, Procedure) and parsed.kind != kind.name:
            return NotExecutable(f"{kind.name}: parsed into a {parsed.kind!r} procedure", kind.name)
        return parsed

    def route(self, falsification: str) -> Route:
        """A procedure this run can execute, or the reason it cannot."""
        parsed = self.parse(falsification)
        if isinstance(parsed, NotExecutable):
            return Route(None, parsed.reason)
        return Route(parsed)

    def validate(self, finding: FindingLike, procedure: Procedure, scope: Scope) -> str | None:
        kind = self._kinds.get(procedure.kind)
        if kind is None:
            return f"{procedure.kind}: no such procedure kind in this run"
        try:
            return kind.validate(finding, procedure, scope)
        except Exception as exc:  # a plugin's validator: the finding is downgraded, with why
            return f"{kind.name}: the kind's validator failed: {exc!r}"

    def execute(
        self,
        finding_id: str,
        finding: FindingLike | None,
        procedure: Procedure,
        ctx: ExecutionContext,
    ) -> FindingResult:
        from pytest_critic22.model.results import Outcome
        from pytest_critic22.verification.procedures import FindingResult

        kind = self._kinds.get(procedure.kind)
        if kind is None:  # e.g. an xdist worker without the plugin that registered it
            outcome = Outcome(
                "inconclusive",
                f"{procedure.kind}: no such procedure kind in this process",
                environment=True,
            )
            return FindingResult(finding_id, outcome, "", {}, procedure.kind)
        result = kind.execute(finding_id, finding, procedure, ctx)
        return replace(result, kind=procedure.kind)  # the registry's name, whatever it says

    # -- the prompt ---------------------------------------------------------------------
    def grammar(self, checks: Any = None) -> str:
        """The grammar section of the critic's prompt, one block per offered kind."""
        from pytest_critic22.kinds.static import check_lines

        lines = "\n".join(check_lines(checks)) if checks is not None else ""
        return "\n".join(k.grammar.replace("{checks}", lines) for k in self.offered())


def _either(names: list[str]) -> str:
    quoted = [f"{n}:" for n in names]
    if len(quoted) <= 1:
        return "".join(quoted) or "a known procedure"
    return ", ".join(quoted[:-1]) + " or " + quoted[-1]


def builtin_kinds() -> KindRegistry:
    """A fresh registry holding the built-in kinds."""
    from pytest_critic22.kinds import (
        collection,
        counterfactual,
        preservation,
        scar,
        static,
        test,
        trace,
    )
    from pytest_critic22.kinds import property as property_kind

    registry = KindRegistry()
    for module in (test, counterfactual, static, trace):
        registry.register(module.KIND)
    registry.register(property_kind.KIND)
    registry.register(preservation.KIND)
    registry.register(collection.KIND)
    registry.register(scar.KIND)
    return registry
