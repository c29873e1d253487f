from __future__ import annotations

from pathlib import Path

import pytest

from pytest_critic22.model.patch import DiffError, parse_patch


def test_plain_diff_without_git_headers(tmp_path: Path) -> None:
    text = "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
    patch = parse_patch(text)
    assert patch.edit_ids == ("e1",)
    assert patch.files[0].header == "--- a/x.py\n+++ b/x.py\n"
    assert patch.subset(["e1"]) == text


def test_unknown_edit_ids_are_refused() -> None:
    patch = parse_patch("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
    with pytest.raises(KeyError, match="e9"):
        patch.subset(["e9"])


@pytest.mark.parametrize("text", ["", "   \n\n"])
def test_an_empty_patch_has_nothing_to_review(text: str) -> None:
    """A pull request that only merges: its diff is empty, and that is no error."""
    patch = parse_patch(text)
    assert (patch.files, patch.edits, patch.whole_patch, patch.binary) == ((), (), "", ())


def test_text_that_is_no_diff_is_a_clear_error() -> None:
    with pytest.raises(DiffError, match=r"no file diffs"):
        parse_patch("just some words\n")


def test_a_malformed_hunk_names_the_line() -> None:
    text = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n?b\n c\n"
    with pytest.raises(DiffError) as info:
        parse_patch(text)
    assert info.value.line == 6
    assert "line 6" in str(info.value)


def test_a_truncated_hunk_names_its_header_line() -> None:
    text = "From x\nSubject: y\n\n--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n"
    with pytest.raises(DiffError) as info:
        parse_patch(text)
    assert info.value.line == 6
