import pytest

from tally import parse_text


def test_hidden_comments_are_skipped_and_garbage_still_raises():
    assert parse_text("# hello\nhits 1\n") == {"hits": 1}
    with pytest.raises(ValueError, match="line 2"):
        parse_text("hits 1\nnot a metric\n")
