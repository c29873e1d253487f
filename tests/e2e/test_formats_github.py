"""GitHub Actions.

The end-to-end tier: whole pytest runs. The rest, and the whole story:
tests/unit/test_formats_github.py.
"""

from __future__ import annotations

import pytest

_SAYS = """
from pytest_critic22.report.formats import say

def pytest_sessionfinish(session):
    say(session.config, "::notice file=a.py,line=1::one", command=True)
    say(session.config, "::warning file=a.py,line=2::two", command=True)
"""


@pytest.mark.parametrize("verbosity", ["-qq", "-q", "-rN", "-v"])
def test_a_workflow_command_starts_a_line_on_pytests_terminal(
    pytester: pytest.Pytester, verbosity: str
) -> None:
    pytester.makeconftest(_SAYS)
    pytester.makepyfile(
        "import pytest\n\ndef test_a():\n    pass\n\ndef test_b():\n    pytest.skip('no')\n"
    )
    result = pytester.runpytest(verbosity, "-p", "no:cacheprovider")
    assert result.ret == 0
    commands = [line for line in result.outlines if "::" in line and "file=a.py" in line]
    assert commands == ["::notice file=a.py,line=1::one", "::warning file=a.py,line=2::two"]


@pytest.mark.e2e
@pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")
@pytest.mark.parametrize("verbosity", ["-q", "-v"])
def test_every_annotation_of_a_real_review_starts_a_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, verbosity: str
) -> None:
    from tests.runs import case_args, make_sample

    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    make_sample(pytester, "textstats")
    args = case_args("textstats", "median-drops-guard")
    result = pytester.runpytest_subprocess(*args, "--critic22-reruns=1", verbosity)
    assert result.ret == 1
    text = "\n".join(result.outlines)
    # every "::error"/"::warning"/"::notice" is a line's first characters, none mid-line
    assert text.count("::error ") == text.count("\n::error ") == 3  # F1, F2, preservation
    assert text.count("::notice ") == text.count("\n::notice ") == 2  # F4, F5
    assert "::warning " not in text
    # the regression is annotated at the def of the failing test, test_mean_empty
    (regression,) = [line for line in result.outlines if line.startswith("::error file=tests/")]
    assert regression.startswith("::error file=tests/test_stats.py,line=10,endLine=10,")
