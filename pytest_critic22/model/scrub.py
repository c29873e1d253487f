"""Credentials never reach a log, a trace, a report or the ledger: scrub by name AND by value.

Pure functions. A secret is recognised three ways: the value of an environment variable
whose name says it is one (``*_TOKEN``, ``OPENAI_API_KEY``, ...), a credential embedded in
a value whatever its variable is called (``postgres://user:password@host``), and the
shapes tokens have in text (``Authorization: Bearer …``, ``sk-…``, ``ghp_…``, ``AKIA…``).
And a value assigned in text to a key whose name says secret, whatever the value:
``DB_PASSWORD=hunter2``, ``--api-key=…``, ``POSTGRES_PASSWORD: example``,
``"client_secret": "…"`` (``*PASSWORD*``, ``*SECRET*``, ``*TOKEN*``, ``*_KEY``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

__all__ = ["MASK", "is_secret_name", "scrub", "secret_values"]

MASK = "***"

_SECRET_WORDS = re.compile(
    r"KEY|TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|AUTH(?!OR)|COOKIE|SESSION|PRIVATE|SIGNATURE"
    r"|CERT|DSN|_PWD|^PWD_|CONN(?:ECTION)?_?STR",
    re.I,
)
_PROVIDER_PREFIXES = (
    "OPENAI",
    "ANTHROPIC",
    "AZURE",
    "AWS",
    "GOOGLE",
    "GCP",
    "GEMINI",
    "VERTEX",
    "COHERE",
    "MISTRAL",
    "GROQ",
    "HF_",
    "HUGGINGFACE",
    "LITELLM",
    "DEEPSEEK",
    "TOGETHER",
    "OPENROUTER",
    "REPLICATE",
    "PERPLEXITY",
    "FIREWORKS",
    "XAI",
    "OLLAMA",
    "BEDROCK",
    "GITHUB",
    "GH_",
    "GITLAB",
    "CRITIC22_MODEL",
    "NPM_",
    "PYPI",
    "TWINE",
    "DOCKER",
    "SSH_",
    "GPG_",
    "CI_JOB",
)

# scheme://user:password@host -> keep the user and host, mask the password.
_URL_CREDENTIAL = re.compile(
    r"(?P<head>\b[a-zA-Z][\w+.-]*://[^\s:/@'\"\\]*:)(?P<secret>[^\s@/'\"\\]+)@"
)
# scheme://TOKEN@host (a token as the user name, as git remotes and DSNs carry them).
_URL_TOKEN_USER = re.compile(
    r"(?P<head>\b[a-zA-Z][\w+.-]*://)(?P<secret>[A-Za-z0-9._~+-]{20,})@(?=[\w.-])"
)
# Authorization headers and their relatives, in logs and in HTTP traces; quotes may come
# JSON-escaped (a request saved as a string inside a JSON document).
_Q = r"(?:\\{0,3}[\"'])?"
_AUTH_HEADER = re.compile(
    r"(?P<head>\b(?:authorization|proxy-authorization|x-api-key|api-key|x-auth-token|"
    r"private-token|x-goog-api-key)\b" + _Q + r"\s*[:=]\s*" + _Q + r"\s*"
    r"(?:(?:bearer|basic|token|bot|digest)\s+)?)(?!(?:bearer|basic|token|bot|digest)\b)"
    r"(?P<secret>(?!\*{3})[^\s\"',;\\]{6,})",
    re.I,
)
_BEARER = re.compile(r"(?P<head>\b(?:bearer|basic)\s+)(?P<secret>[A-Za-z0-9._~+/=-]{12,})", re.I)
_TOKEN_SHAPES = re.compile(
    r"\b(?:sk-(?:ant-|proj-|or-)?[A-Za-z0-9_-]{16,}"
    r"|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|glpat-[A-Za-z0-9_-]{20,}"
    r"|hf_[A-Za-z0-9]{30,}"
    r"|npm_[A-Za-z0-9]{30,}"
    r"|pypi-[A-Za-z0-9_-]{40,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|AIza[0-9A-Za-z_-]{35}"
    r"|eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})"
)
_MIN_VALUE = 6  # shorter values would mask ordinary words

# A key whose value is masked wherever text assigns it. Narrower than is_secret_name (a
# variable's name): its KEY, AUTH or SESSION anywhere would mask `key=abs`, `monkey=1`,
# `session=s` in every code excerpt a report shows.
_SECRET_KEY = re.compile(r"PASSW(?:OR)?D|PASSPHRASE|SECRET|TOKEN|[_.-]KEY$|APIKEY$|_PWD$", re.I)
_KEY = r"(?<![\w.])(?P<name>[A-Za-z_][\w.-]*)"
# A quoted value (its quotes possibly JSON-escaped, as in a report; not starting with a space
# or a separator: in `f("KEY=", b"x")` the quote closes a string), or a bare one: up to a
# space, a quote, a backslash (an escape in JSON text) or the punctuation that ends a value
# in a query string, an argument list or a collection.
_QUOTED_VALUE = r"(?P<q>\\{0,3}[\"'])(?P<quoted>[^\s\"',;)\]}\\][^\"'\\\r\n]*)(?P=q)"
_BARE_VALUE = r"(?P<bare>[^\s\"'`\\,;&()\[\]{}<>]+)"
_VALUE = f"(?:{_QUOTED_VALUE}|{_BARE_VALUE})"
_ASSIGNED = re.compile(_KEY + r"(?P<sep>=)" + _VALUE)  # KEY=value, --key=value, ?token=v
_COLON = re.compile(_KEY + r"(?P<sep>:[ \t]+)" + _VALUE)  # KEY: value (YAML, a header)
_QUOTED_KEY = re.compile(  # "key": "value", 'key': 'value' (JSON, a Python dict's repr)
    r"(?P<kq>\\{0,3}[\"'])(?P<name>[A-Za-z_][\w.-]*)(?P=kq)(?P<sep>\s*:\s*)" + _QUOTED_VALUE
)
# Values that are code or a placeholder, not a secret: `password=None`, `token=token`.
_NOT_A_VALUE = frozenset(
    {"none", "null", "nil", "true", "false", "undefined", "lambda", "self", "required"}
)


def is_secret_name(name: str) -> bool:
    """Does this environment variable's name say it holds a credential?"""
    upper = name.upper()
    return bool(_SECRET_WORDS.search(upper)) or upper.startswith(_PROVIDER_PREFIXES)


def secret_values(environ: Mapping[str, str]) -> list[str]:
    """The values to mask wherever they appear: secret-named variables, and the password part
    of any credential-bearing URL, whatever its variable is called. Longest first, so a value
    containing another is masked whole."""
    found: set[str] = set()
    for name, value in environ.items():
        if len(value) >= _MIN_VALUE and is_secret_name(name):
            found.add(value)
        for match in _URL_CREDENTIAL.finditer(value):
            if len(match["secret"]) >= 3:
                found.add(match["secret"])
    return sorted(found, key=lambda v: (-len(v), v))


def scrub(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` with every credential replaced by ``***``.

    ``environ`` (usually ``os.environ``) supplies the values known to be secret; they are
    masked verbatim and in their JSON-escaped form, since ledgers and reports are JSON.
    """
    if not text:
        return text
    if environ:
        text = _mask_values(text, secret_values(environ))
    text = _URL_CREDENTIAL.sub(lambda m: m["head"] + MASK + "@", text)
    text = _URL_TOKEN_USER.sub(lambda m: m["head"] + MASK + "@", text)
    text = _AUTH_HEADER.sub(lambda m: m["head"] + MASK, text)
    text = _BEARER.sub(lambda m: m["head"] + MASK, text)
    text = _TOKEN_SHAPES.sub(MASK, text)
    return _mask_assigned(text)


def _mask_assigned(text: str) -> str:
    """Values that text assigns to a secret-named key: ``DB_PASSWORD=hunter2`` ->
    ``DB_PASSWORD=***``. The ``KEY: value`` form only for a key in capitals or a quoted value
    (``token: str`` is a Python annotation); code such as ``token=None``, ``password=password``
    or ``api_key=os.environ[...]`` is left alone."""
    if "=" in text:
        text = _ASSIGNED.sub(_assigned_mask, text)
    if ":" in text:
        text = _COLON.sub(_colon_mask, text)
        text = _QUOTED_KEY.sub(_assigned_mask, text)
    return text


def _assigned_mask(m: re.Match[str]) -> str:
    name, quoted, bare = m["name"], m["quoted"], m.groupdict().get("bare")
    value = quoted if quoted is not None else bare or ""
    if not _SECRET_KEY.search(name) or not is_secret_name(name) or _not_a_value(name, value):
        return m.group()
    if bare is not None and m.string[m.end() : m.end() + 1] in ("(", "["):
        return m.group()  # a call or a subscript: code, not a value
    head = m.group()[: (m.start("q") if quoted is not None else m.start("bare")) - m.start()]
    return f"{head}{m['q']}{MASK}{m['q']}" if quoted is not None else head + MASK


def _colon_mask(m: re.Match[str]) -> str:
    if m["quoted"] is None and any(c.islower() for c in m["name"]):
        return m.group()
    return _assigned_mask(m)


def _not_a_value(name: str, value: str) -> bool:
    lowered = value.lower()
    return (
        not value
        or value.startswith(("*", "$", "%", "<", "{"))
        or lowered in _NOT_A_VALUE
        or lowered == name.lower()
        or name.upper().endswith("TOKENS")  # max_tokens=100: a count, not a credential
    )


def _mask_values(text: str, values: Iterable[str]) -> str:
    for value in values:
        for form in _forms(value):
            if form in text:
                text = text.replace(form, MASK)
    return text


def _forms(value: str) -> list[str]:
    """How a value shows up in text: as is, JSON-escaped (once, and twice for JSON held in a
    JSON string), ASCII-escaped, in a Python repr (of str and of bytes, as a printed
    ``/proc/PID/environ`` shows it) and URL-encoded. Longest first."""
    from urllib.parse import quote

    once = json.dumps(value, ensure_ascii=False)[1:-1]
    forms = {
        value,
        once,
        json.dumps(once, ensure_ascii=False)[1:-1],
        json.dumps(value)[1:-1],
        repr(value)[1:-1],
        repr(value.encode("utf-8", "surrogateescape"))[2:-1],
        quote(value, safe=""),
    }
    return sorted((f for f in forms if f), key=len, reverse=True)
