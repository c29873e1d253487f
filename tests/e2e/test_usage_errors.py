"""Bad input and unwritable outputs.

The end-to-end tier: whole pytest runs. The rest, and the whole story:
tests/unit/test_usage_errors.py.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from pytest_critic22.execution.git import git
from tests.integration.test_usage_errors import (
    refused,
    repo,  # noqa: F401  (a fixture)
)
from tests.unit.test_usage_errors import PATCH, advisory

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")


MAX_KEYS = ("edits", "files", "symbols", "callers", "modules")


def test_a_patch_that_is_not_utf8_is_one_error_naming_line_and_byte(
    pytester: pytest.Pytester, repo: Path
) -> None:
    (repo / "p.diff").write_bytes(PATCH.replace(b"+y = 3", b'+y = "\xff"'))
    line = refused(pytester, repo, "--critic22=p.diff", words=())
    assert line == (
        "ERROR: --critic22: p.diff line 6 is not valid UTF-8 (byte 0xff at column 7); "
        "re-encode the patch as UTF-8"
    )


def test_a_spec_file_that_is_not_utf8_is_one_error(
    pytester: pytest.Pytester, repo: Path, tmp_path: Path
) -> None:
    (tmp_path / "spec.md").write_bytes(b"y must be 3\n\x80\n")
    refused(
        pytester,
        repo,
        "--critic22=p.diff",
        f"--critic22-spec=@{tmp_path / 'spec.md'}",
        words=("--critic22-spec: spec.md line 2 is not valid UTF-8", "re-encode the file"),
    )


def test_a_state_folder_that_cannot_be_created_is_one_error_naming_the_ledger_option(
    pytester: pytest.Pytester, repo: Path
) -> None:
    (repo / ".critic22").write_text("not a folder\n")  # works even as root, unlike chmod
    git(["add", ".critic22"], repo)
    git(["commit", "-qm", "a file in the way"], repo)
    refused(
        pytester,
        repo,
        "--critic22=p.diff",
        words=("the state folder", ".critic22 is not writable", "--critic22-ledger=PATH"),
    )
    assert (repo / ".critic22").read_text() == "not a folder\n"


def test_a_ledger_elsewhere_is_the_way_around_an_unwritable_state_folder(
    pytester: pytest.Pytester, repo: Path, tmp_path: Path
) -> None:
    (repo / ".critic22").write_text("not a folder\n")
    ledger = tmp_path / "elsewhere" / "ledger.jsonl"
    result = pytester.runpytest_subprocess(
        "--critic22=p.diff", f"--critic22-ledger={ledger}", "-p", "no:randomly"
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    assert ledger.is_file()
    assert git(["worktree", "list"], repo).stdout.count("\n") == 1


@pytest.mark.parametrize("key", MAX_KEYS)
def test_a_max_ini_value_that_is_not_a_number_is_one_error(
    pytester: pytest.Pytester, repo: Path, key: str
) -> None:
    pytester.makeini(f"[pytest]\ncritic22_max_{key} = abc\n")
    line = refused(pytester, repo, "--critic22=p.diff", words=())
    assert line.startswith(f"ERROR: ini critic22_max_{key}: 'abc' is not a whole number")


def test_a_negative_max_ini_value_is_one_error(pytester: pytest.Pytester, repo: Path) -> None:
    pytester.makeini("[pytest]\ncritic22_max_callers = -2\n")
    refused(
        pytester,
        repo,
        "--critic22=p.diff",
        words=("ini critic22_max_callers: '-2' must not be negative",),
    )


def test_an_unwritable_report_path_is_one_error_before_any_item_runs(
    pytester: pytest.Pytester, repo: Path, tmp_path: Path
) -> None:
    (tmp_path / "afile").write_text("")
    refused(
        pytester,
        repo,
        "--critic22=p.diff",
        f"--critic22-report={tmp_path / 'afile' / 'out' / 'review.json'}",
        words=("--critic22-report: cannot write", "afile is a file, not a folder"),
    )
    assert (tmp_path / "afile").read_text() == ""
    assert not (repo / ".critic22").exists()  # the ledger check before it left nothing either


def test_a_report_path_that_is_a_folder_is_one_error(
    pytester: pytest.Pytester, repo: Path, tmp_path: Path
) -> None:
    refused(
        pytester,
        repo,
        "--critic22=p.diff",
        f"--critic22-report={tmp_path}",
        words=("--critic22-report: cannot write", "is a folder", "choose a writable path"),
    )


def test_an_unwritable_ledger_path_is_one_error(
    pytester: pytest.Pytester, repo: Path, tmp_path: Path
) -> None:
    (tmp_path / "afile").write_text("")
    refused(
        pytester,
        repo,
        "--critic22=p.diff",
        f"--critic22-ledger={tmp_path / 'afile' / 'ledger.jsonl'}",
        words=("--critic22-ledger: cannot write", "afile is a file, not a folder"),
    )


def test_the_terminal_summarises_thousands_of_dropped_findings(
    pytester: pytest.Pytester, repo: Path, tmp_path: Path
) -> None:
    findings = tmp_path / "many.json"
    findings.write_text(json.dumps([advisory(n) for n in range(10_000)]))
    result = pytester.runpytest_subprocess(
        "--critic22=p.diff", f"--critic22-findings={findings}", "--critic22-only"
    )
    output = result.stdout.str()
    assert "9980 records dropped beyond --critic22-max-findings=20" in output
    assert "dropped record" not in output
    assert len(output.splitlines()) < 100


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("--critic22-obligations", "--junitxml=/tmp/out.py", ("looks like an option",)),
        ("--critic22-obligations", "/outside/test_out.py::test_x", ("inside the repository",)),
        ("--critic22-obligations", "tests/../../x.py::t", ("inside the repository",)),
        ("--critic22-acceptance", "test_missing.py::test_x", ("not a file of the repository",)),
    ],
    ids=["an-option", "an-absolute-path", "dot-dot", "missing-file"],
)
def test_a_user_node_id_outside_the_repository_is_one_error(
    pytester: pytest.Pytester, repo: Path, option: str, value: str, words: tuple[str, ...]
) -> None:
    line = refused(pytester, repo, "--critic22=p.diff", f"{option}={value}", words=words)
    assert line.startswith(f"ERROR: {option}:")


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bubblewrap: nothing is probed")
def test_a_usage_error_found_while_the_sandbox_probe_runs_waits_for_it(
    pytester: pytest.Pytester, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bubblewrap probe runs in a thread while the rest of the configuration is read
    (runconfig.start_probe). A usage error found meanwhile joins it before pytest ends: its
    child has ended and its temporary folder is gone."""
    from pytest_critic22.execution import sandbox

    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    sandbox.probe_bwrap.cache_clear()  # this process may have probed already
    result = pytester.runpytest_inprocess("--critic22=p.diff", f"--critic22-report={tmp_path}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert sandbox.probe_bwrap.cache_info().currsize == 1  # it did probe
    assert list(temp.iterdir()) == []
