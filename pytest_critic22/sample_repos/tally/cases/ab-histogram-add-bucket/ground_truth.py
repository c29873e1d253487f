from tally import Histogram


def test_hidden_add_bucket_touches_one_histogram_only():
    first = Histogram("a")
    first.add_bucket(20.0)
    assert list(Histogram("b").buckets) == [1.0, 5.0, 10.0]
