from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.e2e
@pytest.mark.all_plugins  # the quick start's own run, with every installed plugin
def test_the_demo_reviews_a_sample_and_reports_the_expected_verdict() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_critic22.apps.cli",
            "demo",
            "--sample",
            "slugkit",
            "--case",
            "max-length",
            "--",
            "--critic22-reruns=1",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verdict: PROCEED" in done.stdout
    assert "critic22 demo: verdict PROCEED (pytest exit status 0), as expected" in done.stdout


def test_an_unknown_demo_case_is_a_clear_error_listing_the_samples_cases() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_critic22.apps.cli", "demo", "--case", "nope"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    error = done.stderr.splitlines()[-1]
    assert error.startswith(
        "critic22 demo: error: no case 'nope' in sample 'textstats'; its cases:"
    )
    assert "median-drops-guard" in error and "max-length" not in error
