import pytest

from slugkit import slugify


def test_hidden_empty_separator_is_refused():
    with pytest.raises(ValueError):
        slugify("a b", sep="")
    assert slugify("a b") == "a-b"
