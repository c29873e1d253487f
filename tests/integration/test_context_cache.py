"""The packet's code context is built once per file content.

The integration tier: with real git and sandboxed child processes. The rest, and the whole story:
tests/unit/test_context_cache.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_critic22.evidence import gather as evidence_module
from pytest_critic22.evidence.codeblocks import (
    SourceContext,
    source_context,
)
from pytest_critic22.evidence.gather import Impact, gather_impact
from pytest_critic22.execution.git import git, init_repo
from pytest_critic22.model.patch import parse_patch
from tests.helpers import write
from tests.unit.test_context_cache import EDITED, STORE

PROJECT: dict[str, str | bytes] = {
    "src/shop/__init__.py": "from shop.store import Inventory\n",
    "src/shop/helpers.py": 'def normalise(name: str) -> str:\n    """Lower-case."""\n'
    "    return name.lower()\n",
    "src/shop/store.py": STORE,
    "tests/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef stock():\n    return {}\n",
    "tests/test_store.py": (
        "import pytest\n"
        "\n"
        "from shop import Inventory\n"
        "\n"
        "\n"
        "def test_remove_unknown():\n"
        "    with pytest.raises(KeyError):\n"
        '        Inventory().remove("pear")\n'
    ),
}


def trees(tmp_path: Path, edited: str = EDITED) -> tuple[Path, Path, str]:
    base = tmp_path / "base"
    write(base, dict(PROJECT))
    init_repo(base)
    patched = tmp_path / "patched"
    shutil.copytree(base, patched)
    write(patched, {"src/shop/store.py": edited})
    return base, patched, git(["diff", "--no-ext-diff"], patched).stdout


def gather(base: Path, patched: Path, diff: str, cache: Path | None) -> Impact:
    return gather_impact(parse_patch(diff), base, patched, cache)


def context_entries(cache: Path) -> list[Path]:
    """The cache's source-context entries (the graph's and the fixtures' are beside them)."""
    return [p for p in cache.glob("*.json") if "blocks" in json.loads(p.read_text())]


def test_a_second_gathering_reads_every_files_context_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, patched, diff = trees(tmp_path)
    cache = tmp_path / "cache"
    first = gather(base, patched, diff, cache)
    # The touched module (patched), the callee's module (patched), the example's test (base).
    assert (first.context_built, first.context_hits) == (3, 0)
    assert len(context_entries(cache)) == 3
    evidence = first.evidence
    assert [t["symbol"] for t in evidence["touched_source"]] == ["shop.store.Inventory.remove"]
    assert [c["name"] for c in evidence["callees"]] == ["shop.helpers.normalise"]
    assert [e["test"] for e in evidence["usage_examples"]] == [
        "tests/test_store.py::test_remove_unknown"
    ]

    def no_building(source: str, parses: bool | None = None) -> Any:
        raise AssertionError("a context was built although the cache holds it")

    monkeypatch.setattr(evidence_module, "source_context", no_building)
    second = gather(base, patched, diff, cache)
    assert (second.context_built, second.context_hits) == (0, 3)
    assert second.evidence == first.evidence


def test_a_changed_file_has_its_context_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, patched, diff = trees(tmp_path)
    cache = tmp_path / "cache"
    first = gather(base, patched, diff, cache)
    # The same patch, written differently: only the touched module's text changes.
    changed = EDITED.replace("item = h.normalise(item)", "item = h.normalise(item)  # folded")
    write(patched, {"src/shop/store.py": changed})
    diff = git(["diff", "--no-ext-diff"], patched).stdout
    built: list[str] = []

    def counting(source: str, parses: bool | None = None) -> SourceContext:
        built.append(source)
        return source_context(source, parses)

    monkeypatch.setattr(evidence_module, "source_context", counting)
    second = gather(base, patched, diff, cache)
    assert built == [changed]  # the callee's module and the example's test: from the cache
    assert (second.context_built, second.context_hits) == (1, 2)
    (touched,) = second.evidence["touched_source"]
    assert "item = h.normalise(item)  # folded\n" in touched["source"]
    assert second.evidence["usage_examples"] == first.evidence["usage_examples"]
    assert second.evidence["callees"] == first.evidence["callees"]


def test_a_malformed_cache_entry_is_built_again_and_the_evidence_is_the_same(
    tmp_path: Path,
) -> None:
    base, patched, diff = trees(tmp_path)
    cache = tmp_path / "cache"
    first = gather(base, patched, diff, cache)
    entries = context_entries(cache)
    entries[0].write_text(json.dumps({"blocks": [["f", "function", "1", 1, 1, 2, ""]]}))
    entries[1].write_text("{not json")
    second = gather(base, patched, diff, cache)
    assert (second.context_built, second.context_hits) == (2, 1)
    assert second.evidence == first.evidence
    assert len(context_entries(cache)) == 3  # rewritten


def test_without_a_cache_folder_every_gathering_builds_the_context(tmp_path: Path) -> None:
    base, patched, diff = trees(tmp_path)
    first = gather(base, patched, diff, cache=None)
    second = gather(base, patched, diff, cache=None)
    assert first.context_built == second.context_built == 3
    assert second.evidence == first.evidence
