"""Review independence: does the critic share a provider family with the patch's author or
the loop's fixer? A same-family acquittal is provisional; only cross-family is accepted."""

from __future__ import annotations

from pytest_critic22.apps.loop.options import LoopOptions

__all__ = ["family", "independence"]


_FAMILIES = (
    ("gpt", "openai"),
    ("chatgpt", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("claude", "anthropic"),
    ("gemini", "google"),
    ("gemma", "google"),
    ("mistral", "mistral"),
    ("codestral", "mistral"),
    ("llama", "meta"),
    ("deepseek", "deepseek"),
    ("qwen", "qwen"),
    ("grok", "xai"),
)


def family(model: str | None) -> str | None:
    """A model's provider family from its litellm string: the model name's known prefix,
    else the provider prefix (``openai/...``); None when unknown."""
    if not model:
        return None
    parts = model.lower().split("/")
    for name, fam in _FAMILIES:
        if parts[-1].startswith(name):
            return fam
    return parts[0] if len(parts) > 1 else None


def independence(opts: LoopOptions) -> dict[str, str]:
    critic = None if opts.findings_dir is not None else family(opts.model)
    others = [family(m) for m in (opts.author_model, opts.fixer_model) if m]
    if critic is None or not others or None in others:
        independence = "unknown"
    elif critic in others:
        independence = "same-family"
    else:
        independence = "cross-family"
    accepted = "accepted" if independence == "cross-family" else "provisional"
    return {"review_independence": independence, "acceptance_status": accepted}
