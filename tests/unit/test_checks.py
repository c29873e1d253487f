from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import pytest

from pytest_critic22.checks import (
    REGISTRY,
    Check,
    CheckRegistry,
    Example,
    FileChange,
    Hit,
    changes_from_sources,
    example_change,
    not_executable_reason,
    run_check,
    run_example,
)

BROKEN = "def broken(:\n    pass\n"


def _examples(kinds: tuple[str, ...] = ("valid", "invalid")) -> Iterator[object]:
    for name in REGISTRY.names():
        check = REGISTRY.get(name)
        assert check is not None
        for kind in kinds:
            for index, example in enumerate(getattr(check, kind)):
                yield pytest.param(check, kind, example, id=f"{name}-{kind}-{index}")


def _run(
    name: str,
    changes: Sequence[FileChange],
    repo: Mapping[str, str] | None = None,
    args: tuple[str, ...] = (),
) -> list[Hit]:
    patched = {c.path: c.patched_source for c in changes if c.patched_source is not None}
    return run_check(name, args, changes, {**patched, **(repo or {})})


# --- every check's own examples -------------------------------------------------------------


@pytest.mark.parametrize("name", REGISTRY.names())
def test_every_builtin_check_documents_itself_with_two_examples_of_each_kind(name: str) -> None:
    check = REGISTRY.get(name)
    assert check is not None and check.name == name
    assert check.description and "\n" not in check.description
    assert len(check.valid) >= 2 and len(check.invalid) >= 2


@pytest.mark.parametrize(("check", "kind", "example"), list(_examples()))
def test_each_example_gets_the_verdict_its_kind_promises(
    check: Check, kind: str, example: Example
) -> None:
    hits = run_example(check, example)
    if kind == "valid":
        assert hits == []
    else:
        assert hits, "an invalid example must produce at least one hit"
        assert all(hit.check == check.name and hit.path == "mod.py" for hit in hits)


@pytest.mark.parametrize(("check", "kind", "example"), list(_examples()))
def test_the_arguments_of_each_example_are_accepted(
    check: Check, kind: str, example: Example
) -> None:
    repo = {**example.repo, "mod.py": example.patched}
    assert check.validate_args(example.args, [example_change(example)], repo) is None


@pytest.mark.parametrize(("check", "kind", "example"), list(_examples(("invalid",))))
def test_hits_of_an_invalid_example_are_attributable_to_the_edit(
    check: Check, kind: str, example: Example
) -> None:
    change = example_change(example)
    for hit in run_example(check, example):
        # Either the hit's own line changed, or it names the added line that causes it (an added
        # `return` makes the old code after it unreachable).
        assert hit.line in change.added_lines | change.removed_lines or any(
            f"line {line} " in hit.message for line in change.added_lines
        )


# --- differential behaviour ------------------------------------------------------------------


def test_a_guard_missing_on_both_sides_is_not_a_hit() -> None:
    base = "def name_of(user):\n    return user.name\n"
    patched = "def name_of(user):\n    return user.name.strip()\n"
    assert _run("removed-guard", [changes_from_sources("m.py", base, patched)]) == []


def test_a_guard_removed_by_another_edit_of_the_patch_is_not_a_hit() -> None:
    base = (
        "def f(x):\n    if x is None:\n        return 0\n    return x\n\n\ndef g():\n    return 1\n"
    )
    patched = "def f(x):\n    return x\n\n\ndef g():\n    return 2\n"
    whole = changes_from_sources("m.py", base, patched)
    assert _run("removed-guard", [whole])
    located = FileChange("m.py", base, patched, frozenset({6}), frozenset({8}))
    assert _run("removed-guard", [located]) == []


def test_a_removed_guard_reports_its_base_line_and_says_so() -> None:
    base = "class A:\n    def f(self, x):\n        if not x:\n            raise ValueError\n"
    base += "        return x\n"
    patched = "class A:\n    def f(self, x):\n        return x\n"
    [hit] = _run("removed-guard", [changes_from_sources("m.py", base, patched)])
    assert hit.line == 3 and "base line 3" in hit.message and "'A.f'" in hit.message


@pytest.mark.parametrize(
    ("base", "patched", "line"),
    [
        (
            "def f(x=None):\n    if x is None: x = []\n    return x\n",
            "def f(x=None):\n    return x\n",
            2,
        ),
        (
            "class A:\n    def f(self):\n        self.items = self.items or []\n"
            "        return self.items\n",
            "class A:\n    def f(self):\n        return self.items\n",
            3,
        ),
        (
            "def f(x=None):\n    x: int = x if x is not None else 0\n    return x\n",
            "def f(x=None):\n    return x\n",
            2,
        ),
    ],
    ids=["one-line-if", "attribute-or", "annotated-if-expression"],
)
def test_a_removed_normalisation_guard_is_a_hit_at_its_base_line(
    base: str, patched: str, line: int
) -> None:
    [hit] = _run("removed-guard", [changes_from_sources("m.py", base, patched)])
    assert hit.line == line and f"base line {line}" in hit.message


@pytest.mark.parametrize(
    "patched",
    [
        "def f(x=None):\n    if not x:\n        x = {}\n    return x\n",
        "def f(x=None):\n    x = {} if x is None else x\n    return x\n",
    ],
    ids=["as-if", "as-if-expression"],
)
def test_a_normalisation_guard_respelled_is_kept(patched: str) -> None:
    base = "def f(x=None):\n    x = x or {}\n    return x\n"
    assert _run("removed-guard", [changes_from_sources("m.py", base, patched)]) == []


def test_a_conditional_transform_of_a_present_value_is_not_a_guard() -> None:
    # `if x:` fixes up nothing missing: dropping the strip changes behaviour, exposes no None.
    base = "def f(x):\n    if x:\n        x = x.strip()\n    return x\n"
    patched = "def f(x):\n    return x\n"
    assert _run("removed-guard", [changes_from_sources("m.py", base, patched)]) == []


def test_a_swallowing_handler_the_edit_only_reindents_is_not_a_hit() -> None:
    base = "def f(g):\n    try:\n        g()\n    except Exception:\n        pass\n"
    patched = (
        "def f(g, lock):\n    with lock:\n        try:\n            g()\n"
        "        except Exception:\n            pass\n"
    )
    assert _run("swallowed-exception", [changes_from_sources("m.py", base, patched)]) == []


def test_a_handler_that_stores_the_exception_does_not_swallow_it() -> None:
    base = "def f(g, errors):\n    g()\n"
    patched = (
        "def f(g, errors):\n    try:\n        g()\n    except Exception as exc:\n"
        "        errors.append(exc)\n"
    )
    assert _run("swallowed-exception", [changes_from_sources("m.py", base, patched)]) == []


def test_a_name_already_undefined_in_the_same_function_is_not_reported() -> None:
    base = "def f():\n    return helper(1)\n"
    patched = "def f():\n    return helper(2)\n\n\ndef g():\n    return helper(3)\n"
    hits = _run("undefined-name", [changes_from_sources("m.py", base, patched)])
    assert [(hit.line, "'g'" in hit.message) for hit in hits] == [(6, True)]


def test_a_name_bound_by_an_earlier_comprehension_clause_is_defined() -> None:
    patched = (
        "def f(groups):\n    return {c for g in groups.values() for s in g for c in s.parts}\n"
    )
    assert _run("undefined-name", [changes_from_sources("m.py", "", patched)]) == []


def test_module_attributes_like_dunder_file_are_defined() -> None:
    patched = "import os\n\nHERE = os.path.dirname(__file__)\nNAME = __name__\n"
    assert _run("undefined-name", [changes_from_sources("m.py", "", patched)]) == []


def test_a_return_added_before_old_code_makes_that_code_unreachable() -> None:
    base = "def f(x):\n    y = x + 1\n    return y\n"
    patched = "def f(x):\n    return x\n    y = x + 1\n    return y\n"
    [hit] = _run("unreachable-code", [changes_from_sources("m.py", base, patched)])
    assert hit.line == 3 and "line 2" in hit.message


def test_unreachable_code_already_on_the_base_is_not_reported() -> None:
    base = "def f(x):\n    return x\n    print('never')\n"
    patched = "def f(x):\n    return x\n    print('still never')\n"
    assert _run("unreachable-code", [changes_from_sources("m.py", base, patched)]) == []


def test_a_mutable_default_already_on_the_base_is_not_reported_when_its_line_changes() -> None:
    base = "def f(x, acc=[]):\n    return acc\n"
    patched = "def f(x, y=0, acc=[]):\n    return acc\n"
    assert _run("mutable-default", [changes_from_sources("m.py", base, patched)]) == []


# --- signature-changed -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after", "problem"),
    [
        ("def f(a, b):", "def f(a, c):", "'b' renamed to 'c'"),
        ("def f(a, b):", "def f(b, a):", "reordered"),
        ("def f(a):", "def f(a, b):", "new required parameter 'b'"),
        ("def f(a, b=1):", "def f(a, b):", "'b' lost its default"),
        ("def f(a, b):", "def f(a, /, b):", "'a' made positional-only"),
        ("def f(*args):", "def f():", "'args' removed"),
    ],
)
def test_signature_changed_names_each_incompatibility(
    before: str, after: str, problem: str
) -> None:
    change = changes_from_sources("m.py", f"{before}\n    pass\n", f"{after}\n    pass\n")
    [hit] = _run("signature-changed", [change], {"use.py": "from m import f\nf(1, 2)\n"})
    assert problem in hit.message and "use.py:2" in hit.message


@pytest.mark.parametrize(
    ("before", "after"),
    [("def f(a, /, b):", "def f(a, b):"), ("def f(a, *, b):", "def f(a, b):")],
)
def test_loosening_a_parameter_kind_is_not_a_signature_hit(before: str, after: str) -> None:
    change = changes_from_sources("m.py", f"{before}\n    pass\n", f"{after}\n    pass\n")
    assert _run("signature-changed", [change], {"use.py": "f(1, b=2)\n"}) == []


def test_a_constructor_is_called_through_its_class_name() -> None:
    base = "class Box:\n    def __init__(self, size):\n        self.size = size\n"
    patched = "class Box:\n    def __init__(self, width):\n        self.size = width\n"
    repo = {"use.py": "from m import Box\n\nBox(3)\n"}
    [hit] = _run("signature-changed", [changes_from_sources("m.py", base, patched)], repo)
    assert "'Box.__init__'" in hit.message and "use.py:3" in hit.message


def test_a_recursive_call_inside_the_function_is_not_a_caller() -> None:
    base = "def walk(node, depth):\n    return walk(node, depth + 1)\n"
    patched = "def walk(node):\n    return walk(node)\n"
    assert _run("signature-changed", [changes_from_sources("m.py", base, patched)]) == []


@pytest.mark.parametrize(
    "qualname", ["Inventory.remove", "remove", "pkg.mod.Inventory.remove", "pkg/mod.py::remove"]
)
def test_signature_changed_accepts_the_spellings_of_a_touched_function(qualname: str) -> None:
    base = "class Inventory:\n    def remove(self, sku, qty):\n        pass\n"
    patched = "class Inventory:\n    def remove(self, sku):\n        pass\n"
    changes = [changes_from_sources("src/pkg/mod.py", base, patched)]
    assert not_executable_reason("signature-changed", (qualname,), changes, {}) is None


def test_signature_changed_rejects_an_argument_naming_no_touched_function() -> None:
    change = changes_from_sources("m.py", "def f(a):\n    pass\n", "def f():\n    pass\n")
    reason = not_executable_reason("signature-changed", ("x.f",), [change], {})
    assert reason == "argument 'x.f' names no function the edit touches"
    reason = not_executable_reason("signature-changed", ("g",), [change], {})
    assert reason is not None and "'g'" in reason


def test_signature_changed_takes_at_most_one_argument() -> None:
    change = changes_from_sources("m.py", "def f(a):\n    pass\n", "def f():\n    pass\n")
    reason = not_executable_reason("signature-changed", ("f", "g"), [change], {})
    assert reason is not None and "at most one argument" in reason


def test_signature_changed_with_an_argument_judges_only_that_function() -> None:
    base = "def f(a):\n    pass\n\n\ndef g(a):\n    pass\n"
    patched = "def f():\n    pass\n\n\ndef g():\n    pass\n"
    repo = {"use.py": "f(1)\ng(2)\n"}
    hits = _run("signature-changed", [changes_from_sources("m.py", base, patched)], repo, ("g",))
    assert [hit.line for hit in hits] == [5]


# --- removed-symbol --------------------------------------------------------------------------


def test_a_deleted_module_that_is_still_imported_is_a_removed_symbol() -> None:
    base = "def helper():\n    return 1\n\n\nclass Thing:\n    pass\n"
    repo = {"pkg/use.py": "from .util import helper\n\nhelper()\n"}
    hits = _run("removed-symbol", [changes_from_sources("pkg/util.py", base, None)], repo)
    assert [(hit.path, hit.line) for hit in hits] == [("pkg/util.py", 1)]
    assert hits[0].message.endswith("still referenced at pkg/use.py:1")


def test_removed_symbol_follows_module_aliases_but_not_unrelated_attributes() -> None:
    change = changes_from_sources("pkg/util.py", "def remove():\n    pass\n", "X = 1\n")
    aliased = {"a.py": "import pkg.util as u\n\nu.remove()\n"}
    unrelated = {"a.py": "items = [1]\nitems.remove(1)\n"}
    assert _run("removed-symbol", [change], aliased)
    assert _run("removed-symbol", [change], unrelated) == []


def test_a_same_named_symbol_of_another_module_is_not_a_reference() -> None:
    change = changes_from_sources("pkg/util.py", "def helper():\n    pass\n", "")
    repo = {"a.py": "from pkg.other import helper\n\nhelper()\n"}
    assert _run("removed-symbol", [change], repo) == []


def test_removed_symbol_rejects_a_name_the_edit_does_not_remove() -> None:
    change = changes_from_sources("m.py", "def f():\n    pass\n\n\ndef g():\n    pass\n", "")
    assert not_executable_reason("removed-symbol", ("f",), [change], {}) is None
    reason = not_executable_reason("removed-symbol", ("h",), [change], {})
    assert reason == "argument 'h' is not a public top-level symbol the edit removes"


@pytest.mark.parametrize("name", ["removed-guard", "mutable-default", "unreachable-code"])
def test_checks_without_parameters_reject_arguments(name: str) -> None:
    change = changes_from_sources("m.py", "x = 1\n", "x = 2\n")
    reason = not_executable_reason(name, ("extra",), [change], {})
    assert reason is not None and "takes no arguments" in reason


# --- the registry and the entry points -------------------------------------------------------


def test_an_unknown_check_raises_key_error_and_has_a_reason_naming_the_known_ones() -> None:
    with pytest.raises(KeyError):
        run_check("no-such-check", (), [], {})
    reason = not_executable_reason("no-such-check", (), [], {})
    assert reason is not None
    assert reason.startswith("unknown static check 'no-such-check' (known: ")
    assert "removed-guard" in reason


def _always_hits(
    changes: Sequence[FileChange], args: tuple[str, ...], repo: Mapping[str, str]
) -> list[Hit]:
    return [Hit("always", change.path, 1, "always hits") for change in changes]


ALWAYS = Check("always", "hits every file", _always_hits, (), (Example("", "x = 1\n"),))


def test_a_registered_check_is_found_by_name_and_runs() -> None:
    registry = CheckRegistry()
    registry.register(ALWAYS)
    assert registry.names() == ["always"] and registry.get("always") is ALWAYS
    assert registry.get("missing") is None
    change = changes_from_sources("a.py", None, "x = 1\n")
    assert run_check("always", (), [change], {}, registry) == [
        Hit("always", "a.py", 1, "always hits")
    ]
    assert not_executable_reason("always", (), [change], {}, registry) is None
    assert "takes no arguments" in (not_executable_reason("always", ("x",), [], {}, registry) or "")


def test_registering_a_duplicate_name_is_rejected() -> None:
    registry = CheckRegistry()
    registry.register(ALWAYS)
    with pytest.raises(ValueError, match="already registered"):
        registry.register(ALWAYS)
    builtin = REGISTRY.get("removed-guard")
    assert builtin is not None
    with pytest.raises(ValueError, match="already registered"):
        REGISTRY.register(builtin)


def test_a_check_name_the_grammar_cannot_spell_is_rejected() -> None:
    with pytest.raises(ValueError, match="one non-empty word"):
        CheckRegistry().register(Check("two words", "", _always_hits, (), ()))


# --- robustness and determinism --------------------------------------------------------------


@pytest.mark.parametrize("side", ["base", "patched"])
@pytest.mark.parametrize(("check", "kind", "example"), list(_examples(("invalid",))))
def test_a_file_that_does_not_parse_on_either_side_yields_no_hit(
    check: Check, kind: str, example: Example, side: str
) -> None:
    base, patched = example.base, example.patched
    if side == "base":
        base = BROKEN + base
    else:
        patched = BROKEN + patched
    change = changes_from_sources("mod.py", base, patched)
    repo = {**example.repo, "mod.py": patched}
    assert run_check(check.name, example.args, [change], repo) == []


@pytest.mark.parametrize("name", REGISTRY.names())
def test_created_and_deleted_files_do_not_crash_any_check(name: str) -> None:
    source = "import os\n\n\ndef f(x=[]):\n    try:\n        return os.sep\n    except:\n"
    source += "        pass\n    return undefined\n    x = 1\n"
    changes = [
        changes_from_sources("new.py", None, source),
        changes_from_sources("gone.py", source, None),
        changes_from_sources("README.md", "old\n", "new\n"),
    ]
    for hit in _run(name, changes, {"use.py": "from gone import f\n\nf()\n"}):
        assert hit.path in ("new.py", "gone.py")


@pytest.mark.parametrize(
    ("name", "expected_line"),
    [("swallowed-exception", 7), ("mutable-default", 4), ("undefined-name", 9)],
)
def test_a_new_file_is_judged_as_all_added(name: str, expected_line: int) -> None:
    source = "import os\n\n\ndef f(x=[]):\n    try:\n        return os.sep\n    except:\n"
    source += "        pass\n    return undefined\n"
    hits = _run(name, [changes_from_sources("new.py", None, source)])
    assert [hit.line for hit in hits] == [expected_line]


def test_non_python_files_are_ignored() -> None:
    change = changes_from_sources("notes.txt", "def f(x):\n    pass\n", "def f(x=[]):\n")
    for name in REGISTRY.names():
        assert _run(name, [change]) == []


def test_hits_are_sorted_by_path_line_and_message_whatever_the_input_order() -> None:
    def change(path: str) -> FileChange:
        return changes_from_sources(
            path, "", "def f(a=[], b={}):\n    pass\n\n\ndef g(c=set()):\n    pass\n"
        )

    forward = _run("mutable-default", [change("a.py"), change("b.py")])
    backward = _run("mutable-default", [change("b.py"), change("a.py")])
    assert forward == backward
    assert [(hit.path, hit.line) for hit in forward] == [
        ("a.py", 1),
        ("a.py", 1),
        ("a.py", 5),
        ("b.py", 1),
        ("b.py", 1),
        ("b.py", 5),
    ]
    assert forward[0].message < forward[1].message


def test_identical_hits_are_reported_once() -> None:
    change = changes_from_sources("m.py", "", "def f(a=[]):\n    pass\n")
    assert len(run_check("mutable-default", (), [change, change], {})) == 1


def test_changes_from_sources_numbers_added_and_removed_lines_from_one() -> None:
    change = changes_from_sources("m.py", "a\nb\nc\n", "a\nB\nc\nd\n")
    assert change.added_lines == {2, 4} and change.removed_lines == {2}
    created = changes_from_sources("m.py", None, "a\nb\n")
    assert created.base_source is None and created.added_lines == {1, 2}
    deleted = changes_from_sources("m.py", "a\nb\n", None)
    assert deleted.patched_source is None and deleted.removed_lines == {1, 2}


def test_a_form_feed_does_not_shift_line_numbers() -> None:
    change = changes_from_sources("m.py", "x = 1\n\x0c\ny = 2\n", "x = 1\n\x0c\ny = 3\n")
    assert change.added_lines == {3} and change.removed_lines == {3}
