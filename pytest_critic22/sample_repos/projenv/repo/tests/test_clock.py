from __future__ import annotations

from datetime import timedelta

from base import ClockTestCase

from projenv.clock import describe, elapsed_seconds


def test_elapsed_forward(stamp):
    assert elapsed_seconds(stamp, stamp + timedelta(seconds=3)) == 3.0


class TestDescribe(ClockTestCase):
    def test_later(self):
        assert describe(self.origin, self.later) == "3.0 s later"
