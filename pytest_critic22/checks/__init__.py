"""Static checks: what a finding's ``static: CHECK [ARG ...]`` falsification runs.

A check reads the base and patched sources of the files a located edit changes (plus every ``.py``
file of the patched tree) and reports hits. Every check is *differential*: a hit is attributable to
lines the edit adds (patched side) or removes (base side), and a property the base already had is
never reported, so a hit is evidence against the patch and not against the repository. A file that
does not parse on a side it exists on yields no hit: a differential judgement needs both sides.

This package is pure (standard library and libcst only, no I/O); the registry is the one mutable
piece, so plugins can add checks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pytest_critic22.checks.base import (
    Check,
    CheckRegistry,
    Example,
    FileChange,
    Hit,
    changes_from_sources,
    example_change,
    run_example,
)
from pytest_critic22.checks.mutable_default import _MUTABLE_DEFAULT
from pytest_critic22.checks.removed_guard import _REMOVED_GUARD
from pytest_critic22.checks.removed_symbol import _REMOVED_SYMBOL
from pytest_critic22.checks.signature_changed import _SIGNATURE_CHANGED
from pytest_critic22.checks.swallowed_exception import _SWALLOWED_EXCEPTION
from pytest_critic22.checks.undefined_name import _UNDEFINED_NAME
from pytest_critic22.checks.unreachable_code import _UNREACHABLE_CODE

__all__ = [
    "REGISTRY",
    "Check",
    "CheckRegistry",
    "Example",
    "FileChange",
    "Hit",
    "changes_from_sources",
    "example_change",
    "not_executable_reason",
    "run_check",
    "run_example",
]


#: The built-in checks (registered at the end of this module) and any a plugin adds.
REGISTRY = CheckRegistry()


def run_check(
    name: str,
    args: tuple[str, ...],
    changes: Sequence[FileChange],
    repo_sources: Mapping[str, str],
    registry: CheckRegistry = REGISTRY,
) -> list[Hit]:
    """Run one check; hits are deduplicated and sorted by (path, line, message).

    Raises KeyError for an unknown check. Arguments are not validated here: ask
    ``not_executable_reason`` first.
    """
    check = registry.get(name)
    if check is None:
        raise KeyError(name)
    hits = set(check.run(changes, args, repo_sources))
    return sorted(hits, key=lambda hit: (hit.path, hit.line, hit.message, hit.check))


def not_executable_reason(
    name: str,
    args: tuple[str, ...],
    changes: Sequence[FileChange],
    repo_sources: Mapping[str, str],
    registry: CheckRegistry = REGISTRY,
) -> str | None:
    """Why ``static: name args`` cannot be run on these changes, or None when it can."""
    check = registry.get(name)
    if check is None:
        return f"unknown static check {name!r} (known: {', '.join(registry.names())})"
    return check.validate_args(args, changes, repo_sources)


for _check in (
    _REMOVED_GUARD,
    _SWALLOWED_EXCEPTION,
    _SIGNATURE_CHANGED,
    _REMOVED_SYMBOL,
    _MUTABLE_DEFAULT,
    _UNDEFINED_NAME,
    _UNREACHABLE_CODE,
):
    REGISTRY.register(_check)
del _check
