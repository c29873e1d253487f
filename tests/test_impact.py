"""Impact evidence, preservation items and the engage decision."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_critic22.apps.samples import SAMPLES_DIR, case_dir
from pytest_critic22.critic.engage import Thresholds, decide_engage
from pytest_critic22.evidence.bounding import bound_evidence
from pytest_critic22.evidence.codefacts import module_name
from pytest_critic22.evidence.codescan import scan_file
from pytest_critic22.evidence.gather import Impact, build_graph, gather_impact
from pytest_critic22.evidence.impact import edit_impact, statement_lines
from pytest_critic22.execution.git import git, init_repo
from pytest_critic22.model.patch import parse_patch
from pytest_critic22.state.ledger import read_events
from tests.fake_llm import fake_llm
from tests.helpers import write
from tests.runs import make_sample

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
    from pytest_critic22.evidence.impact import edit_impact

    (symbol,) = edit_impact(
        "pkg/core.py", graph["pkg/core.py"], graph["pkg/core.py"], [2], [2], graph
    )
    assert symbol.name == "pkg.core.run"
    assert symbol.callers == ("app.py:2", "app.py:4", "app.py:5", "pkg/__init__.py:1")


def package_impact(tmp_path: Path, files: dict[str, str], edited: dict[str, str]) -> Impact:
    """``files`` committed as the base tree, ``edited`` applied on a copy: the diff's impact."""
    base = tmp_path / "base"
    write(base, dict(files))
    init_repo(base)
    patched = tmp_path / "patched"
    shutil.copytree(base, patched)
    write(patched, dict(edited))
    diff = git(["diff", "--no-ext-diff"], patched).stdout
    return gather_impact(parse_patch(diff), base, patched, None)


FORWARD = {
    "src/pkg/__init__.py": "",
    "src/pkg/core.py": (
        "def public(x):\n    return _helper(x)\n\n\ndef _helper(x):\n    return x + 1\n"
    ),
    "tests/test_core.py": (
        "from pkg.core import _helper, public\n"
        "\n"
        "\n"
        "def test_public():\n"
        "    assert public(1) == 2\n"
        "\n"
        "\n"
        "def test_helper():\n"
        "    assert _helper(2) == 3\n"
    ),
}


def test_a_call_to_a_function_defined_further_down_the_module_is_a_caller(
    tmp_path: Path,
) -> None:
    core = FORWARD["src/pkg/core.py"].replace("return x + 1", "return 1 + x")
    impact = package_impact(tmp_path, FORWARD, {"src/pkg/core.py": core})
    (symbol,) = impact.symbols["e1"]
    assert symbol.name == "pkg.core._helper"
    # core.py:2 is the call in `public`, which comes before `def _helper`.
    assert symbol.callers == ("src/pkg/core.py:2", "tests/test_core.py:1", "tests/test_core.py:9")
    assert symbol.tests == ("tests/test_core.py::test_helper",)
    assert impact.preservation_tests == ("tests/test_core.py::test_helper",)


STAR = {
    "src/pkg/__init__.py": "from .core import *\n",
    "src/pkg/core.py": (
        '__all__ = ["helper"]\n'
        "\n"
        "\n"
        "def helper(x):\n"
        "    return x * 2\n"
        "\n"
        "\n"
        "def unlisted(x):\n"
        "    return x\n"
    ),
    "tests/test_x.py": (
        "import pkg\n"
        "from pkg import helper\n"
        "\n"
        "\n"
        "def test_through_the_package():\n"
        "    assert pkg.helper(1) == 2\n"
        "\n"
        "\n"
        "def test_imported_from_the_package():\n"
        "    assert helper(2) == 4\n"
    ),
}


def test_a_relative_star_re_export_links_the_package_tests_to_the_definition(
    tmp_path: Path,
) -> None:
    core = STAR["src/pkg/core.py"].replace("x * 2", "2 * x")
    impact = package_impact(tmp_path, STAR, {"src/pkg/core.py": core})
    (symbol,) = impact.symbols["e1"]
    assert symbol.name == "pkg.core.helper"
    assert symbol.callers == (
        "src/pkg/__init__.py:1",  # the star import itself, like `from .core import helper`
        "tests/test_x.py:2",
        "tests/test_x.py:6",  # pkg.helper(1)
        "tests/test_x.py:10",  # helper(2), imported from pkg
    )
    expected = (
        "tests/test_x.py::test_through_the_package",
        "tests/test_x.py::test_imported_from_the_package",
    )
    assert symbol.tests == expected
    assert impact.preservation_tests == expected


ABSOLUTE_STAR = {
    "pkg/__init__.py": "from pkg.core import *\n",
    "pkg/core.py": ("def helper(x):\n    return _scale(x)\n\n\ndef _scale(x):\n    return x * 2\n"),
    "tests/test_star.py": (
        "from pkg import *\n"
        "\n"
        "\n"
        "def test_star_imported():\n"
        "    result = helper(1)\n"
        "    assert result.real == 2\n"
    ),
}


def test_an_absolute_star_re_export_without_all_and_a_star_importing_test(
    tmp_path: Path,
) -> None:
    core = ABSOLUTE_STAR["pkg/core.py"].replace("return _scale(x)", "return _scale(x) + 0")
    impact = package_impact(tmp_path, ABSOLUTE_STAR, {"pkg/core.py": core})
    (symbol,) = impact.symbols["e1"]
    assert symbol.name == "pkg.core.helper"
    # The test's bare `helper` comes from `from pkg import *`, and pkg's from pkg.core's.
    assert symbol.callers == ("pkg/__init__.py:1", "tests/test_star.py:1", "tests/test_star.py:5")
    assert symbol.tests == ("tests/test_star.py::test_star_imported",)
    assert impact.preservation_tests == ("tests/test_star.py::test_star_imported",)


def test_a_star_import_takes_all_else_the_public_names_and_yields_to_own_names() -> None:
    sources = {
        "pkg/__init__.py": "from pkg.a import *\nfrom pkg.b import *\n\n\ndef mine():\n    pass\n",
        "pkg/a.py": "__all__ = ('listed',)\n\n\ndef listed():\n    pass\n\n\ndef unlisted():\n"
        "    pass\n",
        "pkg/b.py": "def public():\n    pass\n\n\ndef _private():\n    pass\n\n\ndef mine():\n"
        "    pass\n",
        "app.py": (
            "import pkg\n\npkg.listed()\npkg.unlisted()\npkg.public()\npkg._private()\npkg.mine()\n"
        ),
    }
    graph = {path: scan_file(path, text) for path, text in sources.items()}

    def callers(path: str, qualname: str) -> tuple[str, ...]:
        facts = graph[path]
        (definition,) = [d for d in facts.definitions if d.qualname == qualname]
        lines = [definition.start]
        (symbol,) = edit_impact(path, facts, facts, lines, lines, graph)
        return symbol.callers

    assert callers("pkg/a.py", "listed") == ("app.py:3", "pkg/__init__.py:1")
    assert callers("pkg/a.py", "unlisted") == ()  # not in __all__
    assert callers("pkg/b.py", "public") == ("app.py:5", "pkg/__init__.py:2")
    assert callers("pkg/b.py", "_private") == ()  # no __all__: private names stay behind
    assert callers("pkg/b.py", "mine") == ()  # pkg defines its own `mine`
    assert callers("pkg/__init__.py", "mine") == ("app.py:7",)


def test_star_import_facts_survive_the_cache(tmp_path: Path) -> None:
    write(tmp_path, dict(STAR))
    init_repo(tmp_path)
    cache = tmp_path.parent / "star-cache"
    cold, _ = build_graph(tmp_path, cache)
    warm, hits = build_graph(tmp_path, cache)
    assert hits == 3 and warm == cold
    assert warm["src/pkg/__init__.py"].stars == (("pkg.core", 1),)
    assert warm["src/pkg/core.py"].dunder_all == ("helper",)
    assert warm["tests/test_x.py"].dunder_all is None


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
# Real reviews of real repositories, run by ``pytest.main`` in this process (--critic22-only:
# the project's own tests are not collected here): a process of its own per case would only
# add its start-up, and litellm's import (about 8 CPU-seconds) where the model is asked.


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
