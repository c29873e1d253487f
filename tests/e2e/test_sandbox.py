"""Critic findings written to escape, replayed end to end: every escape of issue 10 is contained.

Each attack is an attacker's finding in a findings file replayed with ``--critic22-findings``
through the plugin in a child pytest (``pytester.runpytest_subprocess``), on the ``textstats``
sample. Several attacks share one plugin run (one findings file), and each containment is its
own subtest, so a run costs one plugin start, not one per escape.

Which mode contains what (the ``sandbox`` fixture passes ``--critic22-sandbox=<mode>``):

=====================================================  ========  ========
escape                                                 bwrap     rlimits
=====================================================  ========  ========
1 marker files in the temp folders, ``os.system``      yes       (no)
2 the user's checkout through the tree's ``.git`` file yes       (no)
3 ``setsid`` processes outliving the run               yes       (no)
4 the controller's secrets: not readable               yes       (no)
4 the controller's secrets: not recorded (scrubbing)   yes       yes
5 ``counterfactual:`` a test outside the repository    yes       yes
6 options smuggled as node ids (and ``@argfile``)      yes       yes
7 SIGKILL of the controller, a new run at once         yes       yes [#]_
8 a project test gets ``--critic22-pass-env``          yes       yes
9 a normal run leaves nothing in the temp folder       yes       yes
=====================================================  ========  ========

.. [#] under rlimits the procedure's own process dies with the controller (the launcher's
   ``PR_SET_PDEATHSIG``); processes it starts in a new session would not, so the rlimits
   variant does not start any.

"(no)" attacks are not run under rlimits at all: they would succeed, and rlimits only promises
resource limits, an allow-listed environment and scrubbed records.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from pytest_critic22.apps.samples import case_dir
from pytest_critic22.execution.git import commit_all, git
from pytest_critic22.execution.sandbox import Sandbox
from pytest_critic22.execution.trees import TreeError, TreeSetup, write_in_tree
from tests.runs import make_sample
from tests.sandboxes import bwrap_or_skip, pids_with

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning"),
]

DROPS = case_dir("textstats", "median-drops-guard")
# Every plugin run below is bounded by this; none of them is expected to come near it.
RUN_TIMEOUT = 300


# -- helpers ---------------------------------------------------------------------------------


def finding(claim: str, falsification: str, location: str = "e2") -> dict[str, object]:
    return {
        "location": location,
        "claim": claim,
        "severity": "blocking",
        "evidence": "an attacker's finding",
        "falsification": falsification,
        "confidence": 0.99,
    }


def attacker_test(claim: str, source: str) -> dict[str, object]:
    return finding(claim, "test:\n" + textwrap.dedent(source).strip() + "\n")


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The plugin run's system temp folder: ours alone, so "nothing left" can be checked
    while other tests run in parallel."""
    folder = tmp_path / "systemp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    return folder


def review(pytester: pytest.Pytester, sandbox: Sandbox, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--critic22-only",
        "--critic22-reruns=1",
        "--critic22-preservation=off",
        f"--critic22-sandbox={sandbox.mode}",
        "-rA",
        *args,
        timeout=RUN_TIMEOUT,
    )


def outcomes_by_claim(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["finding"]["claim"]: f for f in report["findings"]}


def checkout_state(repo: Path) -> dict[str, object]:
    """What invariant 8 protects, byte for byte: status, every tracked file, refs, hooks,
    HEAD and config."""
    tracked = git(["ls-files", "-z"], repo).stdout.split("\0")
    dot_git = repo / ".git"

    def folder(path: Path) -> dict[str, str]:
        return {
            str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*"))
            if p.is_file()
        }

    return {
        "status": git(["status", "--porcelain", "--untracked-files=all"], repo).stdout,
        "tracked": {p: hashlib.sha256((repo / p).read_bytes()).hexdigest() for p in tracked if p},
        "branches": git(["for-each-ref", "--format=%(refname) %(objectname)"], repo).stdout,
        "refs": folder(dot_git / "refs"),
        "hooks": folder(dot_git / "hooks"),
        "HEAD": (dot_git / "HEAD").read_text(),
        "config": (dot_git / "config").read_text(),
        "packed-refs": (dot_git / "packed-refs").read_text()
        if (dot_git / "packed-refs").exists()
        else "",
    }


def gone(marker: str, within: float = 30.0) -> list[int]:
    """The processes still holding ``marker`` after waiting up to ``within`` seconds (a bound
    on how long the kernel takes to tear a namespace down, not a speed claim)."""
    deadline = time.monotonic() + within
    while (alive := pids_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


def kill_all(marker: str) -> None:
    for pid in pids_with(marker):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def everything_recorded(result: pytest.RunResult, repo: Path, report: Path) -> dict[str, str]:
    """Every place a secret must never reach, by name: the terminal, the JSON report, and
    every file under ``.critic22/`` (ledger, traces, cache)."""
    sinks = {
        "terminal": result.stdout.str() + result.stderr.str(),
        "JSON report": report.read_text(),
    }
    for path in sorted((repo / ".critic22").rglob("*")):
        if path.is_file():
            sinks[str(path.relative_to(repo))] = path.read_bytes().decode("utf-8", "replace")
    return sinks


def holding(sinks: dict[str, str], value: str) -> list[str]:
    return [name for name, text in sinks.items() if value in text]


def with_new_files(patch: str, files: dict[str, str]) -> str:
    """The sample's patch (mail headers and signature dropped) plus new files, one hunk each."""
    body = patch[patch.index("diff --git") :].split("\n-- \n")[0].rstrip("\n") + "\n"
    for path, content in files.items():
        lines = content.splitlines()
        body += (
            f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n"
            f"+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{ln}\n" for ln in lines)
        )
    return body


# -- 1-6: one run of attackers' findings -------------------------------------------------------

# A test the attacker's patch adds, for a ``trace:`` finding to replay: on odd seeds of the
# patched tree it calls a function of the traced file renamed after each stolen value, so
# the value becomes a trace event, and the event the report names as the divergence.
TRACED = """\
import os
import types

import textstats.stats as stats

PLANTED = (b"OPENAI_API_KEY=", b"AWS_SECRET_ACCESS_KEY=", b"GITHUB_TOKEN=", b"DATABASE_URL=")


def stolen():
    try:
        data = open("/proc/%d/environ" % os.getppid(), "rb").read()
    except OSError:
        return []
    return [e.split(b"=", 1)[1].decode() for e in data.split(b"\\0") if e.startswith(PLANTED)]


def test_traced():
    try:
        patched = stats.mean([]) == 0
    except ValueError:
        patched = False
    values = stolen()
    if patched and values and int(os.environ.get("PYTHONHASHSEED", "0")) % 2:
        for value in values:
            code = stats.mean.__code__.replace(co_name=value, co_qualname=value)
            types.FunctionType(code, stats.mean.__globals__)([1.0])
        raise AssertionError("odd seed")
"""


def secrets_for_this_run() -> dict[str, str]:
    token = uuid.uuid4().hex
    return {
        "OPENAI_API_KEY": f"sk-proj-{token}",
        "AWS_SECRET_ACCESS_KEY": f"aws{token}Secret",
        "GITHUB_TOKEN": f"ghp_{token[:20]}GitHubToken",
        "DATABASE_URL": "postgres://user:s3cretpass@db/x",
    }


def test_attackers_findings_are_contained(
    pytester: pytest.Pytester,
    tmp_path: Path,
    private_tmp: Path,
    sandbox: Sandbox,
    monkeypatch: pytest.MonkeyPatch,
    subtests: pytest.Subtests,
) -> None:
    repo = make_sample(pytester, "textstats")
    run = uuid.uuid4().hex[:12]
    outside = tmp_path / "outside"  # beside the repository, never inside it
    outside.mkdir()
    ran_outside = outside / f"ran-{run}"
    (outside / "test_out.py").write_text(
        f"def test_x():\n    open({str(ran_outside)!r}, 'w').write('ran outside the tree')\n"
    )
    relative_outside = os.path.relpath(outside / "test_out.py", repo)
    smuggled = [outside / f"smuggled-{name}.py" for name in ("cf", "cf2", "trace", "at")]
    # The patch under review is the attacker's too: it adds an argument file for pytest
    # ("@args.py" names it, "args.py" is what pytest reads).
    argfile = f"--junitxml={smuggled[3]}\n{outside / 'test_out.py'}::test_x\n"
    patch = tmp_path / "attack.diff"
    patch.write_text(
        with_new_files(
            (DROPS / "patch.diff").read_text(),
            {"@args.py": argfile, "args.py": argfile, "tests/test_traced.py": TRACED},
        )
    )

    secrets = secrets_for_this_run()
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    planted = tuple(secrets)

    folders = [tempfile.gettempdir(), "/tmp", "/var/tmp", str(private_tmp), str(tmp_path)]
    markers = [
        Path(folder) / f"critic22-escape-{run}"
        for folder in dict.fromkeys(folders)
        if Path(folder).is_dir()
    ]
    process_marker = f"critic22-escape-setsid-{run}"

    findings = [
        # 4: the controller's secrets, from its /proc/PID/environ and every other one; fails
        # only on the patched tree (mean([]) == 0 there), so the finding is verified and its
        # output recorded whenever anything was stolen.
        attacker_test(
            "steal the controller's secrets",
            f"""
            import glob, os
            from textstats import mean

            PLANTED = {tuple(n.encode() for n in planted)!r}

            def test_steal():
                stolen = []
                paths = ["/proc/%d/environ" % os.getppid(), *glob.glob("/proc/*/environ")]
                for path in paths:
                    try:
                        data = open(path, "rb").read()
                    except OSError:
                        continue
                    stolen += [e.decode() for e in data.split(b"\\0") if e.startswith(PLANTED)]
                stolen = sorted(set(stolen))
                print("\\n".join(stolen))
                try:
                    patched = mean([]) == 0
                except ValueError:
                    patched = False
                hexed = " ".join(s.encode().hex() for s in stolen)
                assert not (stolen and patched), "STOLEN " + " | ".join(stolen) + " HEX " + hexed
            """,
        ),
        # 4: the same, recorded through the trace events the child writes itself.
        finding("steal secrets into trace events", "trace: tests/test_traced.py repeat=2"),
        # 5: tests outside the repository, absolute and relative.
        finding("an outside test, absolute", f"counterfactual: {outside / 'test_out.py'}::test_x"),
        finding("an outside test, relative", f"counterfactual: {relative_outside}::test_x"),
        # 6: options where node ids go.
        finding("an option as a node id", f"counterfactual: --junitxml={smuggled[0]}"),
        finding(
            "an option after a node id",
            f"counterfactual: tests/test_stats.py::test_mean --junitxml={smuggled[1]}",
        ),
        finding("an option to trace", f"trace: --junitxml={smuggled[2]} repeat=2"),
        finding("an argument file", "counterfactual: @args.py"),
        finding("an argument file to trace", "trace: @args.py repeat=2"),
    ]
    if sandbox.isolated:
        findings += [
            # 1: marker files in every temp folder, directly and through a shell.
            attacker_test(
                "leave marker files in the temp folders",
                f"""
                import os, shlex, tempfile

                TARGETS = [os.path.join(tempfile.gettempdir(), {markers[0].name!r}),
                           *{[str(m) for m in markers]!r}]

                def test_leave_markers():
                    for path in TARGETS:
                        try:
                            with open(path, "w") as fh:
                                fh.write("escaped")
                        except OSError:
                            pass
                    os.system("touch " + " ".join(shlex.quote(p + "-sh") for p in TARGETS)
                              + " 2>/dev/null")
                """,
            ),
            # 2: the tree's .git file names the user's repository: edit it, add to it, add a
            # hook and refs, through files and through git, after trying to remount / rw.
            attacker_test(
                "edit the user's checkout through the tree's .git file",
                """
                import os, subprocess

                def test_edit_the_checkout():
                    gitdir = open(".git").read().split(":", 1)[1].strip()
                    common = os.path.dirname(os.path.dirname(gitdir))
                    repo = os.path.dirname(common)
                    for target in ("/", repo, common):
                        subprocess.run(["mount", "-o", "remount,bind,rw", target],
                                       capture_output=True)
                    for path in (
                        os.path.join(repo, "textstats", "stats.py"),
                        os.path.join(repo, "PWNED.txt"),
                        os.path.join(common, "hooks", "pre-commit"),
                        os.path.join(common, "refs", "heads", "pwned"),
                        os.path.join(common, "config"),
                    ):
                        try:
                            with open(path, "a") as fh:
                                fh.write("\\n# pwned\\n")
                            os.chmod(path, 0o755)
                        except OSError:
                            pass
                    for args in (["update-ref", "refs/heads/pwned2", "HEAD"], ["tag", "pwned3"],
                                 ["config", "core.hooksPath", "/tmp"], ["stash", "-u"]):
                        subprocess.run(["git", "-C", repo, *args], capture_output=True)
                """,
            ),
            # 3: processes in their own session, which a process group kill does not reach.
            attacker_test(
                "leave setsid processes behind",
                f"""
                import os, subprocess

                def test_leave_sleepers():
                    env = {{"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                           "CRITIC22_ESCAPE": {process_marker!r}}}
                    for _ in range(5):
                        subprocess.Popen(["sleep", "100000"], start_new_session=True, env=env,
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)
                """,
            ),
        ]
    findings_file = tmp_path / "findings.json"
    findings_file.write_text(json.dumps(findings))
    report_file = tmp_path / "report.json"
    before = checkout_state(repo)

    try:
        result = review(
            pytester,
            sandbox,
            f"--critic22={patch}",
            f"--critic22-findings={findings_file}",
            f"--critic22-report={report_file}",
        )
        survivors = gone(process_marker) if sandbox.isolated else []
    finally:
        kill_all(process_marker)
        leaked = [p for m in markers for p in (m, Path(f"{m}-sh")) if p.exists()]
        for path in leaked:
            path.unlink()
    assert report_file.exists(), result.stdout.str() + result.stderr.str()
    report = json.loads(report_file.read_text())
    by_claim = outcomes_by_claim(report)
    assert report["sandbox"]["mode"] == sandbox.mode

    if sandbox.isolated:
        with subtests.test("1: no marker file in any temp folder, directly or via os.system"):
            record = by_claim["leave marker files in the temp folders"]
            assert record["outcome"]["status"] == "refuted", record  # it ran to its end
            assert leaked == []
        with subtests.test("2: the user's checkout is byte-for-byte unchanged"):
            record = by_claim["edit the user's checkout through the tree's .git file"]
            assert record["outcome"]["status"] == "refuted", record  # it ran to its end
            assert checkout_state(repo) == before
        with subtests.test("3: no setsid process outlives the run"):
            status = by_claim["leave setsid processes behind"]["outcome"]["status"]
            assert status == "refuted", by_claim["leave setsid processes behind"]
            assert survivors == []

    recorded = everything_recorded(result, repo, report_file)
    stolen = by_claim["steal the controller's secrets"]
    traced = by_claim["steal secrets into trace events"]
    if sandbox.isolated:
        with subtests.test("4: the controller's secrets are not readable by the child"):
            assert stolen["outcome"]["status"] == "refuted", stolen
            assert traced["outcome"]["status"] == "refuted", traced
            for value in secrets.values():
                assert holding(recorded, value.encode().hex()) == []
    else:
        with subtests.test("4: rlimits cannot stop the reading (the attack did read them)"):
            # Documents the fallback's limit: the stolen values were read and printed, or
            # made trace events...
            assert stolen["outcome"]["status"] == "verified", stolen
            assert traced["outcome"]["status"] == "verified", traced
    with subtests.test("4: no secret value is recorded anywhere (scrubbed by name and value)"):
        # ...and never recorded: the terminal, the report, the ledger and traces.
        for value in (*secrets.values(), "s3cretpass"):
            if value.startswith("postgres://"):
                continue  # the URL's user and host may stay; its password may not
            assert holding(recorded, value) == [], f"{value!r} was recorded"

    with subtests.test("5: a test outside the repository is downgraded, never run"):
        for claim, reason in (
            ("an outside test, absolute", "not a path inside the repository"),
            ("an outside test, relative", "not a path inside the repository"),
        ):
            record = by_claim[claim]
            assert record["outcome"]["status"] == "advisory", record
            assert reason in record["route"]["reason"], record
            assert record["logs"] == {}
        assert not ran_outside.exists()

    with subtests.test("6: options and argument files as node ids are not run, write nothing"):
        for claim in (
            "an option as a node id",
            "an option after a node id",
            "an option to trace",
        ):
            record = by_claim[claim]
            assert record["outcome"]["status"] == "advisory", record
            assert "looks like an option" in record["route"]["reason"], record
            assert record["logs"] == {}
        downgraded = {d["reason"] for d in report["downgraded"]}
        assert any("looks like an option" in r for r in downgraded), downgraded
        for claim in ("an argument file", "an argument file to trace"):
            # Downgraded when the node id check knows "@" (nodeids.py); refused by the
            # runner otherwise. Either way never run, and never "refuted".
            record = by_claim[claim]
            status = record["outcome"]["status"]
            assert status in ("advisory", "inconclusive"), record
            if status == "inconclusive":
                assert "refused to run" in record["outcome"]["reason"], record
        assert [p for p in smuggled if p.exists()] == []
        assert not ran_outside.exists()


# -- 7: SIGKILL of the controller mid-procedure, then a new run before the zombie is reaped ---


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_a_sigkilled_controller_leaves_no_process_and_the_next_run_prunes_its_trees(
    pytester: pytest.Pytester, tmp_path: Path, private_tmp: Path, sandbox: Sandbox
) -> None:
    repo = make_sample(pytester, "textstats")
    before = checkout_state(repo)
    marker = f"critic22-sigkill-{uuid.uuid4().hex[:12]}"
    # bwrap: the procedure starts three processes in new sessions, then becomes an endless
    # sleeper itself. rlimits: only the latter (nothing there can reach a new session).
    setsid = 3 if sandbox.isolated else 0
    findings = tmp_path / "sleep.json"
    findings.write_text(
        json.dumps(
            [
                attacker_test(
                    "sleeps forever",
                    f"""
                    import os, subprocess, sys

                    SLEEP = [sys.executable, "-c", "import time; time.sleep(10**6)", {marker!r}]

                    def test_sleep_forever():
                        for _ in range({setsid}):
                            subprocess.Popen(SLEEP, start_new_session=True,
                                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                             stderr=subprocess.DEVNULL)
                        os.execv(sys.executable, SLEEP)
                    """,
                )
            ]
        )
    )
    log = tmp_path / "first-run.log"
    with open(log, "wb") as out:
        first = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                f"--critic22={DROPS / 'patch.diff'}",
                f"--critic22-findings={findings}",
                "--critic22-only",
                "--critic22-preservation=off",
                f"--critic22-sandbox={sandbox.mode}",
            ],
            cwd=repo,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + RUN_TIMEOUT
        while len(pids_with(marker)) < setsid + 1:
            assert _state(first.pid) not in ("Z", "gone"), log.read_text()
            assert time.monotonic() < deadline, "the procedure never started"
            time.sleep(0.1)
        assert len(git(["worktree", "list", "--porcelain"], repo).stdout.split("\n\n")) >= 2
        os.kill(first.pid, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while _state(first.pid) != "Z":  # dead, and deliberately not reaped
            assert time.monotonic() < deadline, _state(first.pid)
            time.sleep(0.05)

        second = review(pytester, sandbox, f"--critic22={DROPS / 'patch.diff'}")
        assert _state(first.pid) == "Z"  # the whole second run saw a zombie owner
        second.stdout.fnmatch_lines(["*removed * stale worktree(s) of a crashed run*"])
        survivors = gone(marker)
    finally:
        if _state(first.pid) not in ("Z", "gone"):
            first.kill()
        first.wait(timeout=60)
        kill_all(marker)
    assert survivors == [], "processes of the killed run survived it"
    worktrees = git(["worktree", "list", "--porcelain"], repo).stdout.strip().split("\n\n")
    assert len(worktrees) == 1, worktrees
    assert sorted(p.name for p in private_tmp.iterdir()) == []  # no trees, runs, homes
    assert checkout_state(repo) == before


# -- 8-9: legitimate use -----------------------------------------------------------------------

SETTINGS = "tests/test_settings.py"


def test_a_project_test_gets_the_environment_it_is_given_and_the_run_leaves_nothing_behind(
    pytester: pytest.Pytester,
    tmp_path: Path,
    private_tmp: Path,
    sandbox: Sandbox,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo = make_sample(pytester, "textstats")
    (repo / SETTINGS).write_text(
        "import os\n\n\n"
        "def test_project_setting(tmp_path):\n"
        "    (tmp_path / 'scratch.txt').write_text('the child writes its own temp folder')\n"
        "    assert os.environ.get('PROJECT_SETTING') == 'on'\n\n\n"
        "def test_other_setting():\n"
        "    assert os.environ.get('OTHER_SETTING') == 'on'\n"
    )
    commit_all(repo, "tests that need a setting")
    monkeypatch.setenv("PROJECT_SETTING", "on")
    monkeypatch.setenv("OTHER_SETTING", "on")
    findings = tmp_path / "f.json"
    findings.write_text(
        json.dumps(
            [
                finding("passed on", f"counterfactual: {SETTINGS}::test_project_setting"),
                finding("not passed", f"counterfactual: {SETTINGS}::test_other_setting"),
            ]
        )
    )
    report_file = tmp_path / "r.json"
    listing = sorted(p.name for p in private_tmp.iterdir())
    result = review(
        pytester,
        sandbox,
        f"--critic22={DROPS / 'patch.diff'}",
        f"--critic22-findings={findings}",
        f"--critic22-report={report_file}",
        "--critic22-pass-env=PROJECT_SETTING",
    )
    report = json.loads(report_file.read_text())
    by_claim = outcomes_by_claim(report)
    # Passed: the project's test sees it and passes, so the claim is refuted. Not passed:
    # the same kind of test fails on both trees, so the finding is inconclusive.
    assert by_claim["passed on"]["outcome"]["status"] == "refuted", result.stdout.str()
    assert by_claim["not passed"]["outcome"]["status"] == "inconclusive", by_claim["not passed"]
    assert "fails on both" in by_claim["not passed"]["outcome"]["reason"]
    assert report["sandbox"] == {
        "mode": sandbox.mode,
        "isolated": sandbox.isolated,
        "warning": "",
        "pass_env": ["PROJECT_SETTING"],
    }
    # 9: nothing of the run's own is left in the temp folder: no trees folder, no run or
    # home folders, and not the temp files the project's own tests made.
    assert sorted(p.name for p in private_tmp.iterdir()) == listing == []


# -- the controller writes into trees that sandboxed children wrote before it ----------------


def test_a_link_planted_in_the_tree_is_never_written_through(
    pytester: pytest.Pytester, tmp_path: Path, private_tmp: Path
) -> None:
    sandbox = bwrap_or_skip()
    repo = make_sample(pytester, "textstats")
    before = checkout_state(repo)
    findings = tmp_path / "f.json"
    findings.write_text(
        json.dumps(
            [
                # Runs first, in the patched tree (writable to it): wherever the next
                # finding's test file will be written, a link to the user's source waits.
                attacker_test(
                    "plant links where the next test will be written",
                    """
                    import os

                    def test_plant():
                        gitdir = open(".git").read().split(":", 1)[1].strip()
                        repo = os.path.dirname(os.path.dirname(os.path.dirname(gitdir)))
                        target = os.path.join(repo, "textstats", "stats.py")
                        here = os.path.dirname(os.path.abspath(__file__))
                        for folder in {here, os.getcwd(), "tests", "critic22_generated"}:
                            os.makedirs(folder, exist_ok=True)
                            link = os.path.join(folder, "test_critic22_f2.py")
                            if not os.path.lexists(link):
                                os.symlink(target, link)
                    """,
                ),
                attacker_test(
                    "ride the link",
                    """
                    def test_ride():
                        pass

                    # Had the controller followed the link, this replaced the user's stats.py.
                    """,
                ),
            ]
        )
    )
    review(
        pytester,
        sandbox,
        f"--critic22={DROPS / 'patch.diff'}",
        f"--critic22-findings={findings}",
    )
    assert checkout_state(repo) == before


def test_write_in_tree_replaces_a_planted_link_and_never_follows_one(tmp_path: Path) -> None:
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir()
    outside.mkdir()
    victim = outside / "stats.py"
    victim.write_text("the user's source\n")

    assert write_in_tree(tree, "tests/test_critic22_f1.py", "def test(): pass\n")
    assert (tree / "tests" / "test_critic22_f1.py").read_text() == "def test(): pass\n"

    (tree / "tests" / "test_critic22_f2.py").symlink_to(victim)  # the file itself
    assert write_in_tree(tree, "tests/test_critic22_f2.py", "new\n")
    assert not (tree / "tests" / "test_critic22_f2.py").is_symlink()
    assert victim.read_text() == "the user's source\n"

    (tree / "linked").symlink_to(outside, target_is_directory=True)  # a folder on the way
    with pytest.raises(TreeError, match="not a folder of the tree"):
        write_in_tree(tree, "linked/test_critic22_f3.py", "new\n")
    assert sorted(p.name for p in outside.iterdir()) == ["stats.py"]

    (tree / "dangling.py").symlink_to(outside / "created-outside.py")  # a patch's link
    assert not write_in_tree(tree, "dangling.py", "copied\n", replace=False)
    assert not (outside / "created-outside.py").exists()

    for bad in ("../escape.py", "/abs.py", "a/../../b.py", ""):
        with pytest.raises(TreeError, match="not a path inside the tree"):
            write_in_tree(tree, bad, "x")


def test_files_copied_into_a_new_tree_never_go_through_the_patchs_links(tmp_path: Path) -> None:
    """ini critic22_copy copies the user's untracked files into each new tree, outside every
    sandbox, after the patch was applied: a patch that adds ``_version.py -> /anywhere``
    (dangling, so it does not "exist") must not get the copy written there."""
    source, tree, outside = tmp_path / "checkout", tmp_path / "tree", tmp_path / "outside"
    for folder in (source / "pkg", tree / "pkg", outside):
        folder.mkdir(parents=True)
    (source / "pkg" / "_version.py").write_text("version = '1.0'\n")
    (source / "pkg" / "_other.py").write_text("x = 1\n")
    (tree / "pkg" / "_version.py").symlink_to(outside / "planted.py")
    TreeSetup(copy=("pkg/_*.py",)).prepare(source, tree, "patched")
    assert not (outside / "planted.py").exists()
    assert (tree / "pkg" / "_other.py").read_text() == "x = 1\n"
