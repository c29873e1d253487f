"""GitHub Actions: workflow-command annotations and a Markdown job summary, only when
``GITHUB_ACTIONS=true``; the critic's text is data in both."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_critic22.model.results import Disposition
from pytest_critic22.pipeline.review import Review
from pytest_critic22.report.formats import github
from pytest_critic22.verification.procedures import FindingResult
from tests.unit.test_formats_sarif import (
    REJECT,
    RUN,
    build_review,
    drops_results,
    drops_review,
    result,
)

ANNOTATIONS = [
    "::error file=textstats/stats.py,line=9,endLine=9,title=critic22 F1 verified::"
    "mean() no longer raises ValueError on empty input; it returns 0.0. "
    "(F1 verified: fails on patched (2/2 runs))",
    "::error file=tests/test_stats.py,line=1,endLine=1,"
    "title=critic22 preserve[tests/test_stats.py] verified::"
    "the patch breaks existing tests in tests/test_stats.py "
    "(preserve[tests/test_stats.py] verified: test_mean_empty regresses)",
    "::warning file=textstats/stats.py,line=9,endLine=9,title=critic22 F2 inconclusive::"
    "The existing test of mean() on empty input breaks. "
    "(F2 inconclusive: flaky: failed 1 of 2 runs)",
    "::notice file=tests/test_stats.py,line=19,endLine=22,title=critic22 F4 advisory::"
    "mean() now hides a caller's bug by returning 0.0. "
    "(F4 advisory: never run: falsification is empty)",
    "::notice file=textstats/stats.py,line=18,endLine=19,title=critic22 F5 advisory::"
    "median() may be slow on large input. (F5 advisory: never run: falsification does not "
    "start with test:, counterfactual:, static:, trace: or property: "
    "(got 'Benchmark it on a million values.'))",
]


SUMMARY = """\
## critic22: REJECT

1 verified blocking defect: F1

Patch patch.diff: 3 edit(s) in 2 file(s); base 0123456789ab; run run-one (4.0 s).

### Findings (5)

| id | location | kind | outcome | claim |
| --- | --- | --- | --- | --- |
| F1 | textstats/stats.py:9 (e2) | test | **verified**<br>fails on patched (2/2 runs) | \
mean() no longer raises ValueError on empty input; it returns 0.0. |
| F2 | textstats/stats.py:9 (e2) | counterfactual | **inconclusive**<br>flaky: failed 1 of 2 \
runs | The existing test of mean() on empty input breaks. |
| F3 | textstats/stats.py:18-19 (e3) | test | **refuted**<br>the procedure passes on the \
patched tree | median() of odd-length input changes. |
| F4 | whole-patch | — | **advisory**<br>falsification is empty | mean() now hides a caller's \
bug by returning 0.0. |
| F5 | textstats/stats.py:18-19 (e3) | — | **advisory**<br>falsification does not start with \
test:, counterfactual:, static:, trace: or property: (got 'Benchmark it on a million values.') \
| median() may be slow on large input. |

### Preservation (1 group(s))

| group | tests | outcome |
| --- | --- | --- |
| tests/test\\_stats.py | 1 | **regression**<br>test\\_mean\\_empty regresses |

### Artifacts

- SARIF report (--critic22-sarif): out/review.sarif
- ledger: /tmp/x/ledger.jsonl
"""


def with_claim(review: Review, index: int, claim: str) -> Review:
    wrapped = list(review.wrapped)
    wrapped[index] = replace(wrapped[index], finding=replace(wrapped[index].finding, claim=claim))
    return replace(review, wrapped=tuple(wrapped))


def test_the_exact_annotation_lines_errors_first() -> None:
    assert github.annotations(drops_review(), drops_results()) == ANNOTATIONS


def test_messages_and_properties_are_escaped_by_githubs_rules() -> None:
    assert github.escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert github.escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    claim = "50% wrong\n::error file=x.py::injected, surely"
    review = with_claim(drops_review(), 0, claim)
    first = github.annotations(review, drops_results())[0]
    assert first == (
        "::error file=textstats/stats.py,line=9,endLine=9,title=critic22 F1 verified::"
        "50%25 wrong%0A::error file=x.py::injected, surely (F1 verified: fails on patched "
        "(2/2 runs))"
    )
    assert "\n" not in first and "\r" not in first


def test_a_path_with_colons_and_commas_is_escaped_as_a_property() -> None:
    text = (
        "diff --git a/odd:name,1.py b/odd:name,1.py\n--- a/odd:name,1.py\n"
        "+++ b/odd:name,1.py\n@@ -1,1 +1,1 @@\n-a\n+b\n"
    )
    record = {
        "location": "e1",
        "claim": "c",
        "severity": "blocking",
        "evidence": "e",
        "falsification": "static: removed-guard",
        "confidence": 0.5,
    }
    review = build_review(text, [record])
    (line,) = github.annotations(review, {"F1": result("F1", "verified", "hit")})
    assert line == (
        "::error file=odd%3Aname%2C1.py,line=1,endLine=1,title=critic22 F1 verified::"
        "c (F1 verified: hit)"
    )


def test_at_most_ten_per_level_and_one_line_says_how_many_were_left_out() -> None:
    review = drops_review()
    many = tuple(
        replace(review.wrapped[0], finding_id=f"F{n}", finding=review.wrapped[0].finding)
        for n in range(1, 14)
    )
    review = replace(review, wrapped=(*many, *review.wrapped[3:]), preservation={})
    results = {f"F{n}": result(f"F{n}", "verified") for n in range(1, 14)}
    lines = github.annotations(review, results)
    assert [line.split(" ", 1)[0] for line in lines] == ["::error"] * 10 + ["::notice"] * 2 + [
        "critic22:"
    ]
    assert lines[-1] == (
        "critic22: 3 error annotation(s) left out (GitHub shows at most 10 per level): every "
        "finding is in the job summary and the reports"
    )
    assert github.annotations(review, results, limit=13)[-1].startswith("::notice ")


def test_refuted_and_unrun_findings_are_no_annotations() -> None:
    lines = github.annotations(drops_review(), {"F3": result("F3", "refuted")})
    assert [line.split(" ", 1)[0] for line in lines] == ["::notice", "::notice"]


def test_the_exact_job_summary() -> None:
    artifacts = [("SARIF report (--critic22-sarif)", "out/review.sarif")]
    text = github.job_summary(drops_review(), drops_results(), REJECT, RUN, artifacts=artifacts)
    assert text == SUMMARY


def test_untrusted_text_in_the_summary_is_inert() -> None:
    claim = "<script>alert(1)</script> | breaks\nthe *table* [x](javascript:y) `code` # h"
    review = with_claim(drops_review(), 0, claim)
    text = github.job_summary(review, drops_results(), REJECT, RUN)
    row = next(line for line in text.splitlines() if line.startswith("| F1 |"))
    assert row.endswith(
        "| &lt;script&gt;alert(1)&lt;/script&gt; \\| breaks<br>the \\*table\\* "
        "\\[x\\](javascript:y) \\`code\\` \\# h |"
    )
    assert "<script>" not in text and row.count(" | ") == 4  # five cells, no more
    assert github.md("- item\n1. two") == "\\- item<br>1. two"
    assert github.md("12. twelve") == "12\\. twelve"


def test_an_incomplete_review_lists_why_it_could_not_look() -> None:
    incomplete = Disposition("incomplete", (), "could not", ("the tree cannot import pkg._v", "x"))
    text = github.job_summary(drops_review(), {}, incomplete, RUN)
    assert text.startswith(
        "## critic22: INCOMPLETE\n\nThe review could not look:\n\n"
        "- the tree cannot import pkg.\\_v\n- x\n"
    )
    assert "| F1 | textstats/stats.py:9 (e2) | test | **not run**<br>" in text
    assert "| tests/test\\_stats.py | 1 | **not run** |" in text


def test_no_findings_and_no_preservation_say_so() -> None:
    review = replace(drops_review(), wrapped=(), preservation={})
    proceed = Disposition("proceed", (), "no verified blocking defect (no blocking findings)")
    text = github.job_summary(review, {}, proceed, RUN)
    assert "### Findings (0)\n\nNo findings.\n" in text
    assert "### Preservation (0 group(s))\n\nNo existing test reaches" in text


class Reporter:
    """pytest's TerminalReporter as a format writes to it: ``write_line`` starts a new line
    only when pytest knows it is mid-line (``currentfspath``), as under ``-v`` and the default
    verbosity; ``-q``'s progress leaves it unset with the writer mid-line."""

    def __init__(self, progress: str = "", *, knows: bool = False) -> None:
        self.text = progress
        self.currentfspath: object = "tests/test_x.py" if knows and progress else None
        self._tw = SimpleNamespace(width_of_current_line=len(progress))

    def write(self, content: str) -> None:
        self.text += content
        self._tw.width_of_current_line = len(self.text.rsplit("\n", 1)[-1])

    def write_line(self, line: str) -> None:
        if self.currentfspath:  # pytest's ensure_newline()
            self.write("\n")
            self.currentfspath = None
        self.write(line + "\n")

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()


def _config(tmp_path: Path, reporter: Reporter | None, **options: str) -> Any:
    return SimpleNamespace(
        getoption=lambda dest: options.get(dest),
        invocation_params=SimpleNamespace(dir=tmp_path),
        pluginmanager=SimpleNamespace(
            get_plugin=lambda name: reporter if name == "terminalreporter" else None
        ),
    )


def _finish(config: Any, results: dict[str, FindingResult] | None = None) -> None:
    github.pytest_critic22_review_finished(
        review=drops_review(),
        results=drops_results() if results is None else results,
        disposition=REJECT,
        run=RUN,
        config=config,
    )


def test_under_actions_the_hook_annotates_and_appends_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "step_summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    reporter = Reporter()
    options = {"critic22_report": "r.json", "critic22_sarif": "out/review.sarif"}
    _finish(_config(tmp_path, reporter, **options))
    assert reporter.lines == ANNOTATIONS
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n## critic22: REJECT\n")
    assert f"- JSON report (--critic22-report): {github.md(str(tmp_path / 'r.json'))}\n" in text
    sarif_path = github.md(str(tmp_path / "out" / "review.sarif"))
    assert f"- SARIF report (--critic22-sarif): {sarif_path}\n" in text
    assert "HTML report" not in text
    _finish(_config(tmp_path, reporter))  # a second review appends again
    assert summary.read_text(encoding="utf-8").count("## critic22: REJECT") == 2


@pytest.mark.parametrize("value", [None, "false", "TRUE", ""])
def test_outside_actions_nothing_is_printed_or_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    summary = tmp_path / "step_summary.md"
    if value is None:
        monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    else:
        monkeypatch.setenv("GITHUB_ACTIONS", value)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    reporter = Reporter()
    _finish(_config(tmp_path, reporter))
    _finish(_config(tmp_path, None))
    assert reporter.lines == [] and capsys.readouterr().out == ""
    assert not summary.exists()


def test_without_a_terminal_reporter_the_lines_are_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    _finish(_config(tmp_path, None))
    assert capsys.readouterr().out.splitlines() == ANNOTATIONS


def test_a_summary_that_cannot_be_written_is_one_line_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "no" / "such" / "dir" / "s.md"))
    reporter = Reporter()
    _finish(_config(tmp_path, reporter))
    assert reporter.lines[:-1] == ANNOTATIONS
    assert reporter.lines[-1].startswith("critic22: cannot append the job summary to ")


@pytest.mark.parametrize("knows", [False, True], ids=["-q", "default"])
def test_every_annotation_starts_a_line_after_the_progress_dots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, knows: bool
) -> None:
    # Issue 43: under -q the first annotation followed ".s   [100%]" on its line, and the
    # runner reads a workflow command only at a line's start: every annotation was lost.
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    reporter = Reporter(".s" + " " * 70 + "[100%]", knows=knows)
    _finish(_config(tmp_path, reporter))
    assert reporter.lines == [".s" + " " * 70 + "[100%]", *ANNOTATIONS]


def test_credentials_in_a_reason_are_scrubbed_from_annotations_and_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "s.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("CRITIC22_TEST_TOKEN", "hunter2-very-secret")
    results = drops_results()
    results["F1"] = result("F1", "verified", "output said hunter2-very-secret")
    reporter = Reporter()
    _finish(_config(tmp_path, reporter), results)
    assert "hunter2-very-secret" not in "\n".join(reporter.lines)
    assert "hunter2-very-secret" not in summary.read_text(encoding="utf-8")
    assert any("output said ***" in line for line in reporter.lines)
