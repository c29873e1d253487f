"""Report formats: each is an implementation of ``pytest_critic22_review_finished``.

Every format is derived from the one typed review result (the frozen ``Review``, the typed
results, the gate's ``Disposition``, the ``RunInfo``); none reads the terminal text. The
session registers :data:`FORMATS` on the controller when ``--critic22`` is given; each writes
only when its option (or, for GitHub, its environment) asks for it.

Each format writes inside :func:`isolated`: one that fails says so in one line and the others
are still written; the verdict and pytest's exit status do not depend on any of them. Every
file is written so that no text can fail to encode (a lone surrogate from JSON, a child's
undecodable byte): as a backslash escape.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_critic22.pipeline.review import Review

__all__ = [
    "FORMATS",
    "OUTPUT_OPTIONS",
    "base_sources",
    "isolated",
    "output_path",
    "say",
    "write_output",
]

#: The format modules, registered as plugins (their names are the plugin names).
FORMATS: tuple[str, ...] = (
    "pytest_critic22.report.formats.json_report",
    "pytest_critic22.report.formats.sarif",
    "pytest_critic22.report.formats.github",
    "pytest_critic22.report.formats.html",
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
    from pytest_critic22.model.scrub import scrub

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(scrub(text, os.environ), encoding="utf-8", errors="backslashreplace")


def base_sources(repo: Path | None, review: Review) -> Callable[[str], str | None] | None:
    """A reader of the files at the review's base commit in ``repo`` (None without one); a
    file that is not there reads as None."""
    from pytest_critic22.execution.git import show_file

    if repo is None or not review.base_commit:
        return None

    def read(path: str) -> str | None:
        data = show_file(repo, review.base_commit, path)
        return None if data is None else data.decode("utf-8", "surrogateescape")

    return read


def say(config: pytest.Config, line: str, *, command: bool = False) -> None:
    """One line on pytest's terminal (on stdout without a terminal reporter), made inert
    (:func:`pytest_critic22.model.inert.safe_line`), that starts a line of its own: a workflow
    command is read only at a line's start. ``command``: the line is a workflow command of
    ours, escaped as one, that must keep its ``::`` at the start."""
    from pytest_critic22.model.inert import inert, safe_line

    line = inert(line) if command else safe_line(line)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        _end_the_current_line(reporter)
        reporter.write_line(line)
    else:
        print(line)


def _end_the_current_line(reporter: Any) -> None:
    """pytest's ``write_line`` starts a new line only when pytest knows it is mid-line (it
    wrote a file's path: ``currentfspath``); under ``-q`` the progress dots and ``[100%]``
    leave that unset, and the next line would follow them. The writer's own column says."""
    if getattr(reporter, "currentfspath", None):
        return  # write_line ends it
    column = getattr(getattr(reporter, "_tw", None), "width_of_current_line", 0)
    if isinstance(column, int) and column > 0:
        reporter.write("\n")


_MAX_DETAIL = 300  # a failed format's line: the exception's first characters


@contextlib.contextmanager
def isolated(config: pytest.Config, what: str) -> Iterator[None]:
    """Write one format: if it fails (an unwritable path, a bug, text no codec takes), one
    line says so — ``critic22: the SARIF report could not be written: OSError: ...`` — and
    the review goes on to the other formats, the summary and the verdict's exit status."""
    from pytest_critic22.model.scrub import scrub

    try:
        yield
    except Exception as exc:  # one format's failure is a line, not a crash
        detail = scrub(f"{type(exc).__name__}: {exc}", os.environ)
        if len(detail) > _MAX_DETAIL:
            detail = detail[: _MAX_DETAIL - 1] + "…"
        try:
            say(config, f"critic22: the {what} could not be written: {detail}")
        except Exception:  # not even a line: the others still go on
            print(f"critic22: the {what} could not be written", file=sys.stderr)
