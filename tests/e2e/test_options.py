"""The plugin's options and ini values.

The end-to-end tier: whole pytest runs. The rest, and the whole story: tests/unit/test_options.py.
"""

from __future__ import annotations

import pytest

from pytest_critic22.config.options import (
    warn_deprecated,
)

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")


#: For the few whole in-process runs: no cache, and no hypothesis plugin (its import is slow).
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")


def test_a_bad_number_flag_is_a_usage_error_naming_the_flag(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_inprocess("--critic22-critic-timeout=soon")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*argument --critic22-critic-timeout: expected a number of seconds (greater than 0), "
            "got 'soon'*"
        ]
    )


def test_a_bad_tuning_ini_value_stops_a_review_with_one_error_line(
    pytester: pytest.Pytester,
) -> None:
    result = pytester.runpytest_inprocess("--critic22=p.diff", "-o", "critic22_retries=-1", *QUIET)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert errors == [
        "ERROR: ini critic22_retries: expected a number of re-asks (a whole number, 0 or more), "
        "got '-1' (the default is 2)"
    ]


def test_a_deprecated_flag_shows_in_the_warnings_summary_and_fails_under_w_error(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile("def test_ok():\n    pass\n")
    result = pytester.runpytest_inprocess("--critic22-retries=1", *QUIET)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["*PytestDeprecationWarning: --critic22-retries is deprecated: use the ini value*"]
    )
    config = pytester.parseconfig(
        "--critic22-retries=1", "-W", "error::pytest.PytestDeprecationWarning"
    )
    with pytest.raises(pytest.PytestDeprecationWarning, match="--critic22-retries"):
        warn_deprecated(config)


def test_at_missing_stops_a_review_with_one_error_line(pytester: pytest.Pytester) -> None:
    from pytest_critic22.execution.git import init_repo

    (pytester.path / "m.py").write_text("x = 1\ny = 2\n")
    init_repo(pytester.path)
    (pytester.path / "p.diff").write_text(
        "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n"
    )
    result = pytester.runpytest_inprocess(
        "--critic22=p.diff", "--critic22-obligations=@missing.txt", *QUIET
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert errors == ["ERROR: --critic22-obligations: file not found: missing.txt"]
