"""Property tests of the diff parser against real git: generated files, generated edits."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_critic22.execution.git import commit_all, git
from pytest_critic22.model.patch import AtomicEdit, parse_patch

WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "", "  indented", "x = 1", "}"])
EOL = st.sampled_from(["\n", "\r\n"])


@st.composite
def files_and_edits(draw: st.DrawFn) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Up to three files of numbered lines, each with several edits spread through it."""
    before: dict[str, list[str]] = {}
    after: dict[str, list[str]] = {}
    for index in range(draw(st.integers(1, 3))):
        eol = draw(EOL)
        n = draw(st.integers(0, 60))
        lines = [f"{i} {draw(WORDS)}{eol}" for i in range(n)]
        new = list(lines)
        # Edits from the bottom up so earlier positions stay valid.
        positions = sorted(
            draw(st.lists(st.integers(0, max(n, 0)), min_size=1, max_size=5, unique=True)),
            reverse=True,
        )
        for pos in positions:
            action = draw(st.sampled_from(["replace", "insert", "delete"]))
            count = draw(st.integers(1, 3))
            added = [f"new {draw(WORDS)}{eol}" for _ in range(draw(st.integers(1, 3)))]
            if action == "insert" or pos >= len(new):
                new[pos:pos] = added
            elif action == "delete":
                del new[pos : pos + count]
            else:
                new[pos : pos + count] = added
        if draw(st.booleans()) and new:  # sometimes no newline at end of file
            new[-1] = new[-1].rstrip("\r\n")
        before[f"f{index}.txt"] = lines
        after[f"f{index}.txt"] = new
    return before, after


def _write(repo: Path, files: dict[str, list[str]]) -> None:
    for name, lines in files.items():
        (repo / name).write_bytes("".join(lines).encode())


def _reverted(edit: AtomicEdit, new_lines: list[str]) -> list[str]:
    """The independent oracle: the new file with this hunk's target range put back."""
    old_side = []
    body = edit.hunk.split("\n", 1)[1]
    lines = body.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith("\\"):
            continue
        no_newline = i + 1 < len(lines) and lines[i + 1].startswith("\\")
        text = line[1:]
        if no_newline:
            text = text.rstrip("\n")
        if line[:1] in (" ", "-"):
            old_side.append(text)
    start = edit.new_start - 1 if edit.new_count else edit.new_start
    return new_lines[:start] + old_side + new_lines[start + edit.new_count :]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(files_and_edits())
def test_subset_of_all_edits_reproduces_the_new_files_and_all_but_one_reverts_that_hunk(
    case: tuple[dict[str, list[str]], dict[str, list[str]]],
) -> None:
    before, after = case
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        git(["init", "-q"], repo)
        _write(repo, before)
        commit_all(repo, "base")
        _write(repo, after)
        text = git(["diff", "--no-ext-diff"], repo).stdout
        if not text:
            return
        patch = parse_patch(text)
        git(["checkout", "-q", "--", "."], repo)

        # 1. All edits: the subset applies and reproduces every new file.
        full = patch.subset(patch.edit_ids)
        git(["apply", "-"], repo, input=full)
        for name, lines in after.items():
            assert (repo / name).read_bytes().decode() == "".join(lines)
        git(["checkout", "-q", "--", "."], repo)

        # 2. All but one: equals the new file with exactly that hunk reverted.
        for edit in patch.edits:
            counterfactual = patch.without([edit.edit_id])
            if counterfactual:  # leaving out the only edit leaves nothing to apply
                git(["apply", "-"], repo, input=counterfactual)
            expected = _reverted(edit, list(after[edit.path]))
            got = (repo / edit.path).read_bytes().decode()
            assert got == "".join(expected), edit.edit_id
            for name, lines in after.items():
                if name != edit.path:
                    assert (repo / name).read_bytes().decode() == "".join(lines)
            git(["checkout", "-q", "--", "."], repo)
