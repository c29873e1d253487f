"""The falsification grammar: a finding's ``falsification`` string -> a typed procedure.

The router reads the first line's prefix and nothing else; the claim's wording never
changes where a finding goes. Which prefixes exist is the registry's business
(:mod:`pytest_critic22.kinds`): the built-ins are

    test:            Python source of pytest tests that PASS when the claim is wrong,
                     optionally followed by a line "repair:" and a unified diff
    counterfactual:  NODEID [NODEID ...]   (node ids may hold spaces; quotes or a JSON
                                            list are accepted: see pytest_critic22.model.nodeids)
    static:          CHECK [ARG ...]
    trace:           NODEID [repeat=N]
    property:        MODULE.FUNC [equivalent|idempotent|roundtrip INVERSE|raises-same]

and a plugin may register more. This module is the one definition of "executable" for
code that has no run-specific registry at hand (it uses the built-in kinds).
"""

from __future__ import annotations

from pytest_critic22.kinds import KindRegistry, builtin_kinds
from pytest_critic22.model.procedure import NotExecutable, Procedure, Route

__all__ = ["KINDS", "parse_procedure", "route"]

#: The four kinds of the research spec's grammar (the registry holds more).
KINDS: tuple[str, ...] = ("test", "counterfactual", "static", "trace")

_BUILTIN: list[KindRegistry] = []


def _registry(registry: KindRegistry | None) -> KindRegistry:
    if registry is not None:
        return registry
    if not _BUILTIN:
        _BUILTIN.append(builtin_kinds())
    return _BUILTIN[0]


def parse_procedure(text: str, registry: KindRegistry | None = None) -> Procedure | NotExecutable:
    """Parse the grammar with ``registry``'s kinds (default: the built-in ones)."""
    return _registry(registry).parse(text)


def route(falsification: str, registry: KindRegistry | None = None) -> Route:
    """The router: a procedure this run can execute, or the reason it cannot."""
    return _registry(registry).route(falsification)
