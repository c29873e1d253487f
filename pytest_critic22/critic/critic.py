"""The critic: the one learned entry. One bounded model call over the blinded packet.

This is the only module that imports the model client (litellm), lazily, and only when
a critic is engaged. The critic has no accept and no reject action: its output is raw
text that :func:`pytest_critic22.critic.finding.parse_findings` turns into findings, and
nothing here reads a finding's confidence.

A call that fails in any way (timeout, refused connection, HTTP error, rate limit,
context too long, empty or non-JSON output) leaves the run with no critic: an empty L
column, recorded with its cause, never a broken run.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

from pytest_critic22.critic.finding import ParseResult, parse_findings
from pytest_critic22.execution.statedir import read_file, write_file
from pytest_critic22.model.packet import ReviewPacket

__all__ = [
    "PROMPT_VERSION",
    "Attempt",
    "Completion",
    "CriticFailure",
    "CriticRun",
    "CriticSettings",
    "ask_once",
    "build_messages",
    "litellm_completion",
    "review",
]

PROMPT_VERSION = "critic-v3"


@dataclass(frozen=True, slots=True)
class CriticSettings:
    model: str
    api_base: str | None = None
    temperature: float = 0.2
    max_tokens: int | None = None
    timeout: float = 120.0  # overall deadline, re-asks included
    retries: int = 2  # re-asks after schema violations
    fresh: bool = False  # ignore the response cache


class CriticFailure(Exception):
    """The model could not be asked or did not answer; the message is the cause."""


class Completion(Protocol):
    """A chat completion backend: messages in, (text, token usage) out."""

    def __call__(
        self, messages: Sequence[Mapping[str, str]], *, timeout: float
    ) -> tuple[str, Mapping[str, int]]: ...


@dataclass(frozen=True, slots=True)
class Attempt:
    number: int
    raw: str
    problems: tuple[str, ...]  # what the parser objected to; empty when clean
    error: str = ""  # the call failed: the cause
    seconds: float = 0.0
    usage: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CriticRun:
    """What the critic produced: the chosen raw output, or why there is none."""

    raw: str | None
    parsed: ParseResult | None
    attempts: tuple[Attempt, ...] = ()
    failure: str = ""
    cached: bool = False
    prompt_version: str = PROMPT_VERSION

    @property
    def calls(self) -> int:
        return len(self.attempts)

    @property
    def tokens(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for attempt in self.attempts:
            for key, value in attempt.usage.items():
                total[key] = total.get(key, 0) + int(value)
        return total

    def summary(self) -> dict[str, Any]:
        return {
            "prompt_version": self.prompt_version,
            "calls": self.calls,
            "cached": self.cached,
            "failure": self.failure,
            "tokens": self.tokens,
            "attempts": [
                {
                    "number": a.number,
                    "problems": list(a.problems),
                    "error": a.error,
                    "seconds": round(a.seconds, 3),
                }
                for a in self.attempts
            ],
        }


def system_prompt(grammar: str | None = None) -> str:
    """The prompt, its grammar section generated from the run's procedure kinds and checks
    (``grammar``; default: the built-in kinds and checks)."""
    if grammar is None:
        from pytest_critic22.checks import REGISTRY
        from pytest_critic22.kinds import builtin_kinds

        grammar = builtin_kinds().grammar(REGISTRY)
    template = (
        resources.files("pytest_critic22.critic") / "prompts" / f"{PROMPT_VERSION}.txt"
    ).read_text(encoding="utf-8")
    return template.replace("{grammar}", grammar.rstrip("\n") + "\n")


def build_messages(
    packet: ReviewPacket,
    problems: Sequence[str] = (),
    *,
    system: str | None = None,
    appendix: str = "",
) -> list[dict[str, str]]:
    """A fresh context: the system prompt and the blinded packet, nothing else.

    A re-ask adds only the parser's complaints, never the critic's earlier findings, so
    no answer is ever shown to the critic as a vote.
    """
    locations = ", ".join([e for e, _ in packet.candidate_patch.atomic_edits] + ["whole-patch"])
    user = (
        "Review packet (JSON):\n"
        + packet.canonical_json()
        + f"\n\nValid locations: {locations}.\nAnswer with JSON only."
    )
    if appendix:
        # critic22 loop: the critic's own executed record, and (nightmare) whole modules.
        user += "\n\n" + appendix
    if problems:
        user += (
            "\n\nA previous answer to this packet broke the output schema; avoid these "
            "problems:\n" + "\n".join(f"- {p}" for p in problems)
        )
    prompt = system if system is not None else system_prompt()
    return [{"role": "system", "content": prompt}, {"role": "user", "content": user}]


def review(
    packet: ReviewPacket,
    edit_ids: Sequence[str],
    settings: CriticSettings,
    complete: Completion,
    *,
    max_findings: int | None = None,
    trace_dir: Path | None = None,
    cache_dir: Path | None = None,
    system: str | None = None,
    parse: Callable[[str], ParseResult] | None = None,
    progress: Callable[[str], None] | None = None,
    appendix: str = "",
) -> CriticRun:
    """Ask the critic once (plus at most ``settings.retries`` schema re-asks).

    ``system`` is the prompt (default: :func:`system_prompt` of the built-in kinds);
    ``parse`` turns one raw answer into findings — the run's own parser (its router and
    validator), so each answer is parsed exactly once and ``CriticRun.parsed`` is final.
    ``progress`` shows that a call is under way and for how long (the model's name and
    seconds only: never a word of the packet or the answer).
    """
    from pytest_critic22.execution.progress import ticking

    if system is None:
        system = system_prompt()
    if parse is None:

        def parse(raw: str) -> ParseResult:
            return parse_findings(raw, edit_ids, max_findings=max_findings)

    key = cache_key(packet, settings, system + appendix)
    if cache_dir is not None and not settings.fresh:
        cached = _read_cache(cache_dir, key)
        if cached is not None:
            if progress is not None:
                progress(f"{settings.model}: the cached answer (--critic22-fresh asks again)")
            return CriticRun(cached, parse(cached), cached=True)

    deadline = time.monotonic() + settings.timeout
    attempts: list[Attempt] = []
    best: tuple[int, str, ParseResult] | None = None
    problems: tuple[str, ...] = ()
    for number in range(1, settings.retries + 2):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            if not attempts:
                return CriticRun(None, None, (), f"timeout: no time left of {settings.timeout:g}s")
            break
        messages = build_messages(packet, problems, system=system, appendix=appendix)
        _trace(trace_dir, f"request-{number}.json", _request_record(messages, settings))
        start = time.monotonic()
        asking = f"asking {settings.model}" + (f" again ({number})" if number > 1 else "")
        try:
            with ticking(progress, asking) as tick:
                raw, usage = _call_with_deadline(complete, messages, remaining)
                tick.outcome = "answered"
        except CriticFailure as exc:
            cause = _scrub(str(exc))
            _trace(trace_dir, f"error-{number}.txt", cause + "\n")
            attempts.append(Attempt(number, "", (), cause, time.monotonic() - start))
            break
        _trace(trace_dir, f"response-{number}.txt", raw)
        parsed = parse(raw)
        problems = parsed.problems
        attempts.append(Attempt(number, raw, problems, "", time.monotonic() - start, usage))
        if best is None or len(problems) < best[0]:
            best = (len(problems), raw, parsed)
        if not problems:
            break
    if best is None:
        return CriticRun(None, None, tuple(attempts), attempts[-1].error if attempts else "")
    _, raw, parsed = best
    if parsed.error and not parsed.findings:
        return CriticRun(
            raw,
            parsed,
            tuple(attempts),
            f"unusable output after {len(attempts)} attempt(s): {parsed.error}",
        )
    if cache_dir is not None:
        _write_cache(cache_dir, key, raw)
    return CriticRun(raw, parsed, tuple(attempts))


def cache_key(packet: ReviewPacket, settings: CriticSettings, system: str | None = None) -> str:
    """The answer cache's key: a registered kind or check changes the prompt, so the key."""
    prompt = system if system is not None else system_prompt()
    material = json.dumps(
        {
            "packet": packet.digest,
            "model": settings.model,
            "api_base": settings.api_base,
            "prompt": PROMPT_VERSION,
            "prompt_sha256": hashlib.sha256(prompt.encode()).hexdigest(),
            "temperature": settings.temperature,
            "max_tokens": settings.max_tokens,
        },
        sort_keys=True,
    )
    return hashlib.sha256(material.encode()).hexdigest()


def _call_with_deadline(
    complete: Completion, messages: Sequence[Mapping[str, str]], remaining: float
) -> tuple[str, Mapping[str, int]]:
    """The backend gets the remaining time, and a thread makes sure it cannot overrun it."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = complete(messages, timeout=remaining)
        except BaseException as exc:  # delivered to the caller below
            box["error"] = exc

    worker = threading.Thread(target=run, name="critic22-critic", daemon=True)
    worker.start()
    worker.join(remaining + 1.0)
    if worker.is_alive():
        raise CriticFailure(f"timeout: no answer within {remaining:.0f}s")
    if "error" in box:
        error = box["error"]
        if isinstance(error, CriticFailure):
            raise error
        raise CriticFailure(_describe(error))
    text, usage = box["value"]
    if not isinstance(text, str) or not text.strip():
        raise CriticFailure("empty output: the model answered with no text")
    return text, usage


def _describe(exc: BaseException) -> str:
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    first = (str(exc).strip().splitlines() or [""])[0][:200]
    lowered = (name + " " + first).lower()
    if "timeout" in lowered or "timed out" in lowered:
        kind = "timeout"
    elif "contextwindow" in lowered or "context length" in lowered or "context_length" in lowered:
        kind = "context too long"
    elif "ratelimit" in lowered or status == 429:
        kind = "rate limited"
    elif "connection" in lowered or "connect" in lowered:
        kind = "connection failed"
    elif isinstance(status, int):
        kind = f"HTTP {status}"
    else:
        kind = "model call failed"
    return f"{kind}: {name}: {first}" if first else f"{kind}: {name}"


def _scrub(text: str) -> str:
    """Credentials never reach a log, a trace, a report or the ledger."""
    from pytest_critic22.model.scrub import scrub

    return scrub(text, os.environ)


def _request_record(
    messages: Sequence[Mapping[str, str]], settings: CriticSettings
) -> dict[str, Any]:
    return {
        "model": settings.model,
        "api_base": settings.api_base,
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
        "prompt_version": PROMPT_VERSION,
        "messages": list(messages),
    }


def _trace(folder: Path | None, name: str, content: str | Mapping[str, Any]) -> None:
    if folder is None:
        return
    text = content if isinstance(content, str) else json.dumps(content, indent=2) + "\n"
    write_file(folder / name, _scrub(text))  # no link followed inside .critic22/


def _read_cache(folder: Path, key: str) -> str | None:
    path = folder / f"{key}.json"
    try:
        return str(json.loads(read_file(path).decode("utf-8"))["raw"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_cache(folder: Path, key: str, raw: str) -> None:
    # Atomic, and no link followed inside .critic22/ (the folders on the way, the file).
    write_file(folder / f"{key}.json", json.dumps({"raw": raw, "prompt_version": PROMPT_VERSION}))


def litellm_completion(settings: CriticSettings) -> Completion:
    """The production backend: litellm, any provider. Imported here and nowhere else."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import warnings

    with warnings.catch_warnings(), _no_collections():
        warnings.simplefilter("ignore")
        import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    params: dict[str, Any] = {"temperature": settings.temperature, "num_retries": 0}
    if settings.max_tokens:
        params["max_tokens"] = settings.max_tokens
    if settings.api_base:
        params["api_base"] = settings.api_base
    try:
        supported = litellm.get_supported_openai_params(model=settings.model) or []
    except Exception:  # an unknown provider: ask without the extras
        supported = []
    if "response_format" in supported:
        params["response_format"] = {"type": "json_object"}

    def complete(
        messages: Sequence[Mapping[str, str]], *, timeout: float
    ) -> tuple[str, Mapping[str, int]]:
        # litellm builds pydantic models lazily and they warn; none of it is the user's concern.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            response = litellm.completion(
                model=settings.model, messages=list(messages), timeout=timeout, **params
            )
        choice = response.choices[0]
        text = getattr(choice.message, "content", None) or ""
        usage = getattr(response, "usage", None)
        counts = {}
        for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
            value = getattr(usage, key, None) if usage is not None else None
            if isinstance(value, int):
                counts[key] = value
        return text, counts

    return complete


@contextlib.contextmanager
def _no_collections() -> Iterator[None]:
    """The cyclic garbage collector off for a while (as it was after). litellm's import makes
    about half a million objects the collector tracks, none of them garbage here, and the
    collections their count sets off walk them again and again: a fifth of the import's CPU
    (3.9 -> 3.1 CPU-seconds here). Garbage it makes is collected once the collector is on."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


CompletionFactory = Callable[[CriticSettings], Completion]


def ask_once(
    messages: Sequence[Mapping[str, str]],
    settings: CriticSettings,
    complete: Completion,
    *,
    trace_dir: Path | None,
    name: str,
) -> tuple[str | None, str]:
    """One more request of the review loop (a debate turn, a fixer's diff): ``(raw, "")``
    or ``(None, why)``. The request and the answer are traced as ``NAME.request.json`` and
    ``NAME.response.txt``; nothing here decides anything — the loop executes what it gets."""
    _trace(trace_dir, f"{name}.request.json", _request_record(list(messages), settings))
    try:
        raw, _usage = _call_with_deadline(complete, list(messages), settings.timeout)
    except CriticFailure as exc:
        cause = _scrub(str(exc))
        _trace(trace_dir, f"{name}.error.txt", cause + "\n")
        return None, cause
    _trace(trace_dir, f"{name}.response.txt", raw)
    return raw, ""
