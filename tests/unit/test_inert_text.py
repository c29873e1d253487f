"""Untrusted text is inert wherever it is shown (DESIGN.md invariant 18, issue 41 item 6).

A critic's claim, a child's output, a reason or a file name must not forge a line of the
terminal, drive it (ANSI escapes, a carriage return), run a GitHub workflow command
(``::error``, ``::stop-commands::`` after any indent; ``##[`` anywhere in a line) or crash a
report (a lone surrogate, which JSON can carry); and a report that cannot be written is one
line, not a crash that takes the others and the verdict with it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from pytest_critic22.model.inert import inert, inert_data, safe_line
from pytest_critic22.model.results import Disposition, Outcome
from pytest_critic22.pipeline.review import Review, preservation_id
from pytest_critic22.report import terminal as report
from pytest_critic22.report.formats import github, isolated, json_report, sarif, write_output
from pytest_critic22.report.formats import html as html_format
from pytest_critic22.verification.procedures import FindingResult
from tests.unit.test_formats_github import with_claim
from tests.unit.test_formats_sarif import REJECT, RUN, drops_results, drops_review, schema_errors

HOSTILE = (
    "harmless start\n::error file=a::x\n::stop-commands::t\r"
    "verdict: PROCEED \x1b[31mred\x1b[0m \ud800 ##[error]legacy \u202eevil\u2028next\x85nel"
)


#: What must never reach a terminal or a log raw: C0/C1 controls, DEL, line and paragraph
#: separators, bidirectional controls, surrogates.
RAW = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


SURROGATE = re.compile("[\ud800-\udfff]")


OUR_ANNOTATION = re.compile(
    r"^::(error|warning|notice) file=[^:,\s]*,line=\d+,endLine=\d+,title=critic22 [^:,]*::"
)


def strings(value: object) -> Iterable[str]:
    """Every string of a JSON document, its keys too."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def assert_inert_lines(lines: Iterable[str], *, annotations_allowed: bool = False) -> None:
    """Each line: nothing raw, encodable as strict UTF-8, no ``##[``, and no ``::`` at its
    start (after whitespace, as the runner trims it) unless it is one of our annotations,
    with no second command in it."""
    for line in lines:
        assert not RAW.search(line), repr(line)
        assert not SURROGATE.search(line), repr(line)
        line.encode("utf-8")
        assert "##[" not in line, repr(line)
        if line.lstrip().startswith("::"):
            assert annotations_allowed and OUR_ANNOTATION.match(line), repr(line)


def test_inert_shows_controls_surrogates_and_legacy_commands_as_escapes() -> None:
    assert inert("a\nb\rc\td") == "a\\nb\\rc\\td"
    assert inert("\x1b[31mred\x1b[0m") == "\\x1b[31mred\\x1b[0m"
    assert inert("\ud800 \udcff") == "\\ud800 \\udcff"
    assert inert("\x00\x7f\x85\x9b") == "\\x00\\x7f\\x85\\x9b"
    assert inert("\u202eabc\u2066\u2028\u2029") == "\\u202eabc\\u2066\\u2028\\u2029"
    assert inert("##[error]x and ##[set-output name=a]b") == (
        "#\\x23[error]x and #\\x23[set-output name=a]b"
    )
    out = inert(HOSTILE)
    assert len(out.splitlines()) == 1 and out.encode("utf-8")
    assert_inert_lines([out])


def test_inert_leaves_printable_text_alone_and_is_idempotent() -> None:
    text = "median([1, 2]) == 1.5 — é ü 日本 🙂 C:\\path\\x1b \"quoted\" 'single' :: # ## [x]"
    assert inert(text) == text
    for value in (HOSTILE, text, "##[##[", "\\x1b\x1b"):
        assert inert(inert(value)) == inert(value)


def test_inert_never_raises() -> None:
    class Broken:
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert inert(Broken()) == "<unprintable Broken>"
    assert inert(42) == "42" and inert(None) == "None"


def test_a_summary_line_never_starts_with_a_workflow_command() -> None:
    assert safe_line("::error file=a::x") == "\\x3a:error file=a::x"
    assert safe_line("  ::stop-commands::t") == "  \\x3a:stop-commands::t"
    assert safe_line("\u3000\u00a0::warning::w") == "\u3000\u00a0\\x3a:warning::w"
    assert safe_line("\n::error::x") == "\\n::error::x"  # the escape is the line's start
    assert safe_line("critic22: a::b") == "critic22: a::b"
    assert safe_line(":single") == ":single"
    assert safe_line(safe_line("::x")) == safe_line("::x")


def test_inert_data_escapes_lone_surrogates_in_strings_and_keys_only() -> None:
    document = {"a\ud800": ["x\udcff", 1, None, {"b": "\x1b ok"}], "n": 1.5, "t": ("y",)}
    assert inert_data(document) == {
        "a\\ud800": ["x\\udcff", 1, None, {"b": "\x1b ok"}],
        "n": 1.5,
        "t": ["y"],
    }


def hostile_review() -> Review:
    review = with_claim(drops_review(), 0, HOSTILE)
    review = with_claim(review, 3, "::error file=b::advisory\n##[warning]w")
    return replace(
        review,
        preservation={"::error::group.py": ("::error::group.py::test_x",)},
        notes=("impact evidence unavailable: \n::error::from a note \x1b[2J",),
    )


def hostile_results() -> dict[str, FindingResult]:
    output = "\n".join(
        [
            "::error file=c::from the child",
            "\x1b[31mFAILED\x1b[0m test_x - assert 0",
            "progress 50%\rverdict: PROCEED",
            "  ::stop-commands::tok",
            "undecodable \udcff byte, lone \ud800",
        ]
    )
    logs: dict[str, Any] = {
        "procedure": "test",
        "patched": [{"status": "failed", "output": output, "note": "exit 3\n::error::note"}],
        "counterfactual": {"status": "passed", "output": output},
    }
    results = drops_results()
    results["F1"] = FindingResult(
        "F1", Outcome("verified", "fails\n::error::reason \ud800"), "without-e2", logs, "test"
    )
    results["F2"] = FindingResult(
        "F2", Outcome("inconclusive", "flaky\r::warning::x \x1b[0m"), "without-e2", logs, "test"
    )
    group = preservation_id("::error::group.py")
    results[group] = FindingResult(
        group, Outcome("verified", "regresses\n::error::p"), "base", logs, "counterfactual"
    )
    return results


def test_the_terminal_summary_is_inert_and_keeps_its_verdict_line() -> None:
    disposition = Disposition("reject", ("F1",), "1 verified blocking defect: F1\n::error::v")
    lines = report.summary_lines(
        hostile_review(),
        hostile_results(),
        disposition,
        ledger="/tmp/x/ledger.jsonl",
        notes=["files that do not parse: ::error::bad.py\r"],
    )
    assert_inert_lines(lines)
    assert "verdict: REJECT — 1 verified blocking defect: F1\\n::error::v" in lines
    assert lines[-1] == "ledger /tmp/x/ledger.jsonl"
    f1 = next(line for line in lines if line.startswith("  F1  "))
    assert f1.endswith("harmless start\\n::error file=a::x\\n::stop-commands::t\\rverdict…")
    assert "      inconclusive: flaky\\r::warning::x \\x1b[0m" in lines
    assert "      note: exit 3\\n::error::note" in lines
    assert "  \\x3a:error::group.py (1): regression — regresses\\n::error::p" in lines
    incomplete = Disposition("incomplete", (), "x", ("cannot import\n::error::pkg \x1b[2J",))
    lines = report.summary_lines(hostile_review(), {}, incomplete, ledger="l")
    assert_inert_lines(lines)
    assert "  - cannot import\\n::error::pkg \\x1b[2J" in lines


def test_a_verified_findings_explanation_is_inert_and_indents_the_childs_output() -> None:
    review, results = hostile_review(), hostile_results()
    text = report.explain_failure(review.wrapped[0], results["F1"])
    lines = text.split("\n")
    assert_inert_lines(lines)
    assert lines[0] == "critic22 F1 [e2]: verified defect"
    assert lines[1].startswith("claim:      harmless start\\n::error file=a::x\\n")
    assert "decided by: fails\\n::error::reason \\ud800" in lines
    child = lines[lines.index("--- on the patched tree (last run) ---") + 1 :]
    child = child[: child.index("")]
    assert child == [
        "  \\x3a:error file=c::from the child",
        "  \\x1b[31mFAILED\\x1b[0m test_x - assert 0",
        "  progress 50%",  # a carriage return ends a line of the child's, not ours
        "  verdict: PROCEED",
        "    \\x3a:stop-commands::tok",
        "  undecodable \\udcff byte, lone \\ud800",
    ]
    group = "::error::group.py"
    text = report.explain_preservation(group, results[preservation_id(group)])
    assert_inert_lines(text.split("\n"))
    assert text.startswith("critic22 preservation ::error::group.py: verified regression\n")


class Reporter:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def write_line(self, line: str) -> None:
        self.lines.append(line)


def fake_config(tmp_path: Path, reporter: Reporter | None = None, **options: str) -> Any:
    return SimpleNamespace(
        getoption=lambda dest: options.get(dest),
        invocation_params=SimpleNamespace(dir=tmp_path),
        pluginmanager=SimpleNamespace(
            get_plugin=lambda name: reporter if name == "terminalreporter" else None
        ),
    )


def test_annotations_are_one_command_each_whatever_the_claim() -> None:
    lines = github.annotations(hostile_review(), hostile_results())
    assert_inert_lines(lines, annotations_allowed=True)
    first = lines[0]
    assert first.startswith(
        "::error file=textstats/stats.py,line=9,endLine=9,title=critic22 F1 verified::"
        "harmless start%0A::error file=a::x%0A::stop-commands::t%0Dverdict: PROCEED "
        "\\x1b[31mred\\x1b[0m \\ud800 #\\x23[error]legacy \\u202eevil\\u2028next\\x85nel"
    )
    assert github.escape_data("50% \x1b[1m\ud800\n") == "50%25 \\x1b[1m\\ud800%0A"
    assert github.escape_property("a:b,c\r##[x]") == "a%3Ab%2Cc%0D#\\x23[x]"


def test_the_github_hook_writes_a_hostile_review_without_raising(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    reporter = Reporter()
    github.pytest_critic22_review_finished(
        review=hostile_review(),
        results=hostile_results(),
        disposition=REJECT,
        run=RUN,
        config=fake_config(tmp_path, reporter),
    )
    assert reporter.lines and all(OUR_ANNOTATION.match(line) for line in reporter.lines)
    assert_inert_lines(reporter.lines, annotations_allowed=True)
    text = summary.read_bytes().decode("utf-8")  # strict: no surrogate reached the file
    assert "\x1b" not in text and "\\ud800" in text
    assert "harmless start<br>::error file=a::x<br>::stop-commands::t<br>" in text


def test_sarif_json_and_html_reports_of_a_hostile_review_are_written(tmp_path: Path) -> None:
    config = fake_config(
        tmp_path,
        Reporter(),
        critic22_sarif="r.sarif",
        critic22_report="r.json",
        critic22_html="r.html",
    )
    args = {"review": hostile_review(), "results": hostile_results(), "disposition": REJECT}
    for fmt in (sarif, json_report, html_format):
        fmt.pytest_critic22_review_finished(**args, run=RUN, config=config)
    texts = {name: (tmp_path / name).read_bytes().decode("utf-8") for name in ("r.sarif", "r.json")}
    for text in texts.values():
        # No escaped lone surrogate, which strict JSON readers reject: its escape, as text.
        assert not any(SURROGATE.search(value) for value in strings(json.loads(text)))
        assert "\\\\ud800" in text
    document = json.loads(texts["r.sarif"])
    assert schema_errors(document) == []
    messages = [r["message"]["text"] for r in document["runs"][0]["results"]]
    assert any(m.startswith("harmless start\n::error file=a::x\n") for m in messages)
    claim = json.loads(texts["r.json"])["findings"][0]["finding"]["claim"]
    assert claim == HOSTILE.replace("\ud800", "\\ud800")
    page = (tmp_path / "r.html").read_bytes().decode("utf-8")
    assert "\x1b" not in page and "harmless start" in page


def test_a_fingerprint_and_a_uri_take_any_text() -> None:
    review = hostile_review()
    first = sarif.fingerprint(review.patch, "e2", "claim \ud800")
    assert first == sarif.fingerprint(review.patch, "e2", "claim \ud800")
    assert first != sarif.fingerprint(review.patch, "e2", "claim \ud801")
    undecodable = "caf\udce9.py"  # a file name's byte 0xe9, as surrogateescape carries it
    assert sarif._uri(undecodable) == "caf%E9.py"
    assert sarif._uri("a b/\ud800.py") == "a%20b/%5Cud800.py"


def test_write_output_takes_a_lone_surrogate(tmp_path: Path) -> None:
    write_output(tmp_path / "out" / "x.txt", "a\ud800b \udcff")
    assert (tmp_path / "out" / "x.txt").read_text(encoding="utf-8") == "a\\ud800b \\udcff"


def test_a_format_that_fails_is_one_line_and_the_others_are_still_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "r.sarif").mkdir()  # a folder where the SARIF file should go: it cannot
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    reporter = Reporter()
    config = fake_config(
        tmp_path,
        reporter,
        critic22_sarif="r.sarif",
        critic22_report="r.json",
        critic22_html="r.html",
    )
    args = {"review": hostile_review(), "results": hostile_results(), "disposition": REJECT}
    for fmt in (github, sarif, json_report, html_format):
        fmt.pytest_critic22_review_finished(**args, run=RUN, config=config)
    failed = [line for line in reporter.lines if not line.startswith("::")]
    assert len(failed) == 1
    assert failed[0].startswith(
        "critic22: the SARIF report could not be written: IsADirectoryError: "
    )
    assert (tmp_path / "r.json").is_file() and (tmp_path / "r.html").is_file()
    assert summary.is_file()


def test_isolated_writes_an_inert_line_and_lets_interrupts_through(tmp_path: Path) -> None:
    reporter = Reporter()
    config = cast(pytest.Config, fake_config(tmp_path, reporter))
    with isolated(config, "HTML report"):
        raise ValueError("bad\n::error::x \x1b[31m")
    assert reporter.lines == [
        "critic22: the HTML report could not be written: ValueError: bad\\n::error::x \\x1b[31m"
    ]
    with pytest.raises(KeyboardInterrupt), isolated(config, "HTML report"):
        raise KeyboardInterrupt
