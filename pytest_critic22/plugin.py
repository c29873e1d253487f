"""The pytest entry point (``pytest11: critic22``): options, and nothing heavy.

Everything the review needs is imported only when ``--critic22`` is given, so a pytest
run without it pays for this module alone: no unidiff, no libcst, no litellm.
"""

from __future__ import annotations

import pytest

#: The name the review session is registered under: ``pluginmanager.get_plugin(PLUGIN_NAME)``.
PLUGIN_NAME = "critic22-session"


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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "critic22: an item generated by pytest-critic22 from a review finding"
    )
    if not config.getoption("critic22_patch", default=None):
        return
    from pytest_critic22.session import Critic22Plugin

    plugin = Critic22Plugin.from_config(config)
    config.pluginmanager.register(plugin, PLUGIN_NAME)
