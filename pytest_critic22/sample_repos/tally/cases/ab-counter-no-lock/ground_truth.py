import sys
import threading

from tally import Counter


def test_hidden_concurrent_increments_are_not_lost():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        counter = Counter("hits")

        def work():
            for _ in range(20000):
                counter.inc()

        threads = [threading.Thread(target=work) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(old)
    assert counter.value == 160000
