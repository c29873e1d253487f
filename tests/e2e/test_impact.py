"""Impact evidence, preservation items and the engage decision.

The end-to-end tier: whole pytest runs. The rest, and the whole story: tests/unit/test_impact.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_critic22.apps.samples import case_dir
from pytest_critic22.execution.git import git, init_repo
from pytest_critic22.execution.ledger import read_events
from tests.fake_llm import fake_llm
from tests.runs import make_sample


@pytest.mark.e2e
@pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")
def test_a_regression_fails_a_preservation_item_with_no_critic(pytester: pytest.Pytester) -> None:
    make_sample(pytester, "textstats")
    result = pytester.runpytest_inprocess(
        f"--critic22={case_dir('textstats', 'median-drops-guard') / 'patch.diff'}",
        "--critic22-engage=never",
        "--critic22-only",
        "--critic22-reruns=1",
    )
    result.assert_outcomes(failed=1, passed=1)  # the regression; the collection check holds
    result.stdout.fnmatch_lines(
        [
            "*critic22 preservation tests/test_stats.py: verified regression*",
            "*regression: tests/test_stats.py::test_mean_empty pass on the base and fail on*",
            "critic: not engaged — --critic22-engage=never",
            "verdict: REJECT — 1 verified blocking defect: preserve[[]tests/test_stats.py[]]",
        ]
    )


SMALL = {
    "calc.py": "def add(a, b):\n    return a + b\n",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
}


def small_repo(pytester: pytest.Pytester, after: str, extra_tests: str = "") -> Path:
    files = dict(SMALL)
    files["tests/test_calc.py"] += extra_tests
    for name, text in files.items():
        (pytester.path / name).parent.mkdir(parents=True, exist_ok=True)
        (pytester.path / name).write_text(text)
    init_repo(pytester.path)
    (pytester.path / "calc.py").write_text(after)
    diff = git(["diff", "--no-ext-diff"], pytester.path).stdout
    git(["checkout", "-q", "--", "."], pytester.path)
    patch = pytester.path.parent / "p.diff"
    patch.write_text(diff)
    return patch


@pytest.mark.e2e
@pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")
@pytest.mark.parametrize(
    ("after", "engaged", "reason"),
    [
        ("def add(a, b):\n    return b + a\n", False, "covered"),
        (
            "def add(a, b):\n    if a is None:\n        return b\n    return b + a\n",
            True,
            "changed lines not covered by preservation tests: calc.py:3",
        ),
    ],
    ids=["covered", "uncovered-branch"],
)
def test_a_small_covered_patch_is_declined_and_an_uncovered_branch_engages(
    litellm_loaded: None,
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    after: str,
    engaged: bool,
    reason: str,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # what the plugin sets anyway
    monkeypatch.delenv("CRITIC", raising=False)
    monkeypatch.delenv("CRITIC22_MODEL", raising=False)
    patch = small_repo(pytester, after)
    with fake_llm([("content", "[]")]) as server:
        result = pytester.runpytest_inprocess(
            f"--critic22={patch}",
            "--critic22-model=openai/critic-test",
            f"--critic22-api-base={server.url}",
            "--critic22-only",
        )
        assert len(server.bodies) == (1 if engaged else 0)
    assert result.ret == 0
    events = read_events(pytester.path / ".critic22" / "ledger.jsonl")
    (decision,) = [e["payload"] for e in events if e["event"] == "engage"]
    assert decision["engage"] is engaged and decision["reason"] == reason
    if not engaged:
        result.stdout.fnmatch_lines(["critic: not engaged — covered"])


@pytest.mark.e2e
@pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")
def test_a_test_that_already_fails_on_base_is_reported_as_pre_existing(
    pytester: pytest.Pytester,
) -> None:
    broken = "\n\ndef test_add_strings():\n    assert add('a', 'b') == 'ab!'\n"
    patch = small_repo(pytester, "def add(a, b):\n    return b + a\n", extra_tests=broken)
    result = pytester.runpytest_inprocess(
        f"--critic22={patch}", "--critic22-only", "--critic22-reruns=1", "-rs"
    )
    result.assert_outcomes(skipped=1, passed=1)  # and the collection check
    result.stdout.fnmatch_lines(
        ["*fail on the base too (pre-existing, not the patch's): *::test_add_strings*"]
    )
