from wordcount import count_words, longest_word


def test_count_words():
    assert count_words("the quick brown fox") == 4
    assert count_words("fox") == 1


def test_count_words_speed(benchmark):
    # Needs pytest-benchmark (pip install -e '.[bench]'): where it is not installed this
    # test errors ("fixture 'benchmark' not found") on the base, the patched and every tree.
    text = " ".join(["fox"] * 1000)
    assert count_words(text) == 1000
    benchmark(count_words, text)


def test_longest_word():
    assert longest_word("a quick fox") == "quick"
    assert longest_word("") == ""
