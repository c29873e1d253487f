"""The project's unittest base class: class-level set-up shared by clock tests."""

from __future__ import annotations

import unittest
from datetime import datetime, timedelta


class ClockTestCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.origin = datetime(2024, 1, 1, 12, 0, 0)
        cls.later = cls.origin + timedelta(seconds=3)
