from slugkit import slugify


def test_hidden_custom_separator_is_stripped_at_the_ends():
    assert slugify("Hello, World!", sep="_") == "hello_world"
    assert slugify("It's here!", sep="_") == "its_here"
