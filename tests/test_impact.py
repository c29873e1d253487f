"""Impact evidence, preservation items and the engage decision."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_critic22.diffparse import parse_patch
from pytest_critic22.engage import Thresholds, decide_engage
from pytest_critic22.evidence import build_graph, gather_impact
from pytest_critic22.gitio import git, init_repo
from pytest_critic22.impact import bound_evidence, module_name, scan_file, statement_lines
from pytest_critic22.ledger import read_events
from pytest_critic22.samples import SAMPLES_DIR, case_dir
from tests.e2e import make_sample
from tests.fake_llm import fake_llm

INVENTORY_CASE = case_dir("inventory", "remove-off-by-one")


@pytest.fixture(scope="module")
def inventory_trees(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The inventory sample as base and as patched folder (shared: building it is I/O)."""
    root = tmp_path_factory.mktemp("inventory")
    base = root / "base"
    shutil.copytree(SAMPLES_DIR / "inventory" / "repo", base)
    init_repo(base)
    patched = root / "patched"
    shutil.copytree(base, patched)
    git(["apply", str(INVENTORY_CASE / "patch.diff")], patched)
    return base, patched


def test_impact_evidence_names_symbols_callers_and_tests_of_each_edit(
    inventory_trees: tuple[Path, Path],
) -> None:
    base, patched = inventory_trees
    patch = parse_patch((INVENTORY_CASE / "patch.diff").read_text())
    impact = gather_impact(patch, base, patched, None)
    assert impact.evidence["edits"]["e1"] == {
        "file": "src/inventory/store.py",
        "module": "inventory.store",
        "symbols": [
            {
                "name": "inventory.store.Inventory.remove",
                "kind": "function",
                "signature": "remove(self, item: str, qty: int=1)",
                "signature_changed": False,
                "public": True,
                "callers": [
                    "src/inventory/restock.py:10",  # source: Stock (an `import ... as` alias)
                    "src/inventory/restock.py:17",  # inv = store_mod.Inventory(); inv.remove()
                    "tests/test_store.py:15",
                    "tests/test_store.py:27",
                ],
                "tests": [
                    "tests/test_store.py::test_remove_unknown_item",
                    "tests/test_store.py::test_remove_too_many",
                ],
            }
        ],
    }
    assert impact.evidence["blast_radius"] == {
        "edits": 2,
        "files": 2,
        "symbols": 2,
        "callers": 4,
        "modules": 3,
    }
    # Only tests that exist on the base are preservation obligations: the patch adds the other.
    assert impact.preservation_tests == ("tests/test_store.py::test_remove_unknown_item",)


def test_a_re_export_and_an_aliased_import_resolve_to_the_definition() -> None:
    graph = {
        "pkg/__init__.py": scan_file("pkg/__init__.py", "from pkg.core import run as go\n"),
        "pkg/core.py": scan_file("pkg/core.py", "def run(x):\n    return x\n"),
        "app.py": scan_file("app.py", "import pkg as p\nfrom pkg import go\n\ngo(1)\np.go(2)\n"),
    }
    from pytest_critic22.impact import edit_impact

    (symbol,) = edit_impact(
        "pkg/core.py", graph["pkg/core.py"], graph["pkg/core.py"], [2], [2], graph
    )
    assert symbol.name == "pkg.core.run"
    assert symbol.callers == ("app.py:2", "app.py:4", "app.py:5", "pkg/__init__.py:1")


def test_a_file_that_does_not_parse_is_listed_not_fatal() -> None:
    facts = scan_file("bad.py", "def broken(:\n")
    assert facts.parse_error and facts.definitions == ()


def test_the_graph_is_cached_by_content(tmp_path: Path) -> None:
    for i in range(5):
        (tmp_path / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    init_repo(tmp_path)
    cache = tmp_path.parent / "graph-cache"
    cold, cold_hits = build_graph(tmp_path, cache)
    warm, warm_hits = build_graph(tmp_path, cache)
    assert (cold_hits, warm_hits) == (0, 5) and cold == warm
    (tmp_path / "m0.py").write_text("def g():\n    pass\n")
    _, hits = build_graph(tmp_path, cache)
    assert hits == 4  # only the changed file is parsed again


@pytest.mark.parametrize(
    ("path", "module"),
    [
        ("src/pkg/mod.py", "pkg.mod"),
        ("pkg/__init__.py", "pkg"),
        ("tests/test_a.py", "tests.test_a"),
    ],
)
def test_module_names(path: str, module: str) -> None:
    assert module_name(path) == module


def test_a_multi_line_statement_counts_from_its_first_line() -> None:
    source = "x = f(\n    1,\n    2,\n)\nif x:\n    y = [\n        3]\n"
    assert statement_lines(source) == {1: 1, 2: 1, 3: 1, 4: 1, 5: 5, 6: 6, 7: 6}


def test_evidence_is_cut_deterministically_to_the_budget() -> None:
    evidence = {
        "edits": {
            "e1": {"symbols": [{"name": "m.f", "callers": [f"a.py:{i}" for i in range(50)]}]}
        },
        "blast_radius": {"edits": 1},
    }
    full = len(json.dumps(evidence, sort_keys=True, separators=(",", ":")))
    cut, note = bound_evidence(evidence, full - 100)
    again, _ = bound_evidence(evidence, full - 100)
    assert cut == again and note.startswith("callers and tests cut to at most")
    assert len(json.dumps(cut, sort_keys=True, separators=(",", ":"))) <= full - 100
    assert bound_evidence(evidence, full)[1] == ""
    tiny, note = bound_evidence(evidence, 30)
    assert tiny["blast_radius"] == {"edits": 1} and "dropped" in note


@pytest.mark.parametrize(
    ("radius", "uncovered", "status", "engage", "reason"),
    [
        ({"edits": 1, "files": 1}, {}, "passed", False, "covered"),
        ({"edits": 9, "files": 1}, {}, "passed", True, "blast radius: edits 9 > 3"),
        (
            {"edits": 1},
            {"m.py": [3, 4]},
            "passed",
            True,
            "not covered by preservation tests: m.py:3,4",
        ),
        ({"edits": 1}, {}, "failed", True, "preservation tests on the patched tree: failed"),
    ],
)
def test_decide_engage(
    radius: dict[str, int], uncovered: dict[str, list[int]], status: str, engage: bool, reason: str
) -> None:
    decision = decide_engage(
        radius=radius, uncovered=uncovered, preservation_status=status, thresholds=Thresholds()
    )
    assert decision.engage is engage and reason in decision.reason


# -- end to end ------------------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")
def test_a_regression_fails_a_preservation_item_with_no_critic(pytester: pytest.Pytester) -> None:
    make_sample(pytester, "textstats")
    result = pytester.runpytest_subprocess(
        f"--critic22={case_dir('textstats', 'median-drops-guard') / 'patch.diff'}",
        "--critic22-engage=never",
        "--critic22-only",
        "--critic22-reruns=1",
    )
    result.assert_outcomes(failed=1)
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
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    after: str,
    engaged: bool,
    reason: str,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    patch = small_repo(pytester, after)
    with fake_llm([("content", "[]")]) as server:
        result = pytester.runpytest_subprocess(
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
    result = pytester.runpytest_subprocess(
        f"--critic22={patch}", "--critic22-only", "--critic22-reruns=1", "-rs"
    )
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        ["*fail on the base too (pre-existing, not the patch's): *::test_add_strings*"]
    )
