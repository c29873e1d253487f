"""Untrusted text is inert wherever it is shown (DESIGN.md invariant 18).

The end-to-end tier: whole pytest runs. The rest, and the whole story:
tests/unit/test_inert_text.py.
"""

from __future__ import annotations

import json

import pytest

from pytest_critic22.apps.samples import case_dir
from tests.runs import make_sample
from tests.unit.test_formats_sarif import schema_errors
from tests.unit.test_inert_text import HOSTILE, assert_inert_lines

DROPS = case_dir("textstats", "median-drops-guard")


@pytest.mark.e2e
@pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")
def test_a_hostile_review_under_github_actions_prints_its_verdict_and_every_report(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_sample(pytester, "textstats")
    out = repo.parent
    summary = out / "step-summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    falsification = (
        "test:\nimport pytest\nfrom textstats import mean\n\n"
        "def test_mean_of_empty_input_still_raises():\n"
        "    print('::error file=child.py::from the child')\n"
        "    print('\\x1b[31mred\\r##[error]legacy\\n  ::stop-commands::tok')\n"
        "    with pytest.raises(ValueError):\n"
        "        mean([])\n"
    )
    findings = [
        {
            "location": "e2",
            "claim": f"mean([]) no longer raises. {HOSTILE}",
            "severity": "blocking",
            "evidence": "e2 deletes the guard\n::error file=e::evidence \x1b[2J\ud800",
            "falsification": falsification,
            "confidence": 0.9,
        },
        {
            "location": "e3",
            "claim": "::stop-commands::t\n::error file=a::x\r\x1b[31m\ud800",
            "severity": "advisory",
            "evidence": "##[warning]advisory",
            "falsification": "",
            "confidence": 0.1,
        },
    ]
    (out / "hostile.json").write_text(json.dumps(findings), encoding="utf-8")
    result = pytester.runpytest(
        f"--critic22={DROPS / 'patch.diff'}",
        f"--critic22-findings={out / 'hostile.json'}",
        "--critic22-only",
        "--critic22-preservation=off",
        "--critic22-reruns=1",
        f"--critic22-report={out / 'r.json'}",
        f"--critic22-sarif={out / 'r.sarif'}",
        f"--critic22-html={out / 'r.html'}",
        f"--junitxml={out / 'junit.xml'}",
    )
    stdout = "\n".join(result.outlines)
    assert "\x1b" not in stdout and "\r" not in stdout
    assert_inert_lines(result.outlines, annotations_allowed=True)
    annotations = [line for line in result.outlines if line.startswith("::")]
    assert [line.split(" ", 1)[0] for line in annotations] == ["::error", "::notice"]
    assert "verdict: REJECT — 1 verified blocking defect: F1" in result.outlines
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the verdict's exit status
    result.assert_outcomes(failed=1)
    for name in ("r.json", "r.sarif", "r.html", "junit.xml"):
        (out / name).read_bytes().decode("utf-8")  # written, and strict UTF-8
    document = json.loads((out / "r.json").read_text(encoding="utf-8"))
    assert document["disposition"]["verdict"] == "reject"
    assert document["findings"][1]["finding"]["claim"].endswith("\x1b[31m\\ud800")
    assert schema_errors(json.loads((out / "r.sarif").read_text(encoding="utf-8"))) == []
    assert summary.read_text(encoding="utf-8").startswith("## critic22: REJECT\n")
    assert "critic22: the" not in stdout  # no report failed
