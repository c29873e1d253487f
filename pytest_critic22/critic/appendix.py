"""What the critic reads after the blinded packet, for the review loop (``critic22 loop``).

Its own memory of earlier rounds — executed facts the loop wrote, never the author's words —
and, with ``--critic22-full-source`` (``--difficulty nightmare``), the full source of the
touched modules on the patched tree, not only the hunks.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pytest_critic22.execution.child_files import read_tree_file
from pytest_critic22.execution.trees import TreeError, Variant

if TYPE_CHECKING:
    from pytest_critic22.execution.trees import TreeSet
    from pytest_critic22.model.patch import ParsedPatch

__all__ = ["critic_appendix"]


def critic_appendix(memory: str, full_source: bool, patch: ParsedPatch, trees: TreeSet) -> str:
    """What the critic reads after the packet: its own memory of earlier rounds (executed
    facts the loop wrote) and, when asked, the full source of the touched modules."""
    parts = [memory.strip()] if memory.strip() else []
    if full_source:
        try:
            tree = trees.get(Variant.patched(patch))
        except TreeError as exc:
            parts.append(f"## Full source of the touched modules\n(unavailable: {exc})")
        else:
            parts.append(_full_source(tree, patch))
    return "\n\n".join(parts)


_FULL_SOURCE_CHARS = 40_000  # per module: enough to read one, never a whole package


def _full_source(tree: Path, patch: ParsedPatch) -> str:
    out = ["## Full source of the touched modules (the patched tree)"]
    for f in patch.files:
        path = f.new_path
        if not path or not path.endswith(".py"):
            continue
        try:
            text = read_tree_file(tree, path).decode("utf-8", "replace")
        except OSError:
            continue
        if len(text) > _FULL_SOURCE_CHARS:
            text = text[:_FULL_SOURCE_CHARS] + "\n# ... (cut)\n"
        out.append(f"### {path}\n```python\n{text}```")
    return "\n\n".join(out)
