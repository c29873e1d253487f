from slugkit import slugify


def test_hidden_accents_are_transliterated():
    assert slugify("Crème brûlée") == "creme-brulee"
    assert slugify("Déjà vu") == "deja-vu"
