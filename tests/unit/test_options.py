"""The options: validators that name what they expect, the critic's tuning as ini values,
the deprecated flags, and the one rule for ``TEXT|@FILE`` values.

In-process and mostly without a review: parsing and configuring is enough to check them.
"""

from __future__ import annotations

import argparse
import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_critic22.config.inputs import InputError, read_obligations, read_text_or_file
from pytest_critic22.config.options import (
    CriticTuning,
    as_characters,
    as_count,
    as_retries,
    as_seconds,
    as_temperature,
    as_tokens,
    check_ini,
    critic_tuning,
    deprecated_flags_used,
    warn_deprecated,
)

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")


@pytest.mark.parametrize(
    ("validate", "value", "message"),
    [
        (as_seconds, "abc", "expected a number of seconds (greater than 0), got 'abc'"),
        (as_seconds, "0", "expected a number of seconds (greater than 0), got '0'"),
        (as_seconds, "inf", "expected a number of seconds (greater than 0), got 'inf'"),
        (as_temperature, "hot", "expected a temperature (a number from 0 to 2), got 'hot'"),
        (as_temperature, "-0.1", "expected a temperature (a number from 0 to 2), got '-0.1'"),
        (as_temperature, "2.5", "expected a temperature (a number from 0 to 2), got '2.5'"),
        (as_count, "1.5", "expected a whole number (1 or more), got '1.5'"),
        (as_count, "0", "expected a whole number (1 or more), got '0'"),
        (as_retries, "-1", "expected a number of re-asks (a whole number, 0 or more), got '-1'"),
        (as_tokens, "0", "expected a number of tokens (a whole number, 1 or more), got '0'"),
        (
            as_characters,
            "x",
            "expected a number of characters (a whole number, 1 or more), got 'x'",
        ),
    ],
)
def test_each_validator_names_what_it_expects(
    validate: Callable[[str], object], value: str, message: str
) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as error:
        validate(value)
    assert str(error.value) == message
    if validate is not as_seconds:
        assert "seconds" not in message


@pytest.mark.parametrize(
    ("validate", "value", "number"),
    [
        (as_seconds, "0.5", 0.5),
        (as_temperature, "0", 0.0),
        (as_temperature, "2", 2.0),
        (as_count, "3", 3),
        (as_retries, "0", 0),
        (as_tokens, "512", 512),
        (as_characters, "60000", 60000),
    ],
)
def test_validators_accept_their_range(
    validate: Callable[[str], object], value: str, number: object
) -> None:
    assert validate(value) == number


def test_the_tuning_defaults(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig()
    assert critic_tuning(config) == CriticTuning(temperature=0.2, max_tokens=None, retries=2)


def test_the_tuning_is_read_from_the_ini_file(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\ncritic22_temperature = 0.7\ncritic22_max_tokens = 500\ncritic22_retries = 0\n"
    )
    config = pytester.parseconfig()
    assert critic_tuning(config) == CriticTuning(temperature=0.7, max_tokens=500, retries=0)


def test_the_tuning_is_read_from_dash_o(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig("-o", "critic22_temperature=0", "-o", "critic22_retries=5")
    assert critic_tuning(config) == CriticTuning(temperature=0.0, max_tokens=None, retries=5)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (
            "critic22_temperature",
            "hot",
            "ini critic22_temperature: expected a temperature (a number from 0 to 2), got 'hot' "
            "(the default is 0.2)",
        ),
        (
            "critic22_temperature",
            "3",
            "ini critic22_temperature: expected a temperature (a number from 0 to 2), got '3' "
            "(the default is 0.2)",
        ),
        (
            "critic22_max_tokens",
            "0",
            "ini critic22_max_tokens: expected a number of tokens (a whole number, 1 or more), "
            "got '0' (the default is none)",
        ),
        (
            "critic22_retries",
            "two",
            "ini critic22_retries: expected a number of re-asks (a whole number, 0 or more), "
            "got 'two' (the default is 2)",
        ),
    ],
)
def test_a_bad_tuning_ini_value_is_one_usage_error(
    pytester: pytest.Pytester, key: str, value: str, message: str
) -> None:
    config = pytester.parseconfig("-o", f"{key}={value}")
    for check in (critic_tuning, check_ini):
        with pytest.raises(pytest.UsageError) as error:
            check(config)
        assert str(error.value) == message


def test_a_bad_tuning_ini_value_costs_nothing_without_a_review(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfigure("-o", "critic22_temperature=hot")  # no UsageError
    assert config.getoption("critic22_patch") is None


class _Recorder:
    def __init__(self) -> None:
        self.messages: list[str] = []

    def pytest_warning_recorded(self, warning_message: warnings.WarningMessage) -> None:
        if issubclass(warning_message.category, pytest.PytestDeprecationWarning):
            self.messages.append(str(warning_message.message))


def configured(pytester: pytest.Pytester, *args: str) -> tuple[pytest.Config, list[str]]:
    """A configured pytest (the plugin's pytest_configure ran) and its deprecation warnings."""
    config = pytester.parseconfigure(*args)
    recorder = _Recorder()
    config.pluginmanager.register(recorder)  # config-time warnings are replayed to it
    return config, recorder.messages


def test_the_procedure_timeout_and_the_critic_timeout_are_two_options(
    pytester: pytest.Pytester,
) -> None:
    config, messages = configured(
        pytester, "--critic22-procedure-timeout=7", "--critic22-critic-timeout=9"
    )
    assert config.getoption("critic22_timeout") == 7.0
    assert config.getoption("critic22_critic_timeout") == 9.0
    assert messages == []
    assert deprecated_flags_used(config) == ()
    defaults = pytester.parseconfig()
    assert defaults.getoption("critic22_timeout") == defaults.getoption("critic22_critic_timeout")


def test_the_old_timeout_flag_warns_and_sets_the_procedure_timeout(
    pytester: pytest.Pytester,
) -> None:
    config, messages = configured(pytester, "--critic22-timeout=5")
    assert config.getoption("critic22_timeout") == 5.0
    assert messages == ["--critic22-timeout is deprecated: use --critic22-procedure-timeout"]


@pytest.mark.parametrize("where", ["PYTEST_ADDOPTS", "ini addopts"])
def test_the_old_timeout_flag_is_seen_wherever_pytest_reads_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    if where == "PYTEST_ADDOPTS":
        monkeypatch.setenv("PYTEST_ADDOPTS", "--critic22-timeout=6")
    else:
        pytester.makeini("[pytest]\naddopts = --critic22-timeout=6\n")
    config, messages = configured(pytester)
    assert config.getoption("critic22_timeout") == 6.0
    assert messages == ["--critic22-timeout is deprecated: use --critic22-procedure-timeout"]


@pytest.mark.parametrize(
    ("flag", "expected", "instead"),
    [
        (
            "--critic22-temperature=1.5",
            CriticTuning(1.5, None, 2),
            "the ini value critic22_temperature (-o critic22_temperature=T)",
        ),
        (
            "--critic22-max-tokens=99",
            CriticTuning(0.2, 99, 2),
            "the ini value critic22_max_tokens (-o critic22_max_tokens=N)",
        ),
        (
            "--critic22-retries=0",
            CriticTuning(0.2, None, 0),
            "the ini value critic22_retries (-o critic22_retries=N)",
        ),
    ],
)
def test_an_old_tuning_flag_warns_and_still_works(
    pytester: pytest.Pytester, flag: str, expected: CriticTuning, instead: str
) -> None:
    config, messages = configured(pytester, flag)
    assert critic_tuning(config) == expected
    assert messages == [
        f"{flag.split('=')[0]} is deprecated: use {instead}; for this release the flag still "
        "overrides the ini value"
    ]


def test_an_old_tuning_flag_wins_over_the_ini_value(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ncritic22_temperature = 0.9\ncritic22_retries = 4\n")
    config = pytester.parseconfig("--critic22-temperature=1.5")
    assert critic_tuning(config) == CriticTuning(temperature=1.5, max_tokens=None, retries=4)


def test_no_deprecated_flag_no_warning(pytester: pytest.Pytester) -> None:
    config, messages = configured(
        pytester, "--critic22-procedure-timeout=5", "-o", "critic22_retries=1"
    )
    assert messages == []
    assert critic_tuning(config).retries == 1


def test_xdist_workers_do_not_repeat_the_warning(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig("--critic22-timeout=5", "-W", "error::DeprecationWarning")
    config.workerinput = {}  # type: ignore[attr-defined]
    warn_deprecated(config)  # would raise under -W error in the controller


def test_a_plain_value_is_text_even_when_it_names_a_file(tmp_path: Path) -> None:
    (tmp_path / "obligations.txt").write_text("not me\n")
    (tmp_path / "spec.md").write_text("not me either\n")
    assert read_obligations(["obligations.txt"], tmp_path) == ["obligations.txt"]
    assert read_text_or_file("spec.md", "--critic22-spec", tmp_path) == "spec.md"
    # ... and a value that merely looks like a file name is text too, not an error
    assert read_text_or_file("missing.md", "--critic22-spec", tmp_path) == "missing.md"


def test_at_file_reads_the_file(tmp_path: Path) -> None:
    (tmp_path / "spec.md").write_text("y is 3\n")
    (tmp_path / "lines.txt").write_text("# comment\nkeeps x\n\ntests/test_m.py::test_ok\n")
    (tmp_path / "list.json").write_text(json.dumps(["a", " b ", ""]))
    assert read_text_or_file("@spec.md", "--critic22-spec", tmp_path) == "y is 3\n"
    assert read_obligations(["@lines.txt", "@list.json", "plain"], tmp_path) == [
        "keeps x",
        "tests/test_m.py::test_ok",
        "a",
        "b",
        "plain",
    ]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda base: read_obligations(["@missing.txt"], base),
            "--critic22-obligations: file not found: missing.txt",
        ),
        (
            lambda base: read_text_or_file("@missing.md", "--critic22-root-cause", base),
            "--critic22-root-cause: file not found: missing.md",
        ),
        (
            lambda base: read_text_or_file("@", "--critic22-spec", base),
            "--critic22-spec: '@' must be followed by a file name",
        ),
    ],
    ids=["obligations", "root-cause", "bare-at"],
)
def test_at_missing_is_one_clear_error(
    tmp_path: Path, call: Callable[[Path], Any], message: str
) -> None:
    with pytest.raises(InputError) as error:
        call(tmp_path)
    assert str(error.value) == message
