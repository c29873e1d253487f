"""Counterfactuals that run: a tree that is not a working program falls back to the base.

Removing one edit of a multi-hunk patch can leave a program that cannot run (pyparsing-9d789cb
without e3 raised ``NameError: name 'self_ignoreExpr_tryParse' is not defined`` in
``pyparsing/core.py``: e2 deleted the name). Such a tree says nothing about the edit, so the
base stands in for it, and the reason says so; "fails on both" is said only when both trees
run, with each tree's decisive line. The classification of a run's output is tested here in
process, on pytest's output in each ``--tb`` style; one end-to-end review shows it for the
``test:``, ``counterfactual:`` and ``trace:`` kinds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_critic22.execution.trees import Variant
from pytest_critic22.model.patch import parse_patch
from pytest_critic22.model.results import RunResult
from pytest_critic22.verification.decide import broken_program, crashes, decide, decisive_line
from pytest_critic22.verification.procedures import fallback_to_base

pytestmark = pytest.mark.usefixtures("no_model_client")


OWN = ("tests/test_critic22_f1.py",)


ROOT = "/tmp/trees/run/critic-without-e1"


# pytest's report of one failing test, as the terminal (--tb=auto) shows it: the NameError
# is raised in calc.py, a module of the project, called by the critic's test.
LONG = """\
=================================== FAILURES ===================================
_________________________________ test_double __________________________________

    def test_double():
>       assert double(2) == 4
               ^^^^^^^^^

tests/test_critic22_f1.py:5: 
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ 

x = 2

    def double(x):
>       return _times(x)
               ^^^^^^
E       NameError: name '_times' is not defined

calc.py:5: NameError
1 failed in 0.12s
"""  # noqa: W291 - pytest's own trailing blank


SHORT = """\
_________________________________ test_double __________________________________
tests/test_critic22_f1.py:5: in test_double
    assert double(2) == 4
           ^^^^^^^^^
calc.py:5: in double
    return _times(x)
           ^^^^^^
E   NameError: name '_times' is not defined
1 failed in 0.12s
"""


LINE = f"""\
E   NameError: name '_times' is not defined
{ROOT}/calc.py:5: NameError: name '_times' is not defined
1 failed in 0.12s
"""


NATIVE = f"""\
_________________________________ test_double __________________________________
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/_pytest/python.py", line 166, in pytest_pyfunc_call
    result = testfunction(**testargs)
  File "{ROOT}/tests/test_critic22_f1.py", line 5, in test_double
    assert double(2) == 4
  File "{ROOT}/calc.py", line 5, in double
    return _times(x)
NameError: name '_times' is not defined
1 failed in 0.12s
"""


# A batched run's part: its cases' JUnit texts, each after its node id.
JUNIT = """\
tests/test_critic22_f1.py::test_double: NameError: name '_times' is not defined
def test_double():
>       assert double(2) == 4

tests/test_critic22_f1.py:5: 
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ 

    def double(x):
>       return _times(x)
E       NameError: name '_times' is not defined

calc.py:5: NameError
"""  # noqa: W291


# Collection errors: an import another edit renamed, raised in the package's __init__.py;
# a module that no longer parses (the error names the file, its importer is the test).
IMPORT = """\
__________________ ERROR collecting tests/test_critic22_f1.py __________________
ImportError while importing test module '/t/tests/test_critic22_f1.py'.
Hint: make sure your test modules/packages have valid Python names.
Traceback:
/usr/lib/python3.11/importlib/__init__.py:126: in import_module
    return _bootstrap._gcd_import(name[level:], package, level)
tests/test_critic22_f1.py:1: in <module>
    import pkg
pkg/__init__.py:1: in <module>
    from pkg.core import _times
E   ImportError: cannot import name '_times' from 'pkg.core' (/t/pkg/core.py)
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
"""


SYNTAX = f"""\
__________________ ERROR collecting tests/test_critic22_f1.py __________________
<frozen importlib._bootstrap>:690: in _load_unlocked
    ???
tests/test_critic22_f1.py:1: in <module>
    import pkg2
E     File "{ROOT}/pkg2.py", line 3
E       def f(:
E             ^
E   SyntaxError: invalid syntax
"""


MODULE_ATTRIBUTE = """\
    def attr():
>       return helpers.scale
E       AttributeError: module 'helpers' has no attribute 'scale'

calc.py:9: AttributeError
"""


def _failed(output: str) -> RunResult:
    return RunResult("failed", "", 1, 0.1, {"t::test_double": "failed"}, output)


@pytest.mark.parametrize(
    "output",
    [LONG, SHORT, LINE, NATIVE, JUNIT],
    ids=["long", "short", "line", "native", "junit-text"],
)
def test_a_name_error_raised_in_the_projects_code_is_found_in_every_traceback_style(
    output: str,
) -> None:
    crash = broken_program(output, (ROOT,), OWN)
    assert crash is not None
    assert (crash.error, crash.where) == ("NameError", "calc.py:5")
    assert crash.message == "name '_times' is not defined"


@pytest.mark.parametrize(
    ("output", "error", "where"),
    [
        (IMPORT, "ImportError", "pkg/__init__.py:1"),
        (SYNTAX, "SyntaxError", "pkg2.py:3"),
        (MODULE_ATTRIBUTE, "AttributeError", "calc.py:9"),
    ],
    ids=["import-in-the-package", "syntax-names-the-file", "attribute-of-a-module"],
)
def test_imports_syntax_and_module_attributes_that_fail_in_the_project_are_not_a_program(
    output: str, error: str, where: str
) -> None:
    crash = broken_program(output, (ROOT,), OWN)
    assert crash is not None and (crash.error, crash.where) == (error, where)


CHAINED = LONG.replace(
    "1 failed in 0.12s\n",
    "\nThe above exception was the direct cause of the following exception:\n\n"
    "    def test_double():\n"
    ">       raise ValueError('wrapped') from exc\n"
    "E       ValueError: wrapped\n\n"
    "tests/test_critic22_f1.py:9: ValueError\n",
)


@pytest.mark.parametrize(
    "output",
    [
        # the critic's own test uses a name that exists nowhere: the test's error
        "    def test_double():\n>       assert nosuch == 1\n"
        "E       NameError: name 'nosuch' is not defined\n\n"
        "tests/test_critic22_f1.py:5: NameError\n",
        # the critic's test imports a name the tree does not have: the test's guess
        "tests/test_critic22_f1.py:1: in <module>\n    from calc import _times\n"
        "E   ImportError: cannot import name '_times' from 'calc' (/t/calc.py)\n",
        # an installed library's error, not the project's
        "/venv/lib/python3.11/site-packages/lib.py:3: in f\n    import gone\n"
        "E   ModuleNotFoundError: No module named 'gone'\n",
        "../outside/lib.py:3: NameError\n",
        # an ordinary failure of the project's code, and an attribute of an object
        LONG.replace("NameError: name '_times' is not defined", "assert 6 == 4").replace(
            "calc.py:5: NameError", "calc.py:5: AssertionError"
        ),
        "E       AttributeError: 'Box' object has no attribute 'size'\n\n"
        "calc.py:9: AttributeError\n",
        # caught by the test and raised as another exception: the test died of the other
        CHAINED,
        # no traceback at all (--tb=no, a timeout)
        "1 failed in 0.12s\n",
        # what the test printed is not a traceback of ours, whatever it looks like
        "    def test_double():\n>       assert False\nE       assert False\n\n"
        "tests/test_critic22_f1.py:5: AssertionError\n"
        "----------------------------- Captured stdout call -----------------------------\n"
        "E       NameError: name '_times' is not defined\n\ncalc.py:5: NameError\n",
    ],
    ids=[
        "own-test",
        "own-import",
        "installed",
        "outside",
        "assertion",
        "object-attribute",
        "chained",
        "no-traceback",
        "printed",
    ],
)
def test_errors_of_the_test_or_outside_the_project_leave_the_counterfactual_standing(
    output: str,
) -> None:
    assert broken_program(output, (ROOT,), OWN) is None


def test_a_chained_exception_keeps_both_and_the_last_is_what_the_test_died_of() -> None:
    found = crashes(CHAINED)
    assert [(c.error, c.chained) for c in found] == [("NameError", True), ("ValueError", False)]
    assert decisive_line(CHAINED) == "ValueError: wrapped"


PATCH = parse_patch(
    "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n-def _scale(x):\n+def _times(x):\n"
    "     return x * 2\n"
)


def test_only_a_without_tree_falls_back_to_the_base_and_the_note_says_why(tmp_path: Path) -> None:
    tree = tmp_path / "without-e1"
    run = _failed(LONG.replace("calc.py:5:", f"{tree}/calc.py:5:"))
    patched = _failed("E       assert 6 == 4\n\ncalc.py:5: AssertionError\n")
    fallback = fallback_to_base(Variant.without(PATCH, ("e1",)), run, tree, patched, tmp_path, OWN)
    assert fallback is not None and fallback.variant == Variant.base()
    assert fallback.note == (
        "without-e1 is not a working program (NameError at calc.py:5); compared against the base"
    )
    record = fallback.record(run.to_dict())
    assert record["message"] == "name '_times' is not defined"
    assert record["run"]["output"] == run.output
    # The base and a critic's repair are never replaced.
    for variant in (Variant.base(), Variant.repaired(PATCH, "diff")):
        assert fallback_to_base(variant, run, tree, patched, tmp_path, OWN) is None


def test_the_same_crash_on_the_patched_tree_is_not_the_removed_edits_doing(
    tmp_path: Path,
) -> None:
    run = _failed(LONG)
    # The patched tree dies of it too (on another line): the edit did not break the
    # program, so the without tree stands, and the finding fails on both.
    patched = _failed(LONG.replace("calc.py:5:", "calc.py:7:"))
    variant = Variant.without(PATCH, ("e1",))
    assert fallback_to_base(variant, run, tmp_path, patched, tmp_path, OWN) is None


def test_fails_on_both_says_each_trees_decisive_line() -> None:
    patched = _failed(
        LONG.replace(
            "NameError: name '_times' is not defined", "AssertionError: assert 6 == 4"
        ).replace("calc.py:5: NameError", "calc.py:5: AssertionError")
    )
    counter = _failed(SHORT.replace("NameError: name '_times' is not defined", "assert 5 == 4"))
    outcome = decide([patched, patched], counter, counterfactual_name="without-e3")
    assert outcome.kind == "inconclusive"
    assert outcome.reason == (
        "fails on both the patched and the without-e3 tree: the claim is not shown to be "
        "caused by the located edit (patched: AssertionError: assert 6 == 4; "
        "without-e3: assert 5 == 4)"
    )
