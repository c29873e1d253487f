"""Repairs as models write them (issue 44, item 3): a corpus of real-shaped ``repair:`` diffs,
each parsed as a ``test:`` procedure and applied to a real worktree by real ``git apply``.

The recount happens once, in Python (:func:`pytest_critic22.model.patch.mend_diff`), and the
tree applies the result as it is: git's own ``--recount`` reads a second file's ``---``/``+++``
lines as lines of the hunk before them, so a two-file repair without ``diff --git`` lines
failed with ``error: patch failed: arrow/parser.py:21``. Each corpus entry is applied (the
repaired tree holds the expected files) or refused with git's first error line.

The corpus lives in ``tests/data/repairs/``, byte for byte (``.gitattributes`` keeps git from
changing line endings); the table below says what each diff must do.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_critic22.kinds.grammar import parse_procedure
from pytest_critic22.model.diffmend import mend_diff, recount_hunks
from pytest_critic22.model.procedure import Procedure, TestData

CORPUS = Path(__file__).parents[1] / "data" / "repairs"


PARSER = '''\
"""Parse date strings into their parts."""

from __future__ import annotations

import re

from arrow.util import is_timestamp

_TOKENS = re.compile(r"YYYY|MM|DD|HH|mm")


class ParserError(ValueError):
    pass


class DateTimeParser:
    def __init__(self, locale: str = "en-us") -> None:
        self.locale = locale

    def parse(self, text: str, fmt: str) -> dict[str, int]:
        parts: dict[str, int] = {}
        for token in _TOKENS.findall(fmt):
            width = len(token)
            parts[token] = int(text[:width])
            text = text[width:]
        return parts

    def parse_iso(self, text: str) -> dict[str, int]:
        if is_timestamp(text):
            raise ParserError(f"{text!r} is a timestamp, not an ISO date")
        return self.parse(text.replace("-", ""), "YYYYMMDD")

    def parse_timestamp(self, text: str) -> float:
        return float(text)
'''


UTIL = '''\
"""Small helpers."""

from __future__ import annotations


def is_timestamp(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    return False


def is_str(value: object) -> bool:
    return isinstance(value, str)
'''


BUILD_BAT = "@echo off\r\nset PYTHON=python\r\n%PYTHON% -m build\r\nexit /b 0\r\n"


PATCHED_PARSER = PARSER.replace(
    '        return self.parse(text.replace("-", ""), "YYYYMMDD")\n',
    '        date, _, time = text.partition("T")\n'
    '        fmt = "YYYYMMDDHHmm" if time else "YYYYMMDD"\n'
    '        return self.parse(date.replace("-", "") + time.replace(":", ""), fmt)\n',
)


# What the repairs mean: the repaired files.
REPAIRED_PARSER = PATCHED_PARSER.replace(
    "            width = len(token)\n",
    "            width = len(token)\n"
    "            if len(text) < width:\n"
    '                raise ParserError(f"{token} is missing from {fmt!r}")\n',
)


REPAIRED_UTIL = UTIL.replace(
    "        return True\n    return False\n",
    "        return True\n"
    "    if isinstance(value, str):\n"
    "        return value.isdigit() and len(value) > 8\n"
    "    return False\n",
)


REPAIRED_UTIL_RETURN = UTIL.replace(
    "    return False\n\n\ndef is_str",
    "    return isinstance(value, str) and value.isdigit() and len(value) > 8\n\n\ndef is_str",
)


REPAIRED_BAT = BUILD_BAT.replace("-m build\r\n", "-m build --wheel\r\n")


BOTH = {"arrow/parser.py": REPAIRED_PARSER, "arrow/util.py": REPAIRED_UTIL}


PARSER_ONLY = {"arrow/parser.py": REPAIRED_PARSER, "arrow/util.py": UTIL}


@dataclass(frozen=True, slots=True)
class Entry:
    """One corpus diff and what it must do: the files it leaves, or git's first error line."""

    name: str
    applied: dict[str, str] | None = None
    refused: str = ""
    shape: str = ""  # a byte-level property the file must keep (see test_the_corpus_keeps…)


ENTRIES = [
    # The control: what git diff writes comes through untouched.
    Entry("as-git-writes-it", applied=BOTH),
    # The reported case: two files, no "diff --git" lines, counts right.
    Entry("two-files", applied=BOTH),
    # "@@ -21,8 +21,12 @@" on a hunk of 6 and 8 lines, and too many in the second file too.
    Entry("two-files-overcounted", applied=BOTH),
    # Too few: "@@ -21,4 +21,5 @@"; the last hunk too (it would parse as a shorter hunk).
    Entry("two-files-undercounted", applied=BOTH),
    # The diff's last line has no newline: git calls that a corrupt patch.
    Entry("no-final-newline", applied=PARSER_ONLY, shape="no final newline"),
    # "--- arrow/parser.py": git's -p1 would look for parser.py.
    Entry("no-prefixes", applied=BOTH),
    # As "git diff --no-prefix" writes it: the "diff --git" lines need the prefixes too.
    Entry("no-prefixes-git-header", applied=BOTH),
    # Every line ends in CRLF, headers too: the text's line endings, not the files'.
    Entry("crlf-line-endings", applied=BOTH, shape="CRLF everywhere"),
    # A CRLF file, diffed as git does (LF headers, CRLF body): the CRs are the file's.
    Entry(
        "crlf-file",
        applied={"scripts/build.bat": REPAIRED_BAT},
        shape="CRLF body, LF headers",
    ),
    # The same repair with every line CRLF, the body's single CRs included: read as the
    # text's line endings (as above), so the body no longer matches the CRLF file.
    Entry(
        "crlf-everything-on-crlf-file",
        refused="error: patch failed: scripts/build.bat:1",
        shape="CRLF everywhere",
    ),
    # "@@ -21 +21 @@" (one line each, says the header) on a hunk of 6 and 8 lines.
    Entry("no-counts", applied=PARSER_ONLY),
    # A blank line between the two files, counts right: the counts say it is not context.
    Entry("blank-line-between-files", applied=BOTH),
    # The hunk's last context line is an empty line written without its space; the counts
    # say it is the hunk's (without it the hunk would have to match at the end of the file).
    Entry(
        "eaten-blank-context",
        applied={"arrow/parser.py": PATCHED_PARSER, "arrow/util.py": REPAIRED_UTIL_RETURN},
    ),
    # Inside a ```diff fence.
    Entry("fenced", applied=BOTH),
    # A context line the patched file does not have: refused, whatever the counts say.
    Entry("wrong-context", refused="error: patch failed: arrow/parser.py:21"),
]


def given_repair(name: str) -> str:
    return (CORPUS / f"{name}.diff").read_bytes().decode()


def procedure_of(repair: str) -> TestData:
    """The ``test:`` procedure's payload for a test with this repair."""
    procedure = parse_procedure("test:\ndef test_claim():\n    assert True\nrepair:\n" + repair)
    assert isinstance(procedure, Procedure), procedure
    return procedure.payload(TestData)


def test_every_corpus_file_is_in_the_table() -> None:
    assert sorted(path.stem for path in CORPUS.glob("*.diff")) == sorted(e.name for e in ENTRIES)


@pytest.mark.parametrize(
    "entry", [e for e in ENTRIES if e.shape], ids=[e.name for e in ENTRIES if e.shape]
)
def test_the_corpus_keeps_the_bytes_that_make_its_case(entry: Entry) -> None:
    """An editor that "fixes" a corpus file would quietly turn its case into another one."""
    text = given_repair(entry.name)
    lines = text.split("\n")[:-1]
    if entry.shape == "no final newline":
        assert not text.endswith("\n")
    elif entry.shape == "CRLF everywhere":
        assert lines and all(line.endswith("\r") for line in lines)
    else:
        assert entry.shape == "CRLF body, LF headers"
        assert not lines[0].endswith("\r") and lines[-1].endswith("\r")


def test_a_repair_as_git_writes_it_is_applied_as_given() -> None:
    given = given_repair("as-git-writes-it")
    procedure = procedure_of(given)
    assert (procedure.repair, procedure.repair_given) == (given, "")
    crlf = given_repair("crlf-file")
    assert procedure_of(crlf).repair == crlf


def test_a_miscounted_repair_keeps_the_diff_as_given_beside_the_recounted_one() -> None:
    given = given_repair("two-files-overcounted")
    procedure = procedure_of(given)
    assert procedure.repair_given == given
    assert procedure.repair == given.replace("@@ -21,8 +21,12 @@", "@@ -21,6 +21,8 @@").replace(
        "@@ -8,7 +8,10 @@", "@@ -8,6 +8,8 @@"
    )


def test_only_counts_that_do_not_fit_are_rewritten() -> None:
    assert recount_hunks("--- a/f\n+++ b/f\n@@ -3 +3 @@\n-x\n+y\n") == (
        "--- a/f\n+++ b/f\n@@ -3 +3 @@\n-x\n+y\n"
    )
    assert recount_hunks("--- a/f\n+++ b/f\n@@ -3 +3 @@ def f():\n a\n-x\n+y\n") == (
        "--- a/f\n+++ b/f\n@@ -3,2 +3,2 @@ def f():\n a\n-x\n+y\n"
    )


def test_a_repair_without_prefixes_gets_them_and_one_with_them_keeps_them() -> None:
    mended = mend_diff(given_repair("no-prefixes-git-header"))
    assert "diff --git a/arrow/parser.py b/arrow/parser.py\n" in mended
    assert "--- a/arrow/util.py\n+++ b/arrow/util.py\n" in mended
    new_file = '--- /dev/null\n+++ "b/new file.py"\n@@ -0,0 +1 @@\n+x = 1\n'
    assert mend_diff(new_file) == new_file
    assert mend_diff(new_file.replace('"b/', '"')) == new_file
