"""``--collect-only``: the review as far as collection needs it, with no tree and no model."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_critic22.config.inputs import read_text_or_file
from pytest_critic22.config.settings import ReviewOptions
from pytest_critic22.critic.finding import ReviewFinding, parse_findings
from pytest_critic22.execution.git import git
from pytest_critic22.model.procedure import NodeIds, Procedure, StaticData, TraceData
from pytest_critic22.pipeline.review import (
    Inputs,
    Review,
    critic_problem,
    critic_source,
    route_findings,
)

if TYPE_CHECKING:
    from pytest_critic22.kinds import KindRegistry

__all__ = ["list_review"]


def list_review(
    opts: ReviewOptions,
    inputs: Inputs,
    base: str,
    repo: Path,
    kinds: KindRegistry,
    checks: Any,
) -> Review:
    """The review as far as collection needs it, with no tree and no model call: replayed
    findings (checked as far as the repository at ``base`` allows), and the explicit
    obligations that are test ids as preservation groups."""
    from pytest_critic22.model.nodeids import is_nodeid
    from pytest_critic22.pipeline.evidence import group_by_file

    source, why = critic_source(opts)
    added = {f.new_path for f in inputs.patch.files if f.new_path}

    def validate(finding: ReviewFinding, procedure: Procedure) -> str | None:
        data = procedure.data  # what the kind carries says what can be checked without trees
        if isinstance(data, StaticData):
            known = {*checks.names(), "type-errors"}
            return None if data.check in known else f"static: unknown check {data.check!r}"
        nodeids = data.nodeids if isinstance(data, NodeIds | TraceData) else ()
        for nodeid in nodeids:
            path = nodeid.split("::", 1)[0]
            found = git(["cat-file", "-e", f"{base}:{path}"], repo, check=False)
            if path not in added and found.returncode != 0:
                return f"{procedure.kind}: {path} is not a file of the repository"
        return None

    raw = "[]"
    critic: dict[str, Any] = {"engaged": False, "source": source, "reason": why}
    if source == "replay":
        findings_file = opts.findings_file or ""
        raw = (
            read_text_or_file("@" + findings_file, "--critic22-findings", opts.invocation_dir) or ""
        )
        critic = {"engaged": True, "source": "replay", "file": findings_file}
    elif source == "model":
        critic["source"] = "off"
        critic["reason"] = "--collect-only (the model is asked only when the review runs)"
    parsed = parse_findings(
        raw,
        inputs.patch.edit_ids,
        max_findings=opts.max_findings,
        validate=validate,
        route=kinds.route,
    )
    tests = [o for o in inputs.packet.preservation_obligations if is_nodeid(o)]
    review = Review(
        inputs.patch_path,
        inputs.patch,
        inputs.packet,
        inputs.stripped,
        base,
        findings=parsed,
        wrapped=route_findings(parsed),
        critic=critic,
        preservation=group_by_file(tests) if opts.preservation != "off" else {},
        notes=("--collect-only: no tree was built and no model asked",),
    )
    problem = critic_problem(opts, source, review)
    return replace(review, problems=(problem,)) if problem else review
