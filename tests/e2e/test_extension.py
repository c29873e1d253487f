"""The seams, end to end: a plugin adds a procedure kind and a static check through the hooks
(tests/plugins/critic22_extension.py, nothing in the package changes); both reach the prompt
sent to the loopback model, both run on xdist workers and serially; the critic's answer is
parsed exactly once per run.

The model is asked in the run under xdist; the serial run replays the same answer from a
findings file (its subject is the run, not the model path: a second import of litellm would
cost about 8 CPU-seconds)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_critic22.execution.git import git, init_repo
from tests.fake_llm import fake_llm

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning"),
]

PLUGINS = Path(__file__).parents[1] / "plugins"
MODULE = (
    "def parse(text):\n"
    "    if text is None:\n"
    '        raise ValueError("no text")\n'
    "    return text.strip()\n"
)
PATCHED = "def parse(text):\n    # TODO: None handling\n    return text.strip()\n"


def _finding(location: str, falsification: str, claim: str) -> dict[str, Any]:
    return {
        "location": location,
        "claim": claim,
        "severity": "blocking",
        "evidence": "e1 deletes the guard",
        "falsification": falsification,
        "confidence": 0.5,
    }


ANSWER = json.dumps(
    {
        "findings": [
            _finding("e1", "mentions: raise ValueError", "The guard against None is gone."),
            _finding("e1", "static: todo-added", "The edit leaves None handling unfinished."),
            _finding("e1", "mentions: return text.strip()", "The strip is gone."),
        ]
    }
)


def _outside(pytester: pytest.Pytester, name: str) -> Path:
    """A file of this test beside (not inside) the repository under review."""
    return pytester.path.parent / f"{pytester.path.name}-{name}"


@pytest.fixture
def repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("PYTHONPATH", str(PLUGINS))
    monkeypatch.setenv("CRITIC22_PARSE_LOG", str(_outside(pytester, "parses.log")))
    monkeypatch.delenv("CRITIC", raising=False)
    monkeypatch.delenv("CRITIC22_MODEL", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # ours, when this suite runs -n
    pytester.makefile(".py", **{"textkit/__init__": "", "textkit/core": MODULE})
    pytester.makefile(
        ".py",
        **{
            "tests/test_core": "from textkit.core import parse\n\n"
            "def test_parse():\n    assert parse(' a ') == 'a'\n"
        },
    )
    init_repo(pytester.path)
    (pytester.path / "textkit" / "core.py").write_text(PATCHED)
    patch = git(["diff"], pytester.path).stdout
    git(["checkout", "--", "."], pytester.path)
    (_outside(pytester, "patch.diff")).write_text(patch)
    with open(pytester.path / ".git" / "info" / "exclude", "a") as fh:
        fh.write("runpytest-current\nstdout\nstderr\n")
    return pytester.path


def _model(url: str) -> list[str]:
    """The critic: the loopback model, through litellm."""
    return ["--critic22-model=openai/critic-test", f"--critic22-api-base={url}"]


def _run(pytester: pytest.Pytester, *critic_and_extra: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p",
        "critic22_extension",
        "-p",
        "critic22_count_parses",
        f"--critic22={_outside(pytester, 'patch.diff')}",
        *critic_and_extra,
        "--critic22-engage=always",
        "--critic22-only",
        "--critic22-reruns=1",
        f"--critic22-report={_outside(pytester, 'report.json')}",
    )


def check_the_plugin_kind_and_check_ran(
    pytester: pytest.Pytester, result: pytest.RunResult
) -> None:
    """F1 (the plugin's kind) and F2 (the plugin's check) verified, F3 refuted; the answer
    parsed once, on the controller: xdist workers received routed findings, not raw text."""
    document = json.loads((_outside(pytester, "report.json")).read_text())
    outcomes = {f["id"]: (f["route"]["kind"], f["outcome"]["status"]) for f in document["findings"]}
    assert outcomes == {
        "F1": ("mentions", "verified"),
        "F2": ("static", "verified"),
        "F3": ("mentions", "refuted"),
    }, result.stdout.str()
    assert document["disposition"]["verdict"] == "reject"
    # and the preservation group of test_core.py, and the collection check
    result.assert_outcomes(failed=2, passed=3)
    parses = (_outside(pytester, "parses.log")).read_text().splitlines()
    assert len(parses) == 1 and parses[0].split()[1] == "controller", parses


def test_a_plugin_kind_and_check_reach_the_prompt_and_run_on_xdist_workers(
    pytester: pytest.Pytester, repo: Path
) -> None:
    with fake_llm([("content", ANSWER)]) as server:
        result = _run(pytester, *_model(server.url), "-n", "2")
        assert len(server.bodies) == 1
        system = server.requests[0]["messages"][0]["content"]
    assert "mentions:        TEXT  the located edit removes TEXT" in system
    assert "todo-added: an added line that says TODO" in system
    assert "removed-guard:" in system and "property:" in system  # the built-ins stay
    check_the_plugin_kind_and_check_ran(pytester, result)


def test_a_plugin_kind_and_check_run_serially_on_a_replayed_answer(
    pytester: pytest.Pytester, repo: Path
) -> None:
    findings = _outside(pytester, "findings.json")
    findings.write_text(ANSWER)  # the model's answer of the run above, verbatim
    result = _run(pytester, f"--critic22-findings={findings}")
    check_the_plugin_kind_and_check_ran(pytester, result)


def test_collect_only_builds_no_tree_and_asks_no_model(
    pytester: pytest.Pytester, repo: Path
) -> None:
    with fake_llm([("content", ANSWER)]) as server:
        result = _run(pytester, *_model(server.url), "--collect-only")
        assert server.bodies == []
    # Nothing to list: the findings would come from the model, which collection never asks
    # (a review-only run with nothing to list exits 0, as it always did).
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["--collect-only: no tree was built and no model asked"])
    assert not (pytester.path / ".critic22" / "ledger.jsonl").exists()
    worktrees = git(["worktree", "list", "--porcelain"], repo).stdout
    assert worktrees.count("worktree ") == 1


def test_collect_only_lists_replayed_findings_checked_without_trees(
    pytester: pytest.Pytester, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(PLUGINS))  # in process: PYTHONPATH is read at start-up
    findings = _outside(pytester, "findings.json")
    records = json.loads(ANSWER)["findings"] + [
        _finding("e1", "static: no-such-check", "An unknown check."),
        _finding("e1", "counterfactual: tests/test_gone.py::test_x", "A test that is not there."),
    ]
    findings.write_text(json.dumps(records))
    base = [
        "-p",
        "critic22_extension",
        f"--critic22={_outside(pytester, 'patch.diff')}",
        f"--critic22-findings={findings}",
        "--critic22-only",
        "--collect-only",
        "-q",
    ]
    result = pytester.runpytest_inprocess(*base)
    result.stdout.fnmatch_lines(
        ["*patch.diff::F1[[]e1[]]", "*patch.diff::F2[[]e1[]]", "*patch.diff::F3[[]e1[]]"]
    )
    assert "::F4" not in result.stdout.str() and "::F5" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*downgraded F4 to advisory: static: unknown check*",
            "*downgraded F5 to advisory: counterfactual: tests/test_gone.py is not a file*",
        ]
    )
    assert not (pytester.path / ".critic22" / "ledger.jsonl").exists()
    # --critic22-engage=never holds under --collect-only too: nothing is replayed.
    never = pytester.runpytest_inprocess(*base, "--critic22-engage=never")
    assert "::F1" not in never.stdout.str()
    # A user's node id is checked at configure, before any tree and under --collect-only.
    bad = pytester.runpytest_inprocess(*base, "--critic22-acceptance=tests/nope.py::test_x")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(
        ["*--critic22-acceptance: tests/nope.py is not a file of the repository*"]
    )
