"""The packet's code context is built once per file content: a second gathering reads every
file's blocks and imports from the cache, a changed file is read again, and the fast reading
(Python's own parser and tokenizer) tells exactly what libcst tells (issue 44, item 5)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_critic22.evidence import codeblocks as codeblocks_module
from pytest_critic22.evidence.codeblocks import (
    SourceContext,
    context_digest,
    context_from_dict,
    context_to_dict,
    definitions,
    module_imports,
    source_context,
)

STORE = '''\
"""Counts of items in stock."""

from __future__ import annotations

from shop import helpers as h


class Inventory:
    """A stock of items."""

    def __init__(self) -> None:
        self._items: dict[str, int] = {}

    def remove(self, item: str, qty: int = 1) -> None:
        """Take ``qty`` of ``item`` out."""
        if item not in self._items:
            raise KeyError(item)
        self._items[item] -= qty

    def count(self, item: str) -> int:
        return self._items.get(item, 0)
'''


EDITED = STORE.replace(
    "        self._items[item] -= qty\n",
    "        item = h.normalise(item)\n        self._items[item] -= qty\n",
)


def test_the_context_cache_key_is_the_text_alone() -> None:
    assert context_digest(STORE) == context_digest(STORE)
    assert context_digest(STORE) != context_digest(EDITED)
    context = source_context(STORE, parses=True)
    assert context_from_dict(json.loads(json.dumps(context_to_dict(context)))) == context


TRICKY = '''\
"""Module docstring."""
import os  # why
import sys; import re
x = 1; import json
from typing import (  # wrapped
    Any,

    Callable,  # this one too
)
if x:
    import collections


@decorator

# a comment between the decorator and the def
def f(a,
      b: "dict[str, int]" = {"k": 1},  # a colon in a string: and a dict
      c=lambda y: y,
      *, d: int = 1) -> dict[str, int]:  # trailing
    """Doc.

        Indented more.
    """
    return (
        a
    )
    # a footer comment


class A(
    Base,
    metaclass=Meta,
): "one-line docstring"


async def g(): pass;


@(
    wrapped
)
@other.deco(arg=[1,
                 2])
class C:
    ("parenthesised" " and concatenated")

    @property
    def x(self):
        return 1

    @x.setter
    def x(self, value):
        def inner():
            class Local:
                pass
        return inner

    def f_string(self):
        f"not a {docstring}"

    def bytes_(self):
        b"not a docstring either"


try:
    def in_try(): ...
except ImportError:
    def in_try(): return 2
else:
    class InElse: ...
finally:
    pass

for _ in ():
    def in_loop(): ...

with open(__file__) as handle:
    def in_with(): ...

match x:
    case 1:
        def in_case(): ...

def tail(): return 1 \\
    + 2'''.replace("# why\n", "# why   \n")  # trailing spaces after a comment, kept


@pytest.mark.parametrize(
    "source",
    [
        TRICKY,
        TRICKY + "\n",
        STORE,
        "",
        "\n\n",
        "import os",
        "def f():\n    pass\n\n\n\n",
        "class A: pass\nclass A:\n    def m(self): ...\n",
        "@d\n\n\n\n@e\n# c\n\n# c\ndef f(): ...\n",
        "def f(x=(\n    1,\n)) -> (\n    int\n):\n    '''Doc'''\n",
        "def f(): 'doc'; return 1\n",
        "class A:\n\tdef m(self):\n\t\treturn 1\n",
        "def f(x=lambda: {'a': 1}[\n'a']):\n    return x\n",
        "import a.b as c, d\nfrom . import e  # rel\nfrom .. x import (y)\n",
    ],
)
def test_the_fast_context_is_what_libcst_gives(
    source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = SourceContext(definitions(source), module_imports(source))

    def no_libcst(source: str) -> Any:
        raise AssertionError("libcst was asked")

    monkeypatch.setattr(codeblocks_module, "_parse", no_libcst)
    assert source_context(source, parses=True) == expected


@pytest.mark.parametrize(
    "source",
    [
        TRICKY.replace("\n", "\r\n"),  # carriage returns: libcst shows them, ast does not
        "\ufeffimport os\ndef f(): ...\n",  # a byte-order mark
        "def f():\n\f    return 1\n",  # a form feed in the indentation
        "import os \\\n; import sys\n",  # a backslash after a statement
        "def f[T](x: T) -> T:\n    return x\n",  # newer than this Python, perhaps
    ],
)
def test_where_the_fast_reading_is_unsure_libcst_answers(source: str) -> None:
    expected = SourceContext(definitions(source), module_imports(source))
    assert source_context(source, parses=True) == expected
    assert source_context(source) == expected


def test_a_source_libcst_cannot_parse_has_no_context() -> None:
    assert source_context("def broken(:\n", parses=True) == SourceContext((), "")
    # What the code graph found unparseable is not read again, even where Python could.
    assert source_context("def f():\n    pass\n", parses=False) == SourceContext((), "")
