"""Strict tooling is part of the suite, so CI keeps it strict: ruff and mypy --strict."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Named paths, never ".": a developer's virtualenv or CI's .ci-venv inside the checkout is
# not ours to lint.
PATHS = ["pytest_critic22", "tests", "benchmarks", "conftest.py"]


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "ruff", "check", *PATHS],
        [sys.executable, "-m", "ruff", "format", "--check", *PATHS],
        [sys.executable, "-m", "mypy", "pytest_critic22"],
    ],
    ids=["ruff-check", "ruff-format", "mypy-strict"],
)
def test_the_code_passes_strict_tooling(command: list[str]) -> None:
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
