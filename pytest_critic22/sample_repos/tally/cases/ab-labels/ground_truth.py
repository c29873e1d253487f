from tally import Registry


def test_hidden_label_order_does_not_matter():
    r = Registry()
    assert r.counter("req", {"a": "1", "b": "2"}) is r.counter("req", {"b": "2", "a": "1"})


def test_hidden_labels_render_sorted():
    r = Registry()
    r.counter("req", {"b": "2", "a": "1"}).inc()
    assert r.render() == 'req{a="1",b="2"} 1\n'
