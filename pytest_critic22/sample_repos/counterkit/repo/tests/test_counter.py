import threading

from counterkit import Counter


def test_single_thread():
    counter = Counter()
    for _ in range(100):
        counter.increment()
    assert counter.value == 100


def test_concurrent_increments():
    counter = Counter()

    def work():
        for _ in range(200):
            counter.increment()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counter.value == 800
