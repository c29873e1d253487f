from slugkit import slugify


def test_hidden_ampersand():
    assert slugify("R&D") == "r-and-d"
    assert slugify("Salt & Pepper", sep="_") == "salt_and_pepper"
