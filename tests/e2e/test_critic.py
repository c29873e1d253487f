"""The critic in the plugin, end to end: litellm's openai/ provider against a local recording
server, from a real `pytest --critic22` run.

Only what needs the plugin is here (one request per run serial and under xdist, its findings
as items; the critic-off arm; a failure's summary line). The same runs check live progress end
to end (the model call and every step, from the controller and from xdist workers, nothing
under -q) and the generated items' JUnit properties (tests/test_progress.py tests the progress
module itself); the run under xdist is also the bundled sample case run with -n 2 (the others
are tests/test_e2e_samples.py's). The client's retries, cache, failure mapping, packet
cutting and blinding are checked in one process, over the same HTTP, in
tests/test_critic_client.py.

Three runs are `pytest` processes of their own: serial, under xdist, and the failed call
(its whole output, up to the process's exit, is checked for tracebacks). The -q run and the
critic-off arm are the same plugin run by ``pytest.main`` in this process, where litellm is
imported once (:func:`litellm_loaded`) instead of once per process (about 8 CPU-seconds each).
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

import pytest_critic22
from pytest_critic22.apps.samples import case_dir
from pytest_critic22.execution.ledger import read_events
from tests.fake_llm import FakeLLM, fake_llm
from tests.runs import case_args, expected, make_sample, repo_state

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning"),
]

DROPS = case_dir("textstats", "median-drops-guard")
GOOD_RECORD = {
    "location": "e2",
    "claim": "mean() of empty input no longer raises ValueError.",
    "severity": "blocking",
    "evidence": "e2 deletes the guard.",
    "falsification": "test:\nimport pytest\nfrom textstats import mean\n\n"
    "def test_empty():\n    with pytest.raises(ValueError):\n        mean([])\n",
    "confidence": 0.7,
}
KEY = "sk-planted-api-key-0123456789"


@pytest.fixture
def repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # what the plugin sets anyway
    monkeypatch.delenv("CRITIC", raising=False)
    monkeypatch.delenv("CRITIC22_MODEL", raising=False)
    return make_sample(pytester, "textstats")


def review_args(pytester: pytest.Pytester, url: str, *extra: str) -> list[str]:
    return [
        f"--critic22={DROPS / 'patch.diff'}",
        "--critic22-model=openai/critic-test",
        f"--critic22-api-base={url}",
        "--critic22-only",
        "--critic22-reruns=1",
        "--critic22-preservation=off",  # this patch's regression would be caught without a critic
        f"--critic22-report={pytester.path.parent / 'report.json'}",
        *extra,
    ]


def run(pytester: pytest.Pytester, url: str, *extra: str) -> pytest.RunResult:
    """The review as a `pytest` process of its own."""
    return pytester.runpytest_subprocess(*review_args(pytester, url, *extra))


def run_here(pytester: pytest.Pytester, url: str, *extra: str) -> pytest.RunResult:
    """The same review by ``pytest.main`` in this process (needs :func:`litellm_loaded`
    where the model is asked)."""
    return pytester.runpytest_inprocess(*review_args(pytester, url, *extra))


def report_of(pytester: pytest.Pytester) -> dict[str, Any]:
    return json.loads((pytester.path.parent / "report.json").read_text())


SLOW = [("sleep", 1, json.dumps({"findings": [GOOD_RECORD]}))]  # the model answers after 1 s
ANSWER = [("content", json.dumps({"findings": [GOOD_RECORD]}))]  # at once


def junit_path(pytester: pytest.Pytester) -> Path:
    return pytester.path.parent / "junit.xml"  # beside the repository, not in it


def junit_properties(pytester: pytest.Pytester) -> dict[str, dict[str, str]]:
    """testcase name -> its properties (critic22's JSON result left out)."""
    root = ET.parse(junit_path(pytester)).getroot()
    return {
        case.attrib["name"]: {
            p.attrib["name"]: p.attrib["value"]
            for p in case.iter("property")
            if p.attrib["name"] != "critic22"
        }
        for case in root.iter("testcase")
    }


def check_one_request_and_its_findings(
    pytester: pytest.Pytester,
    result: pytest.RunResult,
    server: FakeLLM,
    repo: Path,
    statuses: dict[str, str],
) -> None:
    """The wiring: exactly one request, its findings reached their outcomes (items of the
    run), the packet on the wire carries the gathered evidence, and it is the packet the
    ledger recorded."""
    assert len(server.bodies) == 1
    result.stdout.fnmatch_lines(
        ["critic: openai/critic-test (1 call(s), 120 tokens, prompt critic-v3)"]
    )
    document = report_of(pytester)
    assert document["critic"]["calls"] == 1 and document["critic"]["source"] == "model"
    assert document["disposition"]["verdict"] == "reject"
    assert {f["id"]: f["outcome"]["status"] for f in document["findings"]} == statuses
    user = json.loads(server.bodies[0])["messages"][1]["content"]
    text = user.split("Review packet (JSON):\n", 1)[1].split("\n\nValid locations:", 1)[0]
    sources = {t["symbol"] for t in json.loads(text)["impact_evidence"]["touched_source"]}
    assert {"textstats.stats.mean", "textstats.stats.median"} <= sources
    events = read_events(repo / ".critic22" / "ledger.jsonl")
    (impact,) = [e["payload"] for e in events if e["event"] == "impact"]
    assert impact["packet_digest"] == "sha256:" + hashlib.sha256(text.encode()).hexdigest()


F1_PROPERTIES = {
    "critic22_finding": "F1",
    "critic22_location": "e2",
    "critic22_outcome": "verified",
}

# One run serves the critic's wiring and live progress (tests/test_progress.py tests the
# progress module itself): a slow loopback model, serially and under xdist, and -q.


def test_a_serial_run_asks_once_shows_every_step_and_its_finding_becomes_an_item(
    pytester: pytest.Pytester, repo: Path, subtests: pytest.Subtests
) -> None:
    with fake_llm(SLOW) as server:
        result = run(pytester, server.url, f"--junitxml={junit_path(pytester)}")
    result.assert_outcomes(failed=1)
    with subtests.test("one request per run; its finding is an item"):
        check_one_request_and_its_findings(pytester, result, server, repo, {"F1": "verified"})
    with subtests.test("progress: the model call and every step, as plain lines"):
        out = result.stdout.str()
        assert "\r" not in out  # not a terminal: plain lines
        assert "critic22: asking openai/critic-test …" in result.outlines
        answered = r"^critic22: asking openai/critic-test … answered after [1-9]\d* s$"
        assert re.search(answered, out, re.M)
        result.stdout.fnmatch_lines(
            [
                "critic22: F1 [[]e2[]] test: patched run 1/1 …",
                "critic22: F1 [[]e2[]] test: counterfactual (without-e2) …",
                "patch.diff F*",  # the outcome on a line of its own, after its steps
            ]
        )
        assert junit_properties(pytester)["F1[e2]"] == F1_PROPERTIES


def test_under_xdist_the_controller_asks_once_and_shows_what_the_workers_do(
    pytester: pytest.Pytester, repo: Path, subtests: pytest.Subtests
) -> None:
    """Under xdist the review is built on the controller and its items run on workers. That
    wiring is the same for every bundled sample case, so one case runs with -n 2 (every case
    runs serially in tests/test_e2e_samples.py): median-drops-guard, its recorded critic's
    answer given by the loopback model: a verified preservation regression, verified, refuted
    and advisory findings, a rejected and a downgraded record."""
    want = expected("textstats", "median-drops-guard")
    records = json.loads((DROPS / "findings.json").read_text())
    before = repo_state(repo)
    with fake_llm([("content", json.dumps({"findings": records}))]) as server:
        result = pytester.runpytest_subprocess(
            *[a for a in case_args("textstats", "median-drops-guard") if "findings" not in a],
            "--critic22-model=openai/critic-test",
            f"--critic22-api-base={server.url}",
            "--critic22-reruns=1",
            "-o",
            "critic22_retries=0",  # as recorded: a rejected record is not asked again
            f"--critic22-report={pytester.path.parent / 'report.json'}",
            f"--junitxml={junit_path(pytester)}",
            "-n",
            "2",
        )
    with subtests.test("the case's expected outcomes, its items run on the workers"):
        result.assert_outcomes(**want["outcomes"])  # the project's own tests and the items
        assert result.ret == want["exit"]
        document = report_of(pytester)
        assert {p["group"]: p["outcome"] for p in document["preservation"]} == want["preservation"]
        assert document["counts"]["rejected"] == want["rejected"]
        assert document["counts"]["downgraded"] == want["downgraded"]
        result.stdout.fnmatch_lines([f"verdict: {want['verdict'].upper()} *"])
        assert repo_state(repo) == before
    with subtests.test("one request per run, on the controller; its findings are items"):
        check_one_request_and_its_findings(pytester, result, server, repo, want["findings"])
    with subtests.test("progress: the controller shows what the workers do"):
        asked = r"^critic22: asking openai/critic-test … answered after \d+ s$"
        assert re.search(asked, result.stdout.str(), re.M)
        result.stdout.re_match_lines_random(
            [
                r"critic22: \[gw\d\] F1 \[e2\] test: patched run 1/1 …$",
                r"critic22: \[gw\d\] F1 \[e2\] test: counterfactual \(without-e2\) …$",
                r"critic22: \[gw\d\] preserve\[tests/test_stats.py\]: patched run"
                r" \(\d+ test\(s\)\) …$",
            ]
        )
        properties = junit_properties(pytester)
        assert properties["F1[e2]"] == F1_PROPERTIES
        assert properties["preserve[tests/test_stats.py]"] == {
            "critic22_finding": "preserve[tests/test_stats.py]",
            "critic22_location": "tests/test_stats.py",
            "critic22_outcome": "verified",
        }


def test_quiet_keeps_progress_all_quiet(
    litellm_loaded: None, pytester: pytest.Pytester, repo: Path
) -> None:
    """-q: neither the model call nor any step of the item says a word (a display would
    have said "asking" as the call began, and each step of the item as it began)."""
    with fake_llm(ANSWER) as server:
        result = run_here(pytester, server.url, "-q")
        assert len(server.bodies) == 1
    result.assert_outcomes(failed=1)
    said = [line for line in result.outlines if line.startswith("critic22: ")]
    assert said == ["critic22: 1 of the collected items generated from patch.diff"]  # no more
    assert "asking" not in result.stdout.str() and "patched run" not in result.stdout.str()


FAILED_CALL = ("status", 500, {"error": {"message": "boom"}})


def test_a_failed_call_is_an_empty_l_column_and_the_summary_says_why(
    pytester: pytest.Pytester, repo: Path
) -> None:
    """The plugin's side of a failure (each kind of failure and its cause are checked in one
    process in tests/test_critic_client.py): no findings, the run proceeds, the summary line
    warns with the cause, and the report and the ledger record it without the key."""
    with fake_llm([FAILED_CALL]) as server:
        result = run(pytester, server.url, "-o", "critic22_retries=0")
        assert len(server.bodies) == 1
    assert result.ret == pytest.ExitCode.OK  # no findings, review-only: proceed
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(
        ["critic: WARNING openai/critic-test gave no usable answer — *HTTP 500*"]
    )
    document = report_of(pytester)
    assert document["critic"]["absent"] is True and "HTTP 500" in document["critic"]["reason"]
    assert document["findings"] == [] and document["disposition"]["verdict"] == "proceed"
    events = read_events(repo / ".critic22" / "ledger.jsonl")
    (critic,) = [e["payload"] for e in events if e["event"] == "critic"]
    assert critic["absent"] is True
    assert KEY not in (repo / ".critic22" / "ledger.jsonl").read_text()


def test_the_critic_off_arm_sends_nothing(
    pytester: pytest.Pytester, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CRITIC=off in the run's environment, with a model configured: no request at all
    (--critic22-engage=never is run end to end in tests/test_impact.py)."""
    monkeypatch.setenv("CRITIC", "off")
    with fake_llm([("content", json.dumps([GOOD_RECORD]))]) as server:
        result = run_here(pytester, server.url)
        assert server.bodies == []
    result.stdout.fnmatch_lines(["critic: not engaged — CRITIC=off in the environment"])
    result.assert_outcomes()
    assert report_of(pytester)["critic"]["engaged"] is False


def test_engage_always_without_a_model_is_a_usage_error(
    pytester: pytest.Pytester, repo: Path
) -> None:
    result = pytester.runpytest(f"--critic22={DROPS / 'patch.diff'}", "--critic22-engage=always")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --critic22-engage=always needs a critic*"])


def test_only_critic_py_imports_the_model_client() -> None:
    package = Path(pytest_critic22.__file__).parent
    importers = set()
    for path in package.rglob("*.py"):
        if "sample_repos" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(n.split(".")[0] in ("litellm", "openai", "anthropic") for n in names):
                importers.add(path.relative_to(package).as_posix())
    assert importers == {"critic/critic.py"}


def test_the_critic_has_no_accept_or_reject_action() -> None:
    from pytest_critic22.critic import critic

    public = [name for name in dir(critic) if not name.startswith("_")]
    for word in ("accept", "reject", "approve", "verdict", "veto"):
        assert not [name for name in public if word in name.lower()]
    assert set(critic.CriticRun.__dataclass_fields__) == {
        "raw",
        "parsed",
        "attempts",
        "failure",
        "cached",
        "prompt_version",
    }
