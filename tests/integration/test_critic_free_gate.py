"""The critic-free gate cannot be talked out of a regression (invariants 14-16).

The integration tier: with real git and sandboxed child processes. The rest, and the whole story:
tests/unit/test_critic_free_gate.py.
"""

from __future__ import annotations

from pathlib import Path

from pytest_critic22.execution.git import init_repo
from pytest_critic22.model.patch import parse_patch
from tests.helpers import write
from tests.unit.test_critic_free_gate import _patch


def test_a_module_level_edit_reaches_the_tests_that_import_its_module(tmp_path: Path) -> None:
    from pytest_critic22.evidence.gather import gather_impact

    files = {
        "toolz/__init__.py": "from .itertoolz import partition_all\n",
        "toolz/itertoolz.py": "MINIMUM = 1\n\ndef partition_all(n, seq):\n"
        "    if n < MINIMUM:\n        raise ValueError(n)\n    return seq\n",
        "tests/test_itertoolz.py": "from toolz import partition_all\n\n"
        "def test_zero():\n    partition_all(0, [])\n\n"
        "class TestMore:\n    def test_one(self):\n        partition_all(1, [])\n",
        "tests/test_other.py": "def test_unrelated():\n    pass\n",
    }
    trees = {}
    for name, first in (("base", "MINIMUM = 1"), ("patched", "MINIMUM = 0")):
        trees[name] = tmp_path / name
        write(
            trees[name],
            {
                **files,
                "toolz/itertoolz.py": files["toolz/itertoolz.py"].replace("MINIMUM = 1", first),
            },
        )
        init_repo(trees[name])  # the graph reads the files git lists
    patch = parse_patch(_patch({"toolz/itertoolz.py": ("MINIMUM = 1", "MINIMUM = 0")}))
    impact = gather_impact(patch, trees["base"], trees["patched"], None)
    assert impact.preservation_tests == (
        "tests/test_itertoolz.py::test_zero",
        "tests/test_itertoolz.py::TestMore::test_one",
    )
