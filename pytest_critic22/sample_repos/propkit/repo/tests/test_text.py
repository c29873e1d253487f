from propkit import slugify


def test_slugify_title():
    assert slugify("Hello, World!") == "hello-world"


def test_slugify_digits():
    assert slugify("Top 10 Tips") == "top-10-tips"


def test_slugify_empty():
    assert slugify("") == ""
