from slugkit import unique_slug


def test_hidden_calls_without_taken_are_independent():
    assert unique_slug("Hello") == "hello"
    assert unique_slug("Hello") == "hello"


def test_hidden_taken_is_respected_and_updated():
    taken = {"hello"}
    assert unique_slug("Hello", taken) == "hello-2"
    assert taken == {"hello", "hello-2"}
