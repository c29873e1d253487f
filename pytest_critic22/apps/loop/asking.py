"""The loop's two extra kinds of request: a debate turn (``hard``) and a fixer's diff.

Both are built only from what execution produced and the critic itself said — the finding,
the decisive output of both trees, the candidate's hunks (headers dropped: an author's
message never reaches a request) and, for the fixer, the touched source. Their answers are
data: a ruling is recorded, never obeyed; a revision and a fix are executed before they
count. The model call itself is :func:`pytest_critic22.critic.critic.ask_once`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_critic22.apps.loop.model import ItemResult

if TYPE_CHECKING:
    from pytest_critic22.critic.critic import Completion, CriticSettings

__all__ = ["Ruling", "ask", "debate_messages", "fixer_messages", "parse_fix", "parse_ruling"]

DEBATE_SYSTEM = """\
You reviewed a candidate patch and proposed the finding below. Its falsification was executed
on the patched tree and on its counterfactual, and did NOT verify the finding: the outcome and
the decisive output of both trees follow. You get one more turn on this finding. Rule on it:

- "withdraw": the finding was wrong.
- "revise": the claim stands but the falsification was faulty; give a NEW falsification in the
  same grammar as before (for example "test:" followed by pytest source that FAILS when your
  claim is right). It will be executed; only execution decides.
- "keep": you stand by it as it is.

Answer with JSON only: {"ruling": "withdraw|revise|keep", "argument": "...",
"falsification": "... (only for revise)"}. Nothing you say here is a verdict."""

FIXER_SYSTEM = """\
A finding about a candidate patch was verified by execution: its test fails on the candidate
tree. Write the smallest fix: a unified diff against the candidate tree (paths a/... b/...,
with correct hunk headers and context lines copied exactly from the source shown) that makes
the test pass without changing any other behaviour. Answer with the diff only."""


@dataclass(frozen=True, slots=True)
class Ruling:
    ruling: str  # withdraw | revise | keep | no answer
    argument: str
    falsification: str = ""


def hunks_only(candidate: str) -> str:
    """The candidate's diff without any header or message: what the code change is."""
    from pytest_critic22.model.patch import DiffError, parse_patch

    try:
        return parse_patch(candidate).whole_patch
    except DiffError:
        return ""


def debate_messages(item: ItemResult, output: str, candidate: str) -> list[dict[str, str]]:
    user = (
        "The candidate patch (hunks):\n"
        + hunks_only(candidate)
        + "\n\nYour finding:\n"
        + json.dumps(
            {
                "location": item.location,
                "claim": item.claim,
                "falsification": item.falsification,
            },
            indent=2,
        )
        + f"\n\nExecution's outcome: {item.status} — {item.reason}\n\nDecisive output:\n"
        + output
    )
    return [{"role": "system", "content": DEBATE_SYSTEM}, {"role": "user", "content": user}]


def parse_ruling(raw: str | None) -> Ruling:
    from pytest_critic22.critic.finding import loads_lenient

    if raw is None:
        return Ruling("no answer", "")
    value = loads_lenient(raw)
    if not isinstance(value, Mapping):
        return Ruling("no answer", raw.strip()[:2000])
    ruling = str(value.get("ruling", "")).strip().lower()
    argument = str(value.get("argument", ""))
    falsification = value.get("falsification")
    if ruling not in ("withdraw", "revise", "keep"):
        return Ruling("no answer", argument or raw.strip()[:2000])
    if ruling == "revise" and not (isinstance(falsification, str) and falsification.strip()):
        return Ruling("keep", argument + " (a revision without a falsification is kept as is)")
    return Ruling(ruling, argument, falsification if isinstance(falsification, str) else "")


def fixer_messages(
    item: ItemResult, test: str, output: str, sources: Mapping[str, str]
) -> list[dict[str, str]]:
    shown = "\n\n".join(f"### {path}\n```python\n{text}```" for path, text in sources.items())
    user = (
        f"The verified finding: {item.claim}\n(location {item.location or 'whole-patch'}; "
        f"execution: {item.reason})\n\nIts test (fails on the candidate tree):\n```python\n"
        f"{test}```\n\nOutput on both trees:\n{output}\n\nThe touched source, as the candidate "
        f"tree has it:\n{shown}"
    )
    return [{"role": "system", "content": FIXER_SYSTEM}, {"role": "user", "content": user}]


_FENCE = re.compile(r"```[a-z]*\n(.*?)```", re.DOTALL)


def parse_fix(raw: str | None) -> str:
    """The diff in a fixer's answer ("" when there is none): fences and prose dropped."""
    if not raw:
        return ""
    fenced = _FENCE.findall(raw)
    text = fenced[0] if fenced else raw
    start = min((i for i in (text.find("diff --git"), text.find("--- ")) if i >= 0), default=-1)
    if start < 0:
        return ""
    body = text[start:]
    return body if body.endswith("\n") else body + "\n"


def ask(
    messages: list[dict[str, str]],
    settings: CriticSettings,
    trace_dir: Path,
    name: str,
    complete: Completion | None = None,
) -> tuple[str | None, str]:
    from pytest_critic22.critic.critic import ask_once, litellm_completion

    backend = complete if complete is not None else litellm_completion(settings)
    return ask_once(messages, settings, backend, trace_dir=trace_dir, name=name)
