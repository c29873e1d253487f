"""Repairs as models write them.

The integration tier: with real git and sandboxed child processes. The rest, and the whole story:
tests/unit/test_repair_corpus.py.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_critic22.execution.git import commit_all, git, init_repo
from pytest_critic22.execution.trees import TreeError, TreeSet, Variant
from pytest_critic22.model.diffmend import mend_diff
from pytest_critic22.model.patch import parse_patch
from tests.helpers import write
from tests.unit.test_repair_corpus import (
    BUILD_BAT,
    CORPUS,
    ENTRIES,
    PARSER,
    UTIL,
    Entry,
    given_repair,
    procedure_of,
)

# The patch under review (as git writes it); every repair is written against its tree.
PATCH = (CORPUS / "under-review.patch").read_text()


class Repository:
    """The base commit, the patch under review, and the run's trees (removed at the end)."""

    def __init__(self, path: Path) -> None:
        path.mkdir()
        write(
            path,
            {
                "arrow/__init__.py": "",
                "arrow/parser.py": PARSER,
                "arrow/util.py": UTIL,
                "scripts/build.bat": BUILD_BAT,
            },
        )
        self.path = path
        self.base = init_repo(path)
        self.patch = parse_patch(PATCH)
        self.trees = TreeSet(path, self.base, f"repairs-{uuid.uuid4().hex[:8]}")

    def repaired(self, repair: str) -> Path:
        return self.trees.get(Variant.repaired(self.patch, repair))


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Repository]:
    made = Repository(tmp_path_factory.mktemp("repairs") / "repo")
    yield made
    made.trees.remove_all()


@pytest.mark.parametrize("entry", ENTRIES, ids=[entry.name for entry in ENTRIES])
def test_a_repair_as_models_write_it_is_applied_or_refused_with_gits_reason(
    repository: Repository, entry: Entry
) -> None:
    procedure = procedure_of(given_repair(entry.name))
    if entry.applied is not None:
        tree = repository.repaired(procedure.repair)
        for name, content in entry.applied.items():
            assert (tree / name).read_bytes().decode() == content, name
    else:
        with pytest.raises(TreeError) as refused:
            repository.repaired(procedure.repair)
        variant = Variant.repaired(repository.patch, procedure.repair).name
        assert str(refused.value) == f"the repair does not apply for the {variant} tree: " + (
            entry.refused
        )


LINE = st.sampled_from(["alpha", "beta", "  indented", "x = 1", "}", "return x", ""])


@st.composite
def changes(draw: st.DrawFn) -> tuple[dict[str, str], dict[str, str]]:
    """Up to three files in folders (LF or CRLF, some lines empty), each changed in up to
    three places."""
    before: dict[str, str] = {}
    after: dict[str, str] = {}
    for index in range(draw(st.integers(1, 3))):
        eol = draw(st.sampled_from(["\n", "\r\n"]))
        old = [
            f"{i} {w}{eol}" if (w := draw(LINE)) else eol for i in range(draw(st.integers(1, 40)))
        ]
        new = list(old)
        for pos in sorted(draw(st.sets(st.integers(0, len(old) - 1), max_size=3)), reverse=True):
            added = [f"new {draw(LINE)}{eol}" for _ in range(draw(st.integers(0, 3)))]
            new[pos : pos + draw(st.integers(0, 2))] = added
        name = f"pkg{index}/mod.txt"
        before[name], after[name] = "".join(old), "".join(new)
    return before, after


@dataclass(frozen=True, slots=True)
class Mangling:
    miscount: tuple[int, ...]  # added to each hunk's old count (taken from its new one)
    crlf: bool  # every line end becomes CRLF
    prefixes: bool  # keep a/ and b/
    newline: bool  # keep the last line's end
    eat: bool  # an empty context line loses its space (only with counts right: see mend_diff)


def mangle(diff: str, how: Mangling) -> str:
    """``diff`` without "diff --git"/"index" lines, and mangled ``how``."""
    out: list[str] = []
    hunks = 0
    for line in diff.split("\n"):
        if line.startswith(("diff --git ", "index ")):
            continue
        if line.startswith("@@ ") and how.miscount:
            header = re.match(r"@@ -(\S+) \+(\S+) @@(.*)", line)
            assert header is not None
            old, new, tail = header.groups()
            shift = how.miscount[hunks % len(how.miscount)]
            hunks += 1
            old_start, _, old_count = old.partition(",")
            new_start, _, new_count = new.partition(",")
            old_n = max(0, int(old_count or 1) + shift)
            new_n = max(0, int(new_count or 1) - shift)
            line = f"@@ -{old_start},{old_n} +{new_start},{new_n} @@{tail}"
        if not how.prefixes:
            line = line.replace("--- a/", "--- ", 1).replace("+++ b/", "+++ ", 1)
        if how.eat and not how.miscount and line in (" ", " \r"):
            line = line[1:]
        out.append(line)
    text = "\n".join(out)
    end = "\r\n" if how.crlf else "\n"
    text = text.replace("\n", end)
    return text if how.newline else text.removesuffix(end)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    case=changes(),
    how=st.builds(
        Mangling,
        miscount=st.lists(st.integers(-3, 3), max_size=3).map(tuple),
        crlf=st.booleans(),
        prefixes=st.booleans(),
        newline=st.booleans(),
        eat=st.booleans(),
    ),
)
def test_a_git_diff_mangled_as_models_do_is_mended_into_the_same_change(
    tmp_path: Path, case: tuple[dict[str, str], dict[str, str]], how: Mangling
) -> None:
    before, after = case
    repo = tmp_path / uuid.uuid4().hex[:8]
    repo.mkdir()
    git(["init", "-q"], repo)
    write(repo, dict(before))
    commit_all(repo, "base")
    write(repo, dict(after))
    diff = git(["diff", "--no-ext-diff"], repo).stdout
    git(["checkout", "-q", "--", "."], repo)
    if not diff:
        return
    assert mend_diff(diff) == diff  # git's own diff comes back byte for byte

    git(["apply", "-"], repo, input=mend_diff(mangle(diff, how)))
    for name, content in after.items():
        assert (repo / name).read_bytes().decode() == content, name
