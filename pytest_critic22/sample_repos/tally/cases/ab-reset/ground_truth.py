from tally import Registry


def test_hidden_reset():
    r = Registry()
    r.counter("hits").inc(3)
    r.reset()
    assert r.snapshot() == {"hits": 0}
