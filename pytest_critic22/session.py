"""The review session: registered as a plugin object only when ``--critic22`` is given.

This is the I/O shell around the pure stages: it reads inputs, writes the ledger and
hands values to the reporters.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_critic22 import report
from pytest_critic22.diffparse import DiffError, ParsedPatch, parse_patch
from pytest_critic22.inputs import (
    InputError,
    read_obligations,
    read_patch,
    read_request,
    read_text_or_file,
)
from pytest_critic22.ledger import STATE_DIR, Ledger, new_run_id
from pytest_critic22.packet import ReviewPacket, StripReport, build_packet


@dataclass(frozen=True, slots=True)
class Review:
    """Everything the run knows before any procedure runs."""

    patch_path: Path
    patch: ParsedPatch
    packet: ReviewPacket
    stripped: StripReport


def prepare_review(config: pytest.Config) -> Review:
    """Read and check the inputs; every problem is one UsageError line."""
    invocation = config.invocation_params.dir
    try:
        patch_path, text = read_patch(config.getoption("critic22_patch"), invocation)
        try:
            patch = parse_patch(text)
        except DiffError as exc:
            raise InputError(f"--critic22: {patch_path.name}: {exc}") from None
        packet, stripped = build_packet(
            patch,
            specification=read_text_or_file(
                config.getoption("critic22_spec"), "--critic22-spec", invocation
            ),
            root_cause=read_text_or_file(
                config.getoption("critic22_root_cause"), "--critic22-root-cause", invocation
            ),
            obligations=read_obligations(config.getoption("critic22_obligations"), invocation),
            request=read_request(config.getoption("critic22_request"), invocation),
        )
    except InputError as exc:
        raise pytest.UsageError(str(exc)) from None
    return Review(patch_path, patch, packet, stripped)


class Critic22Plugin:
    def __init__(self, config: pytest.Config, review: Review, ledger: Ledger) -> None:
        self.config = config
        self.review = review
        self.ledger = ledger
        self.is_worker = hasattr(config, "workerinput")

    @classmethod
    def from_config(cls, config: pytest.Config) -> Critic22Plugin:
        review = prepare_review(config)
        workerinput = getattr(config, "workerinput", None)
        run_id = workerinput.get("critic22_run_id") if workerinput else None
        ledger_opt = config.getoption("critic22_ledger")
        ledger_path = (
            Path(ledger_opt) if ledger_opt else config.rootpath / STATE_DIR / "ledger.jsonl"
        )
        if not ledger_path.is_absolute():
            ledger_path = config.invocation_params.dir / ledger_path
        plugin = cls(config, review, Ledger(ledger_path, run_id or new_run_id()))
        if not plugin.is_worker:
            plugin._record_start()
        return plugin

    def _record_start(self) -> None:
        review = self.review
        self.ledger.append(
            "run-start",
            {"patch": str(review.patch_path), "rootdir": str(self.config.rootpath)},
        )
        self.ledger.append(
            "patch-parsed",
            {
                "files": [
                    {"path": f.path, "status": f.status, "edits": list(f.edit_ids)}
                    for f in review.patch.files
                ],
                "edits": len(review.patch.edits),
            },
        )
        self.ledger.append(
            "packet-built",
            {"digest": review.packet.digest, "stripped": review.stripped.to_dict()},
        )

    # -- xdist: workers get the controller's run id ----------------------------------------
    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: object) -> None:
        node.workerinput["critic22_run_id"] = self.ledger.run_id  # type: ignore[attr-defined]

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.is_worker:
            return
        terminalreporter.section("critic22")
        for line in report.summary_lines(
            self.review.patch_path.name,
            self.review.patch,
            self.review.packet,
            self.review.stripped,
            ledger=str(self.ledger.path),
        ):
            terminalreporter.line(line)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if not self.is_worker:
            self.ledger.append("run-end", {})
