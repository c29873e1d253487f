"""The outputs of ``critic22 mine`` (I/O): the population file, its patches, the summary."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from pytest_critic22.apps.mine.assemble import assemble, case_ids, oracle_answer
from pytest_critic22.apps.mine.driver import MineRun
from pytest_critic22.apps.mine.select import MineSettings
from pytest_critic22.execution.statedir import write_file

__all__ = ["summary_lines", "write_outputs"]


def summary_lines(run: MineRun, sandbox: str, cache: Path) -> Iterator[str]:
    kept = len(run.kept)
    yield (
        f"{run.scanned} of {run.total} commits scanned, {kept} cases kept "
        f"({2 * kept} population cases); {run.cached} commits from the cache, "
        f"{run.examined} examined now ({cache}); sandbox: {sandbox}"
    )
    reasons = run.reasons()
    if reasons:
        yield "not kept: " + ", ".join(f"{n} {code}" for code, n in reasons.items())


def write_outputs(
    run: MineRun,
    *,
    repo: Path,
    head: str,
    out: Path,
    settings: MineSettings,
    since: str | None,
    oracle: Path | None,
) -> str:
    """Write the population (and the oracle's answers); return what was written, in words."""
    folder = f"{out.stem}.cases"
    skipped = [
        {"commit": r["commit"], "code": r["code"], "reason": r["reason"]}
        for r in run.records
        if r["status"] != "kept"
    ]
    mining = {
        "since": since,
        "scanned": run.scanned,
        "commits": run.total,
        "kept": [r["commit"] for r in run.kept],
        "not_kept": run.reasons(),
        "skipped": skipped,
    }
    document, files = assemble(
        run.kept,
        repo=str(repo),
        head=head,
        folder=folder,
        settings=settings.to_dict(),
        mining=mining,
    )
    for relative, text in files.items():
        _write(out.parent / relative, text)
    _write(out, json.dumps(document, indent=2, sort_keys=False) + "\n")
    if oracle is not None:
        from pytest_critic22.execution.git import show_file

        for record in run.kept:
            path = str(record["failing"][0]).split("::", 1)[0]
            source = (show_file(repo, record["commit"], path) or b"").decode("utf-8", "replace")
            for case_id, label in zip(
                case_ids(record["commit"]), ("good", "defective"), strict=True
            ):
                answer = oracle_answer(record, label, source)
                _write(oracle / f"{case_id}.json", json.dumps(answer, indent=2) + "\n")
    if not run.kept:
        return f"wrote {out}: no case kept (critic22 ab needs at least one)"
    return f"wrote {out} ({2 * len(run.kept)} cases; patches and specifications in {folder}/)"


def _write(path: Path, text: str) -> None:
    """Atomically, its folders made: a temporary file beside it (``O_EXCL``, no link
    followed inside a ``.critic22`` folder), then renamed over it."""
    write_file(path, text)
