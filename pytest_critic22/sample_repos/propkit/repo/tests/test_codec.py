from propkit import quote, unquote


def test_quote_plain():
    assert quote("plain") == "plain"


def test_quote_backslash():
    assert quote("a\\b") == "a\\\\b"


def test_unquote_plain():
    assert unquote("a\\\\b") == "a\\b"
