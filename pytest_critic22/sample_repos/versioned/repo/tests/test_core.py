import pytest

import verpkg
from verpkg import page, page_count


def test_the_version_is_generated():
    assert verpkg.__version__


def test_page_count_rounds_up():
    assert page_count(11, 5) == 3
    assert page_count(1, 5) == 1


def test_page_count_rejects_empty_pages():
    with pytest.raises(ValueError):
        page_count(3, 0)


def test_page():
    assert page([1, 2, 3, 4, 5], 2, 2) == [3, 4]
    assert page([1, 2, 3], 2, 3) == []
