"""The pytest entry point (``pytest11: critic22``): options, and nothing heavy.

Everything the review needs is imported only when ``--critic22`` is given, so a pytest
run without it pays for this module alone: no unidiff, no libcst, no litellm.
"""

from __future__ import annotations

import pytest

#: The name the review session is registered under: ``pluginmanager.get_plugin(PLUGIN_NAME)``.
PLUGIN_NAME = "critic22-session"


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_critic22 import hooks

    pluginmanager.add_hookspecs(hooks)


#: The ini limits of the blast radius a critic may be declined for: (name, default).
_MAX_DEFAULTS = (("edits", 3), ("files", 2), ("symbols", 4), ("callers", 12), ("modules", 3))


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("critic22", "critic22: adversarial review of a candidate patch")
    group.addoption(
        "--critic22",
        dest="critic22_patch",
        metavar="PATCH",
        default=None,
        help="review this unified diff (git diff / git format-patch) against the repository",
    )
    group.addoption(
        "--critic22-spec",
        dest="critic22_spec",
        metavar="TEXT|@FILE",
        default=None,
        help="what the patch must accomplish (text, or a file)",
    )
    group.addoption(
        "--critic22-root-cause",
        dest="critic22_root_cause",
        metavar="TEXT|@FILE",
        default=None,
        help="the diagnosed root cause of the failure the patch fixes (text, or a file)",
    )
    group.addoption(
        "--critic22-obligations",
        dest="critic22_obligations",
        metavar="TEXT|FILE",
        action="append",
        default=None,
        help="a behaviour the patch must preserve, or a file of them (one per line or a JSON "
        "list); repeatable",
    )
    group.addoption(
        "--critic22-request",
        dest="critic22_request",
        metavar="FILE",
        default=None,
        help="a harness's request JSON; only the packet's five elements are read from it, "
        "and rationale, confidence, votes and provenance are stripped",
    )
    group.addoption(
        "--critic22-ledger",
        dest="critic22_ledger",
        metavar="PATH",
        default=None,
        help="append-only JSONL ledger (default: .critic22/ledger.jsonl under the rootdir)",
    )

    group.addoption(
        "--critic22-findings",
        dest="critic22_findings",
        metavar="FILE",
        default=None,
        help='replay a recorded critic output (a JSON array of findings, or {"findings": '
        "[...]}) instead of calling a model",
    )
    group.addoption(
        "--critic22-report",
        dest="critic22_report",
        metavar="FILE",
        default=None,
        help="write the review as JSON for a validator",
    )
    group.addoption(
        "--critic22-base",
        dest="critic22_base",
        metavar="REV",
        default="HEAD",
        help="the commit the patch applies to (default: HEAD)",
    )
    group.addoption(
        "--critic22-only",
        dest="critic22_only",
        action="store_true",
        default=False,
        help="collect nothing but the review's generated items",
    )
    group.addoption(
        "--critic22-acceptance",
        dest="critic22_acceptance",
        metavar="NODEID",
        default=None,
        help="the acceptance test a counterfactual must pass (default: the first test node id "
        "named in the root cause)",
    )
    group.addoption(
        "--critic22-timeout",
        dest="critic22_timeout",
        metavar="SECONDS",
        type=_positive_float,
        default=120.0,
        help="time limit of one procedure run; the whole process group is killed (default 120)",
    )
    group.addoption(
        "--critic22-reruns",
        dest="critic22_reruns",
        metavar="N",
        type=_positive_int,
        default=3,
        help="consistent failing runs needed before a failure counts (default 3)",
    )
    group.addoption(
        "--critic22-max-findings",
        dest="critic22_max_findings",
        metavar="N",
        type=_positive_int,
        default=20,
        help="findings beyond this many are dropped (default 20)",
    )
    group.addoption(
        "--critic22-pythonpath",
        dest="critic22_pythonpath",
        metavar="DIRS",
        default=None,
        help="comma-separated folders, relative to a tree, put first on PYTHONPATH for the code "
        "under test (default: src/ if present, and the tree's root)",
    )
    group.addoption(
        "--critic22-model",
        dest="critic22_model",
        metavar="MODEL",
        default=None,
        help="the critic: any litellm model string (openai/gpt-4o, anthropic/..., ollama/...); "
        "also $CRITIC22_MODEL or the ini value critic22_model",
    )
    group.addoption(
        "--critic22-api-base",
        dest="critic22_api_base",
        metavar="URL",
        default=None,
        help="the model provider's base URL (a local or proxy endpoint)",
    )
    group.addoption(
        "--critic22-temperature",
        dest="critic22_temperature",
        metavar="T",
        type=_non_negative_float,
        default=0.2,
        help="sampling temperature of the critic (default 0.2)",
    )
    group.addoption(
        "--critic22-max-tokens",
        dest="critic22_max_tokens",
        metavar="N",
        type=_positive_int,
        default=None,
        help="cap on the critic's answer length in tokens",
    )
    group.addoption(
        "--critic22-critic-timeout",
        dest="critic22_critic_timeout",
        metavar="SECONDS",
        type=_positive_float,
        default=120.0,
        help="overall deadline of the critic, re-asks included (default 120)",
    )
    group.addoption(
        "--critic22-retries",
        dest="critic22_retries",
        metavar="N",
        type=_non_negative_int,
        default=2,
        help="re-asks when the critic's records break the schema (default 2)",
    )
    group.addoption(
        "--critic22-fresh",
        dest="critic22_fresh",
        action="store_true",
        default=False,
        help="ask the model even when .critic22/cache holds an answer for this exact packet",
    )
    group.addoption(
        "--critic22-engage",
        dest="critic22_engage",
        choices=("auto", "always", "never"),
        default="auto",
        help="engage the critic: auto (when a model or recorded output is given), always, never "
        "(CRITIC=off in the environment also means never)",
    )
    group.addoption(
        "--critic22-max-packet-chars",
        dest="critic22_max_packet_chars",
        metavar="N",
        type=_positive_int,
        default=60000,
        help="size limit of the review packet; impact evidence is cut deterministically to fit "
        "(default 60000)",
    )
    group.addoption(
        "--critic22-preservation",
        dest="critic22_preservation",
        choices=("auto", "explicit", "off"),
        default="auto",
        help="preservation items: auto (explicit obligations that are test ids, plus existing "
        "tests that reach the touched symbols), explicit, or off (default auto)",
    )
    group.addoption(
        "--critic22-allow-incomplete",
        dest="critic22_allow_incomplete",
        action="store_true",
        default=False,
        help="do not fail the run when the verdict is INCOMPLETE (the review could not look: "
        "a required critic gave nothing usable, a tree could not import the code, the run was "
        "interrupted); the verdict is still recorded as INCOMPLETE",
    )
    group.addoption(
        "--critic22-sandbox",
        dest="critic22_sandbox",
        choices=("auto", "bwrap", "rlimits"),
        default=None,
        help="how patch and critic code runs: bwrap (bubblewrap namespaces: read-only "
        "filesystem but its own tree, no network, no way out), rlimits (resource limits only), "
        "or auto (bwrap when it works here, else rlimits with a warning; the default; also the "
        "ini value critic22_sandbox)",
    )
    group.addoption(
        "--critic22-pass-env",
        dest="critic22_pass_env",
        metavar="NAME",
        action="append",
        default=None,
        help="an environment variable the project's tests need, passed to the sandboxed runs "
        "(which otherwise see only PATH, locale and time zone); repeatable; also the ini value "
        "critic22_pass_env",
    )
    parser.addini("critic22_model", "the critic's litellm model string", default="")
    parser.addini(
        "critic22_copy",
        "globs of untracked or ignored files copied from the checkout into every tree "
        "(e.g. src/*/_version.py written by hatch-vcs or setuptools-scm)",
        type="args",
        default=[],
    )
    parser.addini(
        "critic22_tree_setup",
        "a command run once in each new tree, inside the sandbox, before any test (e.g. "
        "python -m setuptools_scm --force-write-version-files)",
        default="",
    )
    parser.addini(
        "critic22_sandbox", "how patch and critic code runs: auto, bwrap or rlimits", default="auto"
    )
    parser.addini(
        "critic22_pass_env",
        "environment variables passed to the sandboxed runs",
        type="args",
        default=[],
    )
    for name, default in _MAX_DEFAULTS:
        parser.addini(
            f"critic22_max_{name}",
            f"largest number of {name} a patch may touch and still be declined a critic",
            default=str(default),
        )


def _non_negative_float(value: str) -> float:
    import argparse

    number = _positive_float(value) if value.strip() not in ("0", "0.0") else 0.0
    if number < 0:  # pragma: no cover - _positive_float already refuses it
        raise argparse.ArgumentTypeError(f"{value!r} must not be negative")
    return number


def _non_negative_int(value: str) -> int:
    return 0 if value.strip() == "0" else _positive_int(value)


def _positive_float(value: str) -> float:
    import argparse

    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not number > 0:
        raise argparse.ArgumentTypeError(f"{value!r} must be greater than 0")
    return number


def _positive_int(value: str) -> int:
    import argparse

    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} must be at least 1")
    return number


def check_ini(config: pytest.Config) -> dict[str, int]:
    """The ``critic22_max_*`` ini values as numbers; a bad one is a one-line UsageError."""
    return {
        name: _ini_whole_number(
            f"critic22_max_{name}", config.getini(f"critic22_max_{name}"), default
        )
        for name, default in _MAX_DEFAULTS
    }


def _ini_whole_number(key: str, value: object, default: int) -> int:
    text = str(value).strip()
    try:
        number = int(text)
    except ValueError:
        raise pytest.UsageError(
            f"ini {key}: {text!r} is not a whole number (the default is {default})"
        ) from None
    if number < 0:
        raise pytest.UsageError(
            f"ini {key}: {text!r} must not be negative (the default is {default})"
        )
    return number


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "critic22: an item generated by pytest-critic22 from a review finding"
    )
    if not config.getoption("critic22_patch", default=None):
        return
    from pytest_critic22.session import Critic22Plugin

    plugin = Critic22Plugin.from_config(config)
    config.pluginmanager.register(plugin, PLUGIN_NAME)
