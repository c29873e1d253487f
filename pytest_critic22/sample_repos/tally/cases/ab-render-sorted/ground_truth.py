from tally import Registry


def test_hidden_sorted():
    r = Registry()
    r.counter("b").inc()
    r.counter("a")
    assert r.render() == "a 0\nb 1\n"
