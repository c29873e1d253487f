"""The plugin's command-line options and ini values, as pytest shows them in ``--help``.

Imported on every pytest run (``plugin.py`` calls :func:`add_options` from
``pytest_addoption``), so it stays light. The validators, the deprecations and the readers
of these values are :mod:`pytest_critic22.config.options`.
"""

from __future__ import annotations

import pytest

from pytest_critic22.config.options import (
    DEFAULT_IMPACT_BUDGET,
    DEFAULT_RETRIES,
    DEFAULT_TEMPERATURE,
    MAX_DEFAULTS,
    Deprecated,
    as_characters,
    as_count,
    as_retries,
    as_seconds,
    as_temperature,
    as_tokens,
)

__all__ = ["add_options"]


def add_options(parser: pytest.Parser) -> None:
    """Every ``--critic22*`` option and ``critic22_*`` ini value."""
    group = parser.getgroup("critic22", "critic22: adversarial review of a candidate patch")
    _add_inputs(group)
    _add_run(group)
    _add_critic(group)
    _add_deprecated(group)
    _add_ini(parser)


def _add_inputs(group: pytest.OptionGroup) -> None:
    group.addoption(
        "--critic22",
        dest="critic22_patch",
        metavar="PATCH",
        default=None,
        help="review this unified diff file (git diff / git format-patch) against the repository",
    )
    group.addoption(
        "--critic22-spec",
        dest="critic22_spec",
        metavar="TEXT|@FILE",
        default=None,
        help="what the patch must accomplish: the text itself, or @FILE to read it from a file",
    )
    group.addoption(
        "--critic22-root-cause",
        dest="critic22_root_cause",
        metavar="TEXT|@FILE",
        default=None,
        help="the diagnosed root cause of the failure the patch fixes: the text itself, or "
        "@FILE to read it from a file",
    )
    group.addoption(
        "--critic22-obligations",
        dest="critic22_obligations",
        metavar="TEXT|@FILE",
        action="append",
        default=None,
        help="a behaviour the patch must preserve (the text itself, e.g. a test node id), or "
        "@FILE: a file of them (a JSON list of strings, or one per line); repeatable",
    )
    group.addoption(
        "--critic22-request",
        dest="critic22_request",
        metavar="FILE",
        default=None,
        help="a file: a harness's request JSON; only the packet's five elements are read from "
        "it, and rationale, confidence, votes and provenance are stripped",
    )
    group.addoption(
        "--critic22-findings",
        dest="critic22_findings",
        metavar="FILE",
        default=None,
        help='a file: replay a recorded critic output (a JSON array of findings, or {"findings": '
        "[...]}) instead of calling a model",
    )
    group.addoption(
        "--critic22-reviewer-memory",
        dest="critic22_reviewer_memory",
        metavar="FILE",
        default=None,
        help="a file of executed facts from the critic's own earlier rounds, shown to the critic "
        "under 'Your Reviewer Memory' (written by critic22 loop)",
    )
    group.addoption(
        "--critic22-full-source",
        dest="critic22_full_source",
        action="store_true",
        default=False,
        help="show the critic the full source of the touched Python modules (patched tree), "
        "not only the hunks (critic22 loop --difficulty nightmare)",
    )
    group.addoption(
        "--critic22-scar",
        dest="critic22_scar",
        metavar="FILE",
        default=None,
        help="a JSON file of falsification tests verified in earlier rounds (critic22 loop): "
        "each must pass on this candidate; one that fails again is a verified defect",
    )
    group.addoption(
        "--critic22-report",
        dest="critic22_report",
        metavar="FILE",
        default=None,
        help="a file to write the review to as JSON, for a validator",
    )
    group.addoption(
        "--critic22-sarif",
        dest="critic22_sarif",
        metavar="FILE",
        default=None,
        help="a file to write the review to as SARIF 2.1.0, for code scanning",
    )
    group.addoption(
        "--critic22-html",
        dest="critic22_html",
        metavar="FILE",
        default=None,
        help="a file to write the review to as one self-contained HTML page",
    )
    group.addoption(
        "--critic22-ledger",
        dest="critic22_ledger",
        metavar="FILE",
        default=None,
        help="a file: the append-only JSONL ledger (default: .critic22/ledger.jsonl under the "
        "rootdir)",
    )
    group.addoption(
        "--critic22-base",
        dest="critic22_base",
        metavar="REV",
        default="HEAD",
        help="the commit the patch applies to (default: HEAD)",
    )
    group.addoption(
        "--critic22-acceptance",
        dest="critic22_acceptance",
        metavar="NODEID",
        default=None,
        help="the acceptance test a counterfactual must pass (default: the first test node id "
        "named in the root cause)",
    )


def _add_run(group: pytest.OptionGroup) -> None:
    group.addoption(
        "--critic22-only",
        dest="critic22_only",
        action="store_true",
        default=False,
        help="collect nothing but the review's generated items",
    )
    group.addoption(
        "--critic22-procedure-timeout",
        dest="critic22_timeout",
        metavar="SECONDS",
        type=as_seconds,
        default=120.0,
        help="time limit of ONE test command the review runs in a tree (a finding's "
        "falsification, a preservation group, the coverage probe, critic22_tree_setup); its "
        "whole process group is killed (default 120). Not the critic's deadline: see "
        "--critic22-critic-timeout",
    )
    group.addoption(
        "--critic22-reruns",
        dest="critic22_reruns",
        metavar="N",
        type=as_count,
        default=3,
        help="consistent failing runs needed before a failure counts (default 3)",
    )
    group.addoption(
        "--critic22-rerun-mode",
        dest="critic22_rerun_mode",
        choices=("inprocess", "fresh-last", "process"),
        default="inprocess",
        help="how tests run and a failing one is confirmed (--critic22-reruns runs in all): "
        "'inprocess' (default): a failing test is executed again in the same process with "
        "fresh function fixtures (under bubblewrap the critic's tests run as sessions of one "
        "fork-server child per tree, each in a fresh fork); 'fresh-last': the same, but the "
        "last confirmation is a fresh process (a fresh fork, or a fresh child), which no "
        "state a failed attempt left behind can reach; 'process': a fresh child pytest for "
        "every run",
    )
    group.addoption(
        "--critic22-fresh-trees",
        dest="critic22_fresh_trees",
        action="store_true",
        default=False,
        help="build every tree anew with git worktree add, rather than resetting a warm tree "
        "kept from an earlier run on this repository",
    )
    group.addoption(
        "--critic22-max-findings",
        dest="critic22_max_findings",
        metavar="N",
        type=as_count,
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
        "--critic22-max-packet-chars",
        dest="critic22_max_packet_chars",
        metavar="N",
        type=as_characters,
        default=60000,
        help="size limit of the review packet; impact evidence is cut deterministically to fit "
        "(default 60000)",
    )
    group.addoption(
        "--critic22-preservation",
        dest="critic22_preservation",
        choices=("auto", "measured", "graph", "all", "explicit", "off"),
        default="auto",
        help="which existing tests guard the patch, besides explicit obligations that are test "
        "ids: graph (tests the code graph sees reach the touched symbols), measured (graph plus "
        "the tests coverage.py saw execute the touched code on the base; recorded once per base "
        "commit, cached), auto (measured when the map is cached or the suite runs within "
        "critic22_impact_budget, else graph), all (every test of the base), explicit (the "
        "obligations only) or off (default auto)",
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


def _add_critic(group: pytest.OptionGroup) -> None:
    group.addoption(
        "--critic22-model",
        dest="critic22_model",
        metavar="MODEL",
        default=None,
        help="the critic: any litellm model string (openai/gpt-4o, anthropic/..., ollama/...); "
        "also $CRITIC22_MODEL or the ini value critic22_model. Its tuning is the ini values "
        "critic22_temperature, critic22_max_tokens and critic22_retries",
    )
    group.addoption(
        "--critic22-api-base",
        dest="critic22_api_base",
        metavar="URL",
        default=None,
        help="the model provider's base URL (a local or proxy endpoint)",
    )
    group.addoption(
        "--critic22-critic-timeout",
        dest="critic22_critic_timeout",
        metavar="SECONDS",
        type=as_seconds,
        default=120.0,
        help="overall deadline of the critic model's answer, re-asks included (default 120). "
        "Not the tests' limit: see --critic22-procedure-timeout",
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


def _add_deprecated(group: pytest.OptionGroup) -> None:
    group.addoption(
        "--critic22-timeout",
        dest="critic22_timeout",
        metavar="SECONDS",
        type=as_seconds,
        action=Deprecated,
        help="deprecated alias of --critic22-procedure-timeout (removed in the next release)",
    )
    for flag, dest, metavar, validate, ini in (
        ("--critic22-temperature", "critic22_temperature", "T", as_temperature, "temperature"),
        ("--critic22-max-tokens", "critic22_max_tokens", "N", as_tokens, "max_tokens"),
        ("--critic22-retries", "critic22_retries", "N", as_retries, "retries"),
    ):
        group.addoption(
            flag,
            dest=dest,
            metavar=metavar,
            type=validate,
            action=Deprecated,
            default=None,
            help=f"deprecated: use the ini value critic22_{ini}; overrides it for this release",
        )


def _add_ini(parser: pytest.Parser) -> None:
    parser.addini("critic22_model", "the critic's litellm model string", default="")
    parser.addini(
        "critic22_temperature",
        f"sampling temperature of the critic model, 0 to 2 (default {DEFAULT_TEMPERATURE})",
        default=str(DEFAULT_TEMPERATURE),
    )
    parser.addini(
        "critic22_max_tokens",
        "cap on the critic model's answer length in tokens (default: none)",
        default="",
    )
    parser.addini(
        "critic22_retries",
        f"re-asks when the critic's records break the schema (default {DEFAULT_RETRIES})",
        default=str(DEFAULT_RETRIES),
    )
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
        "critic22_impact_budget",
        "seconds the base's suite may take under coverage.py for --critic22-preservation=auto "
        f"to measure which tests run the touched code (default {DEFAULT_IMPACT_BUDGET:g})",
        default=str(DEFAULT_IMPACT_BUDGET),
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
    for name, default in MAX_DEFAULTS:
        parser.addini(
            f"critic22_max_{name}",
            f"largest number of {name} a patch may touch and still be declined a critic",
            default=str(default),
        )
