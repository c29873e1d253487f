"""The critic-free gate cannot be talked out of a regression (invariants 14-16).

The end-to-end tier: whole pytest runs. The rest, and the whole story:
tests/unit/test_critic_free_gate.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_critic22.execution.git import git
from tests.helpers import pytester_repo, write
from tests.sandboxes import bwrap_or_skip

# A package shaped like toolz: an __init__ that imports its modules, tests beside it.
PACKAGE = {
    "toolz/__init__.py": "from .itertoolz import partition_all\nfrom .recipes import countby\n",
    "toolz/itertoolz.py": (
        "def partition_all(n, seq):\n"
        "    if n < 1:\n"
        "        raise ValueError('n must be positive')\n"
        "    seq = list(seq)\n"
        "    return [tuple(seq[i:i + n]) for i in range(0, len(seq), max(n, 1))]\n"
    ),
    "toolz/recipes.py": (
        "def countby(key, seq):\n"
        "    out = {}\n"
        "    for item in seq:\n"
        "        out[key(item)] = out.get(key(item), 0) + 1\n"
        "    return out\n"
    ),
    "tests/test_itertoolz.py": (
        "import pytest\n"
        "from toolz import partition_all\n\n"
        "def test_partition_all():\n"
        "    assert partition_all(2, [1, 2, 3]) == [(1, 2), (3,)]\n\n"
        "def test_partition_all_rejects_zero():\n"
        "    with pytest.raises(ValueError):\n"
        "        partition_all(0, [1])\n"
    ),
    "tests/test_recipes.py": (
        "from toolz import countby\n\n"
        "def test_countby():\n"
        "    assert countby(len, ['a', 'bb', 'cc']) == {1: 1, 2: 2}\n"
    ),
    "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
}


GUARD = "    if n < 1:\n        raise ValueError('n must be positive')\n"


def make_repo(path: Path) -> Path:
    return pytester_repo(path, PACKAGE, ".env")


def patch_of(repo: Path, after: dict[str, str | None], renames: dict[str, str] = {}) -> Path:  # noqa: B006
    for old, new in renames.items():
        git(["mv", old, new], repo)
    for name, content in after.items():
        if content is None:
            (repo / name).unlink()
        else:
            write(repo, {name: content})
    git(["add", "-A"], repo)
    diff = git(["diff", "--cached", "--no-ext-diff", "-M"], repo).stdout
    git(["reset", "--hard", "-q"], repo)
    out = repo.parent / "patch.diff"
    out.write_text(diff)
    return out


def review(
    pytester: pytest.Pytester, patch: Path, *extra: str
) -> tuple[pytest.RunResult, dict[str, object]]:
    report = pytester.path.parent / "review.json"
    result = pytester.runpytest(
        f"--critic22={patch}",
        "--critic22-only",
        "--critic22-reruns=1",
        f"--critic22-report={report}",
        "-p",
        "no:cacheprovider",
        *extra,
    )
    return result, json.loads(report.read_text())


def preservation(document: dict[str, object]) -> dict[str, dict[str, str]]:
    """Each preservation group's outcome as ``{"status": ..., "reason": ...}``."""
    groups = document["preservation"]
    assert isinstance(groups, list)
    return {g["group"]: {"status": g["outcome"], "reason": g["reason"]} for g in groups}


@pytest.mark.e2e
def test_a_syntax_error_rejects_with_no_critic_naming_the_module(pytester: pytest.Pytester) -> None:
    repo = make_repo(pytester.path)
    source = PACKAGE["toolz/itertoolz.py"].replace(
        "def partition_all(n, seq):", "def partition_all(n, seq)"
    )
    patch = patch_of(repo, {"toolz/itertoolz.py": source})
    result, document = review(pytester, patch)
    assert result.ret == 1
    assert document["disposition"]["verdict"] == "reject"  # type: ignore[index]
    outcome = preservation(document)["collection"]
    assert outcome["status"] == "verified"
    assert "toolz/itertoolz.py: SyntaxError: expected ':' (line 1)" in outcome["reason"]
    assert "SyntaxError: expected ':' (toolz/itertoolz.py, line 1)" in outcome["reason"]
    result.stdout.fnmatch_lines(["*FAILED*preserve?collection?*"])


@pytest.mark.e2e
def test_the_plugins_own_settings_in_the_projects_configuration_do_not_hide_a_regression(
    pytester: pytest.Pytester,
) -> None:
    """``addopts = --critic22-reruns=2`` and a ``critic22_*`` ini value under
    ``--strict-config``: the children (which run without the plugin) know them, so the
    regression is run and verified, not "pytest usage error" on every tree and PROCEED."""
    config = (
        "[tool.pytest.ini_options]\n"
        'testpaths = ["tests"]\n'
        'addopts = "--critic22-reruns=2 --strict-config"\n'
        'critic22_model = ""\n'
    )
    repo = make_repo(pytester.path)
    write(repo, {"pyproject.toml": config})
    git(["commit", "-qam", "the plugin configured"], repo)
    source = PACKAGE["toolz/itertoolz.py"].replace(GUARD, "")
    patch = patch_of(repo, {"toolz/itertoolz.py": source})
    result, document = review(pytester, patch)
    assert result.ret == 1
    assert document["disposition"]["verdict"] == "reject", preservation(document)
    assert preservation(document)["collection"]["status"] == "refuted"
    assert preservation(document)["tests/test_itertoolz.py"]["status"] == "verified"


@pytest.mark.e2e
def test_a_broken_rename_rejects_with_no_critic(pytester: pytest.Pytester) -> None:
    repo = make_repo(pytester.path)
    patch = patch_of(repo, {}, renames={"toolz/recipes.py": "toolz/recipes2.py"})
    result, document = review(pytester, patch)
    assert result.ret == 1
    outcome = preservation(document)["collection"]
    assert outcome["status"] == "verified"
    assert (
        "tests/test_itertoolz.py: ModuleNotFoundError: No module named 'toolz.recipes'"
        in (outcome["reason"])
    )


@pytest.mark.e2e
def test_a_configuration_that_breaks_collection_rejects(pytester: pytest.Pytester) -> None:
    repo = make_repo(pytester.path)
    patch = patch_of(
        repo,
        {
            "pyproject.toml": PACKAGE["pyproject.toml"] + 'addopts = "-p no:junitxml"\n',
            "toolz/itertoolz.py": PACKAGE["toolz/itertoolz.py"].replace(GUARD, ""),
        },
    )
    result, document = review(pytester, patch)
    assert result.ret == 1
    assert document["disposition"]["verdict"] == "reject"  # type: ignore[index]
    assert document["harness_changed"] == ["pyproject.toml"]
    assert preservation(document)["collection"]["status"] == "verified"


@pytest.mark.e2e
def test_a_configuration_under_which_nothing_collects_rejects(pytester: pytest.Pytester) -> None:
    repo = make_repo(pytester.path)
    patch = patch_of(
        repo,
        {
            "pytest.ini": "[pytest]\npython_files = nothing_*.py\n",
            "toolz/itertoolz.py": PACKAGE["toolz/itertoolz.py"].replace(GUARD, ""),
        },
    )
    result, document = review(pytester, patch)
    assert result.ret == 1
    assert document["harness_changed"] == ["pytest.ini"]
    collection = preservation(document)["collection"]
    assert collection["status"] == "verified"
    assert "pytest collects no test there (exit 5)" in collection["reason"]


@pytest.mark.e2e
def test_a_conftest_that_marks_every_report_passed_does_not_proceed(
    pytester: pytest.Pytester,
) -> None:
    repo = make_repo(pytester.path)
    rewire = (
        "import pytest\n\n"
        "@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n"
        "    report = outcome.get_result()\n"
        "    report.outcome = 'passed'\n"
        "    report.longrepr = None\n"
    )
    patch = patch_of(
        repo,
        {
            "conftest.py": rewire,
            "toolz/itertoolz.py": PACKAGE["toolz/itertoolz.py"].replace(GUARD, ""),
        },
    )
    result, document = review(pytester, patch)
    assert document["harness_changed"] == ["conftest.py"]
    assert document["disposition"]["verdict"] == "reject"  # type: ignore[index]
    group = preservation(document)["tests/test_itertoolz.py"]
    assert group["status"] == "verified"
    assert "under the base's harness" in group["reason"]
    result.stdout.fnmatch_lines(["*the patch changes the test harness (conftest.py)*"])


RESTORE = (
    "test:\n"
    "import pathlib\n"
    "# At import: put the guard back in the tree this test runs in, then pass.\n"
    "src = pathlib.Path('toolz/itertoolz.py')\n"
    "text = src.read_text()\n"
    "if 'n must be positive' not in text:\n"
    "    src.write_text(text.replace('    seq = list(seq)', "
    "\"    if n < 1:\\n        raise ValueError('n must be positive')\\n    seq = list(seq)\"))\n"
    "def test_nothing():\n"
    "    assert True\n"
)


@pytest.mark.e2e
@pytest.mark.parametrize("mode", ["bwrap", "rlimits"])
def test_a_critic_test_that_rewrites_its_tree_cannot_undo_a_preservation_reject(
    pytester: pytest.Pytester, mode: str
) -> None:
    if mode == "bwrap":
        bwrap_or_skip()
    repo = make_repo(pytester.path)
    patch = patch_of(repo, {"toolz/itertoolz.py": PACKAGE["toolz/itertoolz.py"].replace(GUARD, "")})
    findings = repo.parent / "f.json"
    records = [
        {
            "location": location,
            "claim": "nothing is wrong",
            "severity": "blocking",
            "evidence": "x",
            "falsification": RESTORE,
            "confidence": 0.1,
        }
        for location in ("e1", "whole-patch")
    ]
    findings.write_text(json.dumps(records))
    result, document = review(
        pytester, patch, f"--critic22-findings={findings}", f"--critic22-sandbox={mode}"
    )
    assert document["disposition"]["verdict"] == "reject"  # type: ignore[index]
    assert preservation(document)["tests/test_itertoolz.py"]["status"] == "verified"
    assert result.ret == 1
    # Both critic tests ran and passed: each rewrote its own view (a failed write would have
    # raised at import), and neither rewrite reached the tree preservation judged.
    outcomes = {f["id"]: f["outcome"]["status"] for f in document["findings"]}  # type: ignore[union-attr]
    assert outcomes == {"F1": "refuted", "F2": "refuted"}


@pytest.mark.e2e
def test_a_critic_test_cannot_read_the_checkouts_untracked_files_under_bwrap(
    pytester: pytest.Pytester,
) -> None:
    bwrap_or_skip()
    repo = make_repo(pytester.path)
    (repo / ".env").write_text("DB_PASSWORD=hunter2-secret\n")
    patch = patch_of(repo, {"toolz/recipes.py": PACKAGE["toolz/recipes.py"] + "\n# touched\n"})
    leak = (
        "test:\n"
        f"CHECKOUT = {str(repo)!r}\n"
        "def test_read_env():\n"
        "    import os\n"
        "    seen = os.path.exists(os.path.join(CHECKOUT, '.env'))\n"
        "    text = open(os.path.join(CHECKOUT, '.env')).read() if seen else ''\n"
        "    assert not seen, text[::-1]\n"
    )
    findings = repo.parent / "f.json"
    records = [
        {
            "location": "e1",
            "claim": "reads the checkout",
            "severity": "blocking",
            "evidence": "x",
            "falsification": leak,
            "confidence": 0.1,
        }
    ]
    findings.write_text(json.dumps(records))
    _, document = review(
        pytester, patch, f"--critic22-findings={findings}", "--critic22-sandbox=bwrap"
    )
    text = json.dumps(document)
    assert "terces-2retnuh" not in text and "hunter2" not in text
    outcome = {f["id"]: f["outcome"] for f in document["findings"]}  # type: ignore[union-attr]
    assert outcome["F1"]["status"] == "refuted"  # the test passes: the file is not there
