"""Reporting: pure functions from values to text (terminal) and to JSON-able dicts."""

from __future__ import annotations

from collections import Counter

from pytest_critic22.diffparse import ParsedPatch
from pytest_critic22.packet import ReviewPacket, StripReport

__all__ = ["summary_lines"]


def summary_lines(
    patch_name: str,
    patch: ParsedPatch,
    packet: ReviewPacket,
    stripped: StripReport,
    *,
    ledger: str,
) -> list[str]:
    n_edits = len(patch.edits)
    lines = [
        f"patch {patch_name}: {n_edits} edit{'s' if n_edits != 1 else ''} "
        f"in {len(patch.files)} file{'s' if len(patch.files) != 1 else ''}"
    ]
    for file in patch.files:
        edits = ", ".join(file.edit_ids) if file.edit_ids else "no hunks"
        label = file.path if file.status != "renamed" else f"{file.old_path} -> {file.new_path}"
        lines.append(f"  {label} ({file.status}): {edits}")
    lines.append(f"packet {packet.digest[:19]}")
    if stripped.removals:
        counts = Counter(r.field for r in stripped.removals)
        lines.append(
            "stripped before review: "
            + ", ".join(f"{field} x{count}" for field, count in sorted(counts.items()))
        )
        for removal in stripped.removals:
            detail = f" ({removal.detail})" if removal.detail else ""
            lines.append(f"  {removal.field}: {removal.source} {removal.where}{detail}")
    else:
        lines.append("stripped before review: nothing")
    if stripped.ignored:
        lines.append("request keys ignored (not packet elements): " + ", ".join(stripped.ignored))
    lines.append(f"ledger {ledger}")
    return lines
