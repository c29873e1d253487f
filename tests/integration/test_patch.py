from __future__ import annotations

import subprocess
from pathlib import Path

from pytest_critic22.execution.git import commit_all, git
from pytest_critic22.model.patch import WHOLE_PATCH, parse_patch
from tests.helpers import diff_of, write

LINES = "".join(f"line {i}\n" for i in range(1, 31))


def apply_check(repo: Path, patch: str) -> subprocess.CompletedProcess[str]:
    return git(["apply", "--check", "-"], repo, input=patch, check=False)


def test_two_hunks_in_one_file_become_two_edits_with_distinct_ids(git_repo: Path) -> None:
    after = LINES.replace("line 2\n", "line two\n").replace("line 25\n", "line 25\nextra\n")
    patch = parse_patch(diff_of(git_repo, {"a.txt": LINES}, {"a.txt": after}))
    assert patch.edit_ids == ("e1", "e2")
    assert [e.path for e in patch.edits] == ["a.txt", "a.txt"]
    assert patch.edits[0].removed_lines == (2,)
    assert patch.edits[0].added_lines == (2,)
    assert patch.edits[1].added_lines == (26,)
    assert patch.whole_patch.startswith("diff --git a/a.txt b/a.txt")


def test_ids_are_stable_across_parses_and_follow_patch_order(git_repo: Path) -> None:
    text = diff_of(
        git_repo,
        {"a.py": LINES, "b.py": LINES},
        {"a.py": LINES.replace("line 3\n", ""), "b.py": "new first\n" + LINES},
    )
    first, second = parse_patch(text), parse_patch(text)
    assert first == second
    assert [(e.edit_id, e.path) for e in first.edits] == [("e1", "a.py"), ("e2", "b.py")]


def test_location_vocabulary_is_edit_ids_and_whole_patch(git_repo: Path) -> None:
    patch = parse_patch(diff_of(git_repo, {"a": LINES}, {"a": LINES.replace("line 9", "x")}))
    assert patch.locations == {"e1", WHOLE_PATCH}


def test_new_deleted_renamed_and_hunkless_files(git_repo: Path) -> None:
    text = diff_of(
        git_repo,
        {"old.txt": LINES, "gone.txt": "bye\n", "keep.txt": "k\n"},
        {
            "old.txt": None,
            "new_name.txt": LINES.replace("line 15\n", "fifteen\n"),
            "gone.txt": None,
            "fresh.txt": "hello\n",
            "empty.txt": "",
        },
    )
    patch = parse_patch(text)
    statuses = {f.path: (f.status, f.old_path, f.edit_ids) for f in patch.files}
    assert statuses["new_name.txt"] == ("renamed", "old.txt", ("e3",))
    assert statuses["gone.txt"] == ("deleted", "gone.txt", ("e2",))
    assert statuses["fresh.txt"] == ("added", None, ("e1",))
    assert statuses["empty.txt"] == ("added", None, ())


def test_no_newline_at_end_of_file_and_crlf_round_trip(git_repo: Path) -> None:
    text = diff_of(
        git_repo,
        {"crlf.txt": b"one\r\ntwo\r\n", "eol.txt": "last"},
        {"crlf.txt": b"one\r\nTWO\r\n", "eol.txt": "last changed"},
    )
    assert "\r\n" in text and "\\ No newline at end of file" in text
    patch = parse_patch(text)
    assert patch.subset(patch.edit_ids) == patch.whole_patch
    assert patch.edit("e1").hunk.endswith("+TWO\r\n")
    assert patch.edit("e2").hunk.rstrip("\n").endswith("\\ No newline at end of file")


def test_format_patch_mail_headers_stay_out_of_the_whole_patch(git_repo: Path) -> None:
    write(git_repo, {"a.txt": LINES})
    commit_all(git_repo, "base")
    write(git_repo, {"a.txt": LINES.replace("line 4\n", "four\n")})
    commit_all(git_repo, "Change four\n\nI am 90% sure.\n\nSigned-off-by: Bot <b@x>")
    text = git(["format-patch", "-1", "--stdout"], git_repo).stdout
    patch = parse_patch(text)
    assert patch.preamble.startswith("From ")
    assert "Signed-off-by" in patch.preamble
    assert patch.trailer.startswith("-- \n")
    assert patch.whole_patch.startswith("diff --git")
    for leaked in ("From:", "Subject:", "90% sure", "Signed-off-by", "Date:"):
        assert leaked not in patch.whole_patch
    assert all(leaked not in e.as_unit() for e in patch.edits for leaked in ("From:", "-- \n2."))


def test_subset_without_one_edit_applies_and_shifts_later_hunks(git_repo: Path) -> None:
    after = (
        LINES.replace("line 2\n", "line 2\nA\nB\nC\n")
        .replace("line 15\n", "")
        .replace("line 28\n", "twenty-eight\n")
    )
    patch = parse_patch(diff_of(git_repo, {"a.txt": LINES}, {"a.txt": after}))
    assert patch.edit_ids == ("e1", "e2", "e3")
    git(["reset", "-q", "--hard", "HEAD"], git_repo)
    without_first = patch.without(["e1"])
    assert "@@ -12,7 +12,6 @@" in without_first  # moved back by the three lines of e1
    assert apply_check(git_repo, without_first).returncode == 0
    git(["apply", "-"], git_repo, input=without_first)
    expected = LINES.replace("line 15\n", "").replace("line 28\n", "twenty-eight\n")
    assert (git_repo / "a.txt").read_text() == expected


def test_subset_that_leaves_out_a_renamed_files_hunk_keeps_the_rename(git_repo: Path) -> None:
    text = diff_of(
        git_repo,
        {"old.txt": LINES, "other.txt": "o\n"},
        {"old.txt": None, "new.txt": LINES.replace("line 15\n", "15\n"), "other.txt": "p\n"},
    )
    patch = parse_patch(text)
    renamed = next(f for f in patch.files if f.status == "renamed")
    git(["reset", "-q", "--hard", "HEAD"], git_repo)
    counterfactual = patch.without(renamed.edit_ids)
    assert apply_check(git_repo, counterfactual).returncode == 0
    git(["apply", "-"], git_repo, input=counterfactual)
    assert (git_repo / "new.txt").read_text() == LINES
    assert not (git_repo / "old.txt").exists()


def test_a_binary_file_is_left_out_and_named(git_repo: Path) -> None:
    only = diff_of(git_repo, {"img.bin": b"\x00\x01\x02"}, {"img.bin": b"\x00\x03\x02\x09"})
    patch = parse_patch(only)
    assert (patch.files, patch.edits, patch.whole_patch, patch.binary) == ((), (), "", ("img.bin",))
    text = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
    for both in (only + text, text.replace("--- a/x", "diff --git a/x b/x\n--- a/x") + only):
        patch = parse_patch(both)
        assert patch.binary == ("img.bin",)
        assert [f.path for f in patch.files] == ["x"] and len(patch.edits) == 1
        assert "img.bin" not in patch.whole_patch and "+b\n" in patch.whole_patch


def test_binary_sections_come_out_of_the_text_without_unidiff(git_repo: Path) -> None:
    from pytest_critic22.model.patch import without_binary_files

    only = diff_of(git_repo, {"img.bin": b"\x00\x01\x02"}, {"img.bin": b"\x00\x03\x02\x09"})
    text = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
    assert without_binary_files(only) == ""
    assert without_binary_files(only + text) == text
    assert without_binary_files(text + only) == text
    assert without_binary_files("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n").startswith("--- a/x")
