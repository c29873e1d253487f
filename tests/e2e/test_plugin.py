"""The plugin's face: options, usage errors, the summary, and what it costs when off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_critic22.execution.git import init_repo
from pytest_critic22.execution.ledger import read_events

PATCH = "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n"

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.path / "m.py").write_text("x = 1\ny = 2\n")
    (pytester.path / "test_m.py").write_text("def test_ok():\n    assert True\n")
    init_repo(pytester.path)
    (pytester.path / "p.diff").write_text(PATCH)
    return pytester


def test_help_shows_the_critic22_group(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(
        ["critic22: adversarial review of a candidate patch:", "*--critic22=PATCH*"]
    )


def test_no_critic22_switches_the_plugin_off(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "no:critic22", "--critic22=p.diff")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unrecognized arguments: --critic22=p.diff*"])


def test_a_run_without_the_option_registers_no_session(project: pytest.Pytester) -> None:
    result = project.runpytest()
    result.assert_outcomes(passed=1)
    assert "critic22" not in result.stdout.str().split("passed")[0].split("plugins:")[-1][200:]
    assert not (project.path / ".critic22").exists()


def test_a_review_prints_edits_and_what_was_stripped(project: pytest.Pytester) -> None:
    (project.path / "req.json").write_text(
        json.dumps({"specification": "y is 3", "generator_rationale": "trust me"})
    )
    result = project.runpytest("--critic22=p.diff", "--critic22-request=req.json")
    result.assert_outcomes(passed=2)  # the project's test and preserve[collection]
    result.stdout.fnmatch_lines(
        [
            "*= critic22 =*",
            "patch p.diff: 1 edit in 1 file",
            "  m.py (modified): e1",
            "packet sha256:*",
            "stripped before review: generator_rationale x1",
            "  generator_rationale: request $.generator_rationale (generator_rationale)",
            "ledger *ledger.jsonl",
        ]
    )
    events = read_events(project.path / ".critic22" / "ledger.jsonl")
    assert [e["event"] for e in events] == [
        "run-start",
        "patch-parsed",
        "packet-built",
        "sandbox",
        "impact-map",  # the base's suite measured under coverage.py
        "impact",
        "critic",
        "findings-parsed",
        "preservation-run",  # preserve[collection]
        "disposition",
        "run-end",
    ]
    assert len({e["run"] for e in events}) == 1
    assert "trust me" not in (project.path / ".critic22" / "ledger.jsonl").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--critic22=missing.diff"], "--critic22: patch file not found: missing.diff"),
        (["--critic22=bad.diff"], "--critic22: bad.diff: malformed hunk*(line 4)"),
        (
            ["--critic22=p.diff", "--critic22-spec=@spec.md"],
            "--critic22-spec: file not found: spec.md*",
        ),
        (
            ["--critic22=p.diff", "--critic22-request=req.json"],
            "--critic22-request: req.json is not valid JSON*",
        ),
        (
            ["--critic22=p.diff", "--critic22-request=list.json"],
            "--critic22-request: list.json must hold a JSON object",
        ),
    ],
)
def test_bad_input_is_one_clear_usage_error(
    project: pytest.Pytester, args: list[str], message: str
) -> None:
    (project.path / "bad.diff").write_text("--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\nnonsense\n")
    (project.path / "req.json").write_text("{nope")
    (project.path / "list.json").write_text("[]")
    result = project.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert "Traceback" not in result.stderr.str()


def test_the_ledger_option_moves_the_ledger(project: pytest.Pytester, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "l.jsonl"
    project.runpytest("--critic22=p.diff", f"--critic22-ledger={target}").assert_outcomes(passed=2)
    assert read_events(target)[0]["event"] == "run-start"


HEAVY_CHECK = """
import atexit, json, os, sys
def _dump():
    with open(os.environ["CRITIC22_MODULES_OUT"], "w") as fh:
        heavy = ("litellm", "libcst", "unidiff")
        json.dump(sorted(m for m in sys.modules if m.split(".")[0] in heavy), fh)
atexit.register(_dump)
"""


@pytest.mark.parametrize("args", [["--help"], [], ["--critic22=p.diff"]])
def test_pytest_without_a_review_imports_neither_litellm_nor_libcst(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    out = project.path / "modules.json"
    monkeypatch.setenv("CRITIC22_MODULES_OUT", str(out))
    project.makeconftest(HEAVY_CHECK)
    result = project.runpytest_subprocess(*args)
    assert result.ret == 0
    loaded = json.loads(out.read_text())
    assert not [m for m in loaded if m.startswith("litellm")]  # no model configured
    if not args or args == ["--help"]:
        assert loaded == []  # not even the diff parser or libcst


FREEZE_PROBE = """
import atexit, gc, json, os
import pytest
OUT = os.environ["CRITIC22_FREEZE_OUT"]
KEEP = []
def _write(name):
    with open(os.path.join(OUT, name), "w") as fh:
        json.dump(gc.get_freeze_count(), fh)
def pytest_sessionstart(session):
    _write("start")
    KEEP.extend([] for _ in range(1000))  # made during the session, kept to the end
def pytest_sessionfinish(session):
    _write("during")
@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config):
    _write("unconfigure")
if os.environ.get("CRITIC22_FREEZE_AT_EXIT"):
    atexit.register(_write, "at-exit")  # before the plugin's, so it runs after it
"""


def _frozen(folder: Path, when: str) -> int:
    count = json.loads((folder / when).read_text())
    assert isinstance(count, int)
    return count


@pytest.mark.parametrize("only", [True, False], ids=["only", "with-the-users-tests"])
def test_the_controllers_heap_is_frozen_only_while_no_user_test_runs_in_it(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, only: bool
) -> None:
    """In this process (pytest.main): frozen during an --critic22-only run, given back at
    its end; never frozen where the user's own tests run."""
    import gc

    monkeypatch.setenv("CRITIC22_FREEZE_OUT", str(tmp_path))
    project.makeconftest(FREEZE_PROBE)
    assert gc.get_freeze_count() == 0
    args = ["--critic22=p.diff", *(["--critic22-only"] if only else [])]
    assert project.runpytest_inprocess(*args).ret == 0
    assert (_frozen(tmp_path, "during") > 0) is only
    # what the session made (the review's imports: litellm's, libcst's) is frozen too by then
    grown = _frozen(tmp_path, "unconfigure") - _frozen(tmp_path, "start")
    assert grown >= 1000 if only else _frozen(tmp_path, "unconfigure") == 0
    assert gc.get_freeze_count() == 0  # this process collects everything again


def test_a_review_process_exits_without_collecting_its_heap_again(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CRITIC22_FREEZE_OUT", str(tmp_path))
    monkeypatch.setenv("CRITIC22_FREEZE_AT_EXIT", "1")
    project.makeconftest(FREEZE_PROBE)
    assert project.runpytest_subprocess("--critic22=p.diff", "--critic22-only").ret == 0
    assert _frozen(tmp_path, "during") > 0 and _frozen(tmp_path, "at-exit") > 0


HYPOTHESIS_PROBE = """
import json, os, sys
OUT = os.environ["CRITIC22_HYPOTHESIS_OUT"]
if os.environ.get("CRITIC22_IMPORT_HYPOTHESIS"):
    import hypothesis  # a conftest that registers profiles, say
seen = {}
def pytest_sessionstart(session):
    seen["at start"] = session.config.pluginmanager.get_plugin("hypothesispytest") is not None
def pytest_terminal_summary(terminalreporter):
    plugins = terminalreporter.config.pluginmanager
    seen["at summary"] = plugins.get_plugin("hypothesispytest") is not None
def pytest_unconfigure(config):
    seen["imported at the end"] = "hypothesis" in sys.modules
    name = getattr(config, "workerinput", {}).get("workerid", "controller")
    with open(os.path.join(OUT, name + ".json"), "w") as fh:
        json.dump(seen, fh)
"""


@pytest.mark.all_plugins  # hypothesis' plugin loaded, as in a user's shell
@pytest.mark.parametrize(
    ("args", "imported", "kept"),
    [
        (["--critic22-only", "-n", "2"], False, False),  # the controller's and each worker's
        (["--critic22-only"], True, True),
        ([], False, True),
    ],
    ids=["only-n2", "only-conftest-imports-hypothesis", "with-the-users-tests"],
)
def test_an_only_run_drops_hypothesis_summary_when_nothing_imported_hypothesis(
    project: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    imported: bool,
    kept: bool,
) -> None:
    """hypothesis' terminal summary imports all of hypothesis even in a run that never used
    it; an --critic22-only run, where no user test runs, unregisters it first. A run of the
    user's tests, or one where something imported hypothesis, keeps it."""
    out = project.path / "hypothesis"
    out.mkdir()
    monkeypatch.setenv("CRITIC22_HYPOTHESIS_OUT", str(out))
    if imported:
        monkeypatch.setenv("CRITIC22_IMPORT_HYPOTHESIS", "1")
    project.makeconftest(HYPOTHESIS_PROBE)
    assert project.runpytest_subprocess("--critic22=p.diff", *args).ret == 0
    processes = {p.stem: json.loads(p.read_text()) for p in out.iterdir()}
    assert set(processes) == ({"controller", "gw0", "gw1"} if "-n" in args else {"controller"})
    for seen in processes.values():
        assert seen["at start"]  # the plugin was loaded
        assert seen["at summary"] is kept
        if not kept:
            assert not seen["imported at the end"]
