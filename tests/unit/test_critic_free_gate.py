"""The critic-free gate cannot be talked out of a regression (invariants 14-16): a patch that
breaks collection is REJECTed with no critic, a critic's test cannot change what
preservation sees, and the harness that judges is the base's."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_critic22.kinds.collection import first_error_line
from pytest_critic22.model.patch import parse_patch
from pytest_critic22.verification.harness import harness_files, without_harness


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (
            'E     File "/t/toolz/itertoolz.py", line 1015\nE       def partition_all(n, seq)\n'
            "E                                ^\nE   SyntaxError: expected ':'",
            "SyntaxError: expected ':' (toolz/itertoolz.py, line 1015)",
        ),
        (
            "toolz/__init__.py:2: in <module>\n    from .recipes import countby\n"
            "E   ModuleNotFoundError: No module named 'toolz.recipes'",
            "ModuleNotFoundError: No module named 'toolz.recipes'",
        ),
        ("ERROR: usage: pytest [options]\nnothing named", ""),
    ],
)
def test_the_first_error_line_names_the_error_and_where(text: str, line: str) -> None:
    assert first_error_line(text, Path("/t")) == line


def _patch(files: dict[str, tuple[str, str]]) -> str:
    out = []
    for path, (old, new) in files.items():
        head = f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        out.append(f"{head}@@ -1 +1 @@\n-{old}\n+{new}\n")
    return "".join(out)


def test_harness_files_are_conftests_and_the_pytest_parts_of_configuration() -> None:
    texts = {
        "base": {
            "pyproject.toml": '[project]\nname = "x"\n[tool.pytest.ini_options]\naddopts = ""\n',
            "setup.cfg": "[metadata]\nname = x\n",
        },
        "patched": {
            "pyproject.toml": '[project]\nname = "y"\n[tool.pytest.ini_options]\naddopts = ""\n',
            "setup.cfg": "[metadata]\nname = x\n[tool:pytest]\naddopts = -p no:junitxml\n",
        },
    }
    patch = parse_patch(
        _patch(
            {
                "tests/conftest.py": ("a = 1", "a = 2"),
                "pyproject.toml": ("x", "y"),  # only the project's name changes
                "setup.cfg": ("x", "y"),  # gains a [tool:pytest] section
                "pkg/mod.py": ("a", "b"),
            }
        )
    )
    found = harness_files(patch, lambda tree, path: texts[tree].get(path))
    assert found == ("tests/conftest.py", "setup.cfg")
    kept = parse_patch(without_harness(patch, found))
    assert [e.path for e in kept.edits] == ["pyproject.toml", "pkg/mod.py"]


def test_ini_files_at_any_depth_and_modules_that_shadow_pytest_are_harness() -> None:
    texts = {
        "base": {"tests/pytest.ini": None},
        "patched": {"tests/pytest.ini": "[pytest]\naddopts = --collect-only\n"},
    }
    patch = parse_patch(
        _patch(
            {
                "tests/pytest.ini": ("a", "b"),
                "pytest.py": ("a", "b"),
                "src/_pytest/runner.py": ("a", "b"),
                "pkg/pytest_helpers.py": ("a", "b"),
                "pkg/sub/pytest.py": ("a", "b"),
            }
        )
    )
    found = harness_files(patch, lambda tree, path: texts[tree].get(path))
    assert found == ("tests/pytest.ini", "pytest.py", "src/_pytest/runner.py")
