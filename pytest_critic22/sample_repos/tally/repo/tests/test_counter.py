import threading

from tally import Counter, Histogram


def test_inc():
    c = Counter("hits")
    c.inc()
    c.inc(4)
    assert c.value == 5


def test_threaded_increments():
    c = Counter("hits")

    def work():
        for _ in range(200):
            c.inc()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert c.value == 800


def test_histogram_counts_by_bucket():
    h = Histogram("latency")
    for value in (0.5, 3, 7, 50):
        h.observe(value)
    assert h.counts == [1, 1, 1, 1]
