from __future__ import annotations

import pytest

from pytest_critic22.apps.cli import DEMO_CASE, DEMO_SAMPLE, default_case, demo_cases, main


def test_a_case_of_another_sample_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["demo", "--sample", "slugkit", "--case", DEMO_CASE])
    assert exit_.value.code == 2
    assert f"no case '{DEMO_CASE}' in sample 'slugkit'; its cases: " in capsys.readouterr().err


def test_an_unknown_sample_is_refused_with_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["demo", "--sample", "nope"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "argument --sample: invalid choice: 'nope'" in err
    assert "'textstats'" in err


def help_of(capsys: pytest.CaptureFixture[str], *words: str) -> str:
    with pytest.raises(SystemExit) as exit_:
        main([*words, "--help"])
    assert exit_.value.code == 0
    return capsys.readouterr().out


def test_the_help_says_what_each_command_does(capsys: pytest.CaptureFixture[str]) -> None:
    text = help_of(capsys)
    assert text.startswith("usage: critic22 [-h] COMMAND ...")
    assert "console command." in text and "``" not in text
    assert "pytest --critic22=PATCH" in text
    commands = [
        line.split()[0]
        for line in text.splitlines()
        if line.startswith("  ") and line.split()[0] in ("demo", "ab")
    ]
    assert commands == ["demo", "ab"]  # each listed once, on its own line
    assert "  demo   review a bundled sample patch" in text
    assert "  ab     measure the critic against its own absence" in text


def test_the_demo_help_lists_every_sample_and_its_cases(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = help_of(capsys, "demo")
    cases = demo_cases()
    assert set(cases) >= {"textstats", "slugkit"}
    options = text.split("\n  --sample SAMPLE", 1)[1].split("--case", 1)[0]
    for sample in cases:
        assert sample in options  # the choices, in the option's help
    listing = text.split("cases by sample", 1)[1]
    for sample, names in cases.items():
        for name in names:
            assert name in listing, (sample, name)
    assert f"{DEMO_CASE}*" in listing  # the default case is marked


def test_the_default_case_of_a_sample() -> None:
    assert default_case(DEMO_SAMPLE, ["ab-x", DEMO_CASE, "median-good"]) == DEMO_CASE
    assert default_case("slugkit", ["ab-ampersand", "max-length"]) == "max-length"
    assert default_case("tally", ["ab-a", "ab-b"]) == "ab-a"
    assert default_case("empty", []) is None
