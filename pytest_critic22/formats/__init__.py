"""Report formats: each is an implementation of ``pytest_critic22_review_finished``.

Every format is derived from the one typed review result (the frozen ``Review``, the typed
results, the gate's ``Disposition``, the ``RunInfo``); none reads the terminal text. The
session registers :data:`FORMATS` on the controller when ``--critic22`` is given; each writes
only when its option (or, for GitHub, its environment) asks for it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

__all__ = ["FORMATS", "OUTPUT_OPTIONS", "output_path", "write_output"]

#: The format modules, registered as plugins (their names are the plugin names).
FORMATS: tuple[str, ...] = (
    "pytest_critic22.formats.json_report",
    "pytest_critic22.formats.sarif",
    "pytest_critic22.formats.github",
    "pytest_critic22.formats.html",
)

#: Options that name an output file: checked writable before any tree is built.
OUTPUT_OPTIONS: tuple[tuple[str, str], ...] = (
    ("critic22_report", "--critic22-report"),
    ("critic22_sarif", "--critic22-sarif"),
    ("critic22_html", "--critic22-html"),
)


def output_path(config: pytest.Config, dest: str) -> Path | None:
    """The file an output option names, relative to the invocation folder; None if not given."""
    value = config.getoption(dest)
    if not value:
        return None
    path = Path(value)
    return path if path.is_absolute() else config.invocation_params.dir / path


def write_output(path: Path, text: str) -> None:
    """Write a report: credentials scrubbed (children's output flows into every format)."""
    from pytest_critic22.scrub import scrub

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(scrub(text, os.environ), encoding="utf-8")
