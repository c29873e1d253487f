"""The reference stays true to the code: every option and ini value the plugin registers is in
docs/options.md, and docs/extending.md shows every hook specification exactly as
pytest_critic22/plugin/hooks.py declares it (the decorator and the signature)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OPTIONS = ROOT / "docs" / "options.md"
HOOKS = ROOT / "pytest_critic22" / "plugin" / "hooks.py"
EXTENDING = ROOT / "docs" / "extending.md"


def registered_names(config: pytest.Config) -> set[str]:
    parser = config._parser
    flags = {n for option in parser.getgroup("critic22").options for n in option.names()}
    ini = {n for n in parser._inidict if n.startswith("critic22")}
    return flags | ini


def documented(text: str, name: str) -> bool:
    """``--critic22-model=MODEL``, ``--critic22-only``, ``critic22_max_edits``: in a code span."""
    return re.search(rf"`{re.escape(name)}(?=[=`\s\\|])", text) is not None


def test_every_option_and_ini_value_is_in_the_docs(pytestconfig: pytest.Config) -> None:
    names = registered_names(pytestconfig)
    assert "--critic22" in names and "critic22_sandbox" in names  # the plugin is loaded
    text = OPTIONS.read_text(encoding="utf-8")
    missing = sorted(n for n in names if not documented(text, n))
    assert not missing, f"docs/options.md does not document: {missing}"


def _normal(code: str) -> str:
    """One line, no layout: what black or ruff would print, give or take wrapping."""
    code = re.sub(r"\s+", " ", code)
    code = re.sub(r"\(\s+", "(", code)
    code = re.sub(r",?\s*\)", ")", code)
    return code.strip()


def declared() -> dict[str, str]:
    tree = ast.parse(HOOKS.read_text(encoding="utf-8"))
    specs = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("pytest_critic22_"):
            node.body = [ast.Expr(ast.Constant(...))]
            head = ast.unparse(node).rsplit("\n", 1)[0]  # decorator(s) and def line, no body
            specs[node.name] = _normal(head)
    return specs


def shown() -> dict[str, str]:
    text = EXTENDING.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    specs = {}
    for block in blocks:
        if "@pytest.hookspec" in block:
            found = re.search(r"def (pytest_critic22_\w+)", block)
            assert found is not None, block
            specs[found.group(1)] = _normal(block)
    return specs


def test_every_hook_is_documented_with_its_exact_signature() -> None:
    assert declared(), "no hook specifications found"
    assert shown() == declared()
