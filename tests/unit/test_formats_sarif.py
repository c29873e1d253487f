"""The SARIF 2.1.0 report: valid against the official schema, one result per finding that
reached an outcome, located at its edit, fingerprinted by (edit, claim)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jsonschema
import pytest

from pytest_critic22 import __version__
from pytest_critic22.apps.samples import SAMPLES_DIR, case_dir
from pytest_critic22.checks import REGISTRY
from pytest_critic22.critic.finding import ReviewFinding, parse_findings
from pytest_critic22.kinds import builtin_kinds
from pytest_critic22.model.packet import build_packet
from pytest_critic22.model.patch import parse_patch
from pytest_critic22.model.procedure import Args, Procedure, StaticData, kind_description
from pytest_critic22.model.results import Disposition, Outcome
from pytest_critic22.pipeline.review import (
    Review,
    RoutedFinding,
    RunInfo,
    preservation_id,
    route_findings,
)
from pytest_critic22.report.formats import locations, sarif
from pytest_critic22.verification.procedures import FindingResult
from tests.golden import golden_path
from tests.runs import expected

SCHEMA_PATH = Path(__file__).parents[1] / "data" / "sarif" / "sarif-schema-2.1.0.json"


DROPS = case_dir("textstats", "median-drops-guard")


RUN = RunInfo(run_id="run-one", ledger="/tmp/x/ledger.jsonl", started=1_700_000_000.25, seconds=4)


REJECT = Disposition("reject", ("F1",), "1 verified blocking defect: F1")


@cache
def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return schema


def schema_errors(document: Mapping[str, Any]) -> list[str]:
    """What the official schema says about ``document`` after a trip through JSON text."""
    schema = _schema()
    validator = jsonschema.validators.validator_for(schema)(schema)
    data = json.loads(json.dumps(document))
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(data)]


def build_review(
    patch_text: str,
    findings: Sequence[Mapping[str, Any]] | str,
    *,
    preservation: Mapping[str, tuple[str, ...]] | None = None,
    patch_path: Path = DROPS / "patch.diff",
) -> Review:
    """A review as the pipeline yields it, from a patch and a critic's records."""
    patch = parse_patch(patch_text)
    packet, stripped = build_packet(patch)
    raw = findings if isinstance(findings, str) else json.dumps(list(findings))
    parsed = parse_findings(raw, patch.edit_ids)
    return Review(
        patch_path,
        patch,
        packet,
        stripped,
        "0123456789abcdef",
        findings=parsed,
        wrapped=route_findings(parsed),
        preservation=dict(preservation or {}),
    )


def result(result_id: str, kind: str, reason: str = "", tree: str = "base") -> FindingResult:
    outcome = Outcome(kind, reason or f"{kind} because of reasons")  # type: ignore[arg-type]
    return FindingResult(result_id, outcome, tree, {}, "test")


def drops_review() -> Review:
    """textstats median-drops-guard: F1..F3 blocking (e2, e2, e3), F4 whole-patch advisory,
    F5 downgraded to advisory; one preservation group."""
    return build_review(
        (DROPS / "patch.diff").read_text(),
        (DROPS / "findings.json").read_text(),
        preservation={"tests/test_stats.py": ("tests/test_stats.py::test_mean_empty",)},
    )


def drops_results() -> dict[str, FindingResult]:
    return {
        "F1": result("F1", "verified", "fails on patched (2/2 runs)", "without-e2"),
        "F2": result("F2", "inconclusive", "flaky: failed 1 of 2 runs", "without-e2"),
        "F3": result("F3", "refuted", "the procedure passes on the patched tree", "without-e3"),
        preservation_id("tests/test_stats.py"): result(
            preservation_id("tests/test_stats.py"), "verified", "test_mean_empty regresses"
        ),
    }


#: SARIF 2.1.0 §3.27.9 and §3.27.10.
KINDS = ("notApplicable", "pass", "fail", "review", "open", "informational")


LEVELS = ("none", "note", "warning", "error")


def _prompt_lines() -> set[str]:
    """Every line of text the critic's prompt shows for a kind (its grammar), stripped."""
    lines = set()
    for kind in builtin_kinds():
        lines |= {line.strip() for line in str(kind.grammar).splitlines()}
    return {line for line in lines if len(line) >= 20}  # "run:" is no quotation


def spec_problems(document: Mapping[str, Any]) -> list[str]:
    """What SARIF 2.1.0 and code scanning ask beyond the schema: each result's (kind, level)
    pair per §3.27.10 (a kind other than "fail" has level "none"; an absent kind is "fail"),
    and rule descriptions that are a developer's sentences: no placeholder, no prompt text."""
    problems = []
    (run,) = document["runs"]
    for entry in run["results"]:
        kind, level = entry.get("kind", "fail"), entry.get("level")
        where = f"result {entry['properties']['finding_id']}"
        if kind not in KINDS or (level is not None and level not in LEVELS):
            problems.append(f"{where}: ({kind!r}, {level!r}) is no SARIF kind and level")
        elif kind != "fail" and level not in (None, "none"):
            problems.append(f"{where}: kind {kind!r} with level {level!r} (§3.27.10: none)")
    prompt = _prompt_lines()
    for rule in run["tool"]["driver"]["rules"]:
        for field in ("shortDescription", "fullDescription"):
            text = rule[field]["text"]
            if "{" in text or "}" in text or "\n" in text or not text.endswith("."):
                problems.append(f"rule {rule['id']} {field}: not a sentence: {text!r}")
            if any(line in text for line in prompt):
                problems.append(f"rule {rule['id']} {field}: the critic's prompt: {text!r}")
    return problems


def sample_sources(sample: str) -> locations.Sources:
    """The sample repository's files: the base a review of one of its cases reads."""

    def read(path: str) -> str | None:
        file = SAMPLES_DIR / sample / "repo" / path
        return file.read_text(encoding="utf-8") if file.is_file() else None

    return read


def results_of(document: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["properties"]["finding_id"]: r for r in document["runs"][0]["results"]}


def region(entry: Mapping[str, Any]) -> tuple[str, int, int, int, int]:
    where = entry["locations"][0]["physicalLocation"]
    r = where["region"]
    uri = where["artifactLocation"]["uri"]
    return uri, r["startLine"], r["startColumn"], r["endLine"], r["endColumn"]


def test_the_shipped_schema_is_the_official_sarif_2_1_0_schema() -> None:
    schema = _schema()
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    assert schema["id"] == sarif.SCHEMA_URI
    assert schema["properties"]["version"]["enum"] == ["2.1.0"]
    assert jsonschema.validators.validator_for(schema) is jsonschema.Draft4Validator
    jsonschema.Draft4Validator.check_schema(schema)
    assert (SCHEMA_PATH.parent / "LICENSE").read_text().count("OASIS") >= 3


def test_the_schema_rejects_what_it_must() -> None:
    document = sarif.sarif_document(drops_review(), drops_results(), REJECT, RUN)
    assert schema_errors(document) == []
    document["runs"][0]["results"][0]["level"] = "fatal"
    document["runs"][0]["results"][1]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    assert len(schema_errors(document)) == 2


def test_the_document_names_the_tool_the_run_and_its_rules() -> None:
    document = sarif.sarif_document(drops_review(), drops_results(), REJECT, RUN)
    assert document["$schema"] == sarif.SCHEMA_URI and document["version"] == "2.1.0"
    (run,) = document["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "pytest-critic22"
    assert driver["semanticVersion"] == __version__
    assert driver["informationUri"].startswith("https://")
    ids = [rule["id"] for rule in driver["rules"]]
    assert ids[:5] == ["test", "counterfactual", "static", "trace", "property"]
    for check in [*REGISTRY.names(), "type-errors"]:
        assert f"static/{check}" in ids
    assert ids[-2:] == ["preservation", "advisory"] and len(set(ids)) == len(ids)
    for rule in driver["rules"]:
        for field in ("shortDescription", "fullDescription", "help"):
            assert rule[field]["text"].strip()
        assert rule["defaultConfiguration"]["level"] in ("error", "note")
    assert run["automationDetails"] == {"id": "critic22/run-one"}
    assert run["invocations"][0]["executionSuccessful"] is True
    assert run["invocations"][0]["startTimeUtc"] == "2023-11-14T22:13:20.250Z"
    assert run["properties"]["verdict"] == "reject"
    for entry in run["results"]:
        assert driver["rules"][entry["ruleIndex"]]["id"] == entry["ruleId"]


def test_an_incomplete_review_did_not_execute_successfully_and_says_why() -> None:
    incomplete = Disposition("incomplete", (), "could not look", ("the tree cannot import x",))
    document = sarif.sarif_document(drops_review(), {}, incomplete, RUN)
    invocation = document["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    notes = [n["message"]["text"] for n in invocation["toolExecutionNotifications"]]
    assert notes == ["the review could not look: the tree cannot import x"]
    assert schema_errors(document) == []


def test_levels_follow_the_outcomes_and_refuted_or_unrun_findings_are_no_results() -> None:
    document = sarif.sarif_document(drops_review(), drops_results(), REJECT, RUN)
    found = results_of(document)
    assert {fid: r["level"] for fid, r in found.items()} == {
        "F1": "error",  # verified blocking
        "F2": "warning",  # inconclusive blocking
        "F4": "note",  # advisory
        "F5": "note",  # downgraded to advisory: its falsification is not executable
        "preserve[tests/test_stats.py]": "error",  # a verified regression
    }
    assert "F3" not in found  # refuted
    assert {r["kind"] for r in found.values()} == {"fail"}  # §3.27.10: else level "none"
    assert spec_problems(document) == []
    unrun = sarif.sarif_document(drops_review(), {}, REJECT, RUN)
    assert set(results_of(unrun)) == {"F4", "F5"}  # blocking findings that never ran: none


def test_a_result_says_claim_outcome_and_the_decisive_reason() -> None:
    found = results_of(sarif.sarif_document(drops_review(), drops_results(), REJECT, RUN))
    assert found["F1"]["message"]["text"] == (
        "mean() no longer raises ValueError on empty input; it returns 0.0. "
        "(F1 verified: fails on patched (2/2 runs))"
    )
    assert found["F1"]["ruleId"] == "test" and found["F2"]["ruleId"] == "counterfactual"
    assert found["F4"]["ruleId"] == "advisory"
    assert found["F5"]["message"]["text"].startswith("median() may be slow on large input. (F5")
    assert "never run: falsification does not start with test:" in found["F5"]["message"]["text"]
    assert found["F1"]["properties"] == {
        "finding_id": "F1",
        "procedure_kind": "test",
        "outcome": "verified",
        "trees": {"patched": "patched", "counterfactual": "without-e2"},
        "run_id": "run-one",
    }
    assert found["F4"]["properties"]["trees"] == {}


@pytest.mark.parametrize(
    "claim",
    [
        "<script>alert(1)</script> breaks mean()",
        'two lines\nof claim\r\nwith CRLF and a "quote" and a \\ backslash',
        "unicode: ünïcødé 🐍 and a NUL-free tab\tcharacter",
    ],
    ids=["script", "newlines", "unicode"],
)
def test_untrusted_text_in_a_claim_survives_as_data(claim: str) -> None:
    review = drops_review()
    wrapped = replace(review.wrapped[0], finding=replace(review.wrapped[0].finding, claim=claim))
    review = replace(review, wrapped=(wrapped, *review.wrapped[1:]))
    document = sarif.sarif_document(review, drops_results(), REJECT, RUN)
    assert schema_errors(document) == []
    text = json.loads(json.dumps(document))["runs"][0]["results"][0]["message"]["text"]
    assert text.startswith(claim + " (F1 verified: ")


BASE = "".join(f"line {n}\n" for n in range(1, 21))


def _patch(*hunks: str, path: str = "pkg/mod.py") -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n" + "".join(hunks)


def _locations(patch_text: str) -> dict[str, tuple[str, int, int, int, int]]:
    patch = parse_patch(patch_text)
    out = {}
    for edit in patch.edits:
        where = sarif.locate(patch, edit.edit_id)
        out[edit.edit_id] = (
            where.path,
            where.start_line,
            where.start_column,
            where.end_line,
            where.end_column,
        )
    return out


def test_a_region_spans_the_added_lines_in_the_patched_file() -> None:
    text = _patch(
        "@@ -3,3 +3,4 @@\n line 3\n-line 4\n+new four\n+new 🐍\n line 5\n",
        "@@ -10,2 +11,3 @@\n line 10\n+x\n line 11\n",
    )
    patch = parse_patch(text)
    assert [e.added_lines for e in patch.edits] == [(4, 5), (12,)]
    # columns in UTF-16 code units: the snake is two of them
    assert _locations(text) == {
        "e1": ("pkg/mod.py", 4, 1, 5, len("new ") + 2 + 1),
        "e2": ("pkg/mod.py", 12, 1, 12, 2),
    }


def test_a_pure_deletion_points_at_the_line_where_it_was_deleted() -> None:
    middle = _patch("@@ -4,4 +4,2 @@\n line 4\n-line 5\n-line 6\n line 7\n")
    at_end = _patch("@@ -18,3 +18,1 @@\n line 18\n-line 19\n-line 20\n")
    at_start = _patch("@@ -1,3 +1,1 @@\n-line 1\n-line 2\n line 3\n")
    everything = (
        "diff --git a/pkg/gone.py b/pkg/gone.py\ndeleted file mode 100644\n"
        "--- a/pkg/gone.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n"
    )
    assert _locations(middle)["e1"] == ("pkg/mod.py", 5, 1, 5, len("line 7") + 1)
    assert _locations(at_end)["e1"] == ("pkg/mod.py", 18, 1, 18, len("line 18") + 1)
    assert _locations(at_start)["e1"] == ("pkg/mod.py", 1, 1, 1, len("line 3") + 1)
    assert _locations(everything)["e1"] == ("pkg/gone.py", 1, 1, 1, 1)


def test_a_whole_patch_finding_is_located_at_the_first_edit() -> None:
    patch = parse_patch((DROPS / "patch.diff").read_text())
    first = sarif.locate(patch, patch.edits[0].edit_id)
    assert sarif.locate(patch, "whole-patch") == first
    assert (first.path, first.start_line, first.end_line) == ("tests/test_stats.py", 19, 22)


def test_a_path_that_is_no_plain_uri_is_percent_encoded() -> None:
    text = _patch("@@ -1,1 +1,1 @@\n-a\n+b\n", path="pkg/my mod#1.py")
    review = build_review(text, [_record("e1", "claim", "static: removed-guard")])
    document = sarif.sarif_document(review, {"F1": result("F1", "verified")}, REJECT, RUN)
    assert region(results_of(document)["F1"])[0] == "pkg/my%20mod%231.py"
    assert results_of(document)["F1"]["ruleId"] == "static/removed-guard"
    assert schema_errors(document) == []


def _record(location: str, claim: str, falsification: str) -> dict[str, Any]:
    return {
        "location": location,
        "claim": claim,
        "severity": "blocking",
        "evidence": "e",
        "falsification": falsification,
        "confidence": 0.5,
    }


def _hash(document: Mapping[str, Any], finding_id: str = "F1") -> str:
    value: str = results_of(document)[finding_id]["partialFingerprints"]["primaryLocationLineHash"]
    return value


def test_the_fingerprint_is_stable_across_runs_and_changes_with_the_claim() -> None:
    review = drops_review()
    one = sarif.sarif_document(review, drops_results(), REJECT, RUN)
    other_place = replace(review, patch_path=Path("/elsewhere/entirely/patch.diff"))
    later = RunInfo(run_id="run-two", ledger="/var/other.jsonl", started=1_800_000_000, seconds=9)
    two = sarif.sarif_document(other_place, drops_results(), REJECT, later)
    assert _hash(one) == _hash(two) and len(_hash(one)) == 64
    assert _hash(one, "F4") == _hash(two, "F4")
    assert _hash(one, "preserve[tests/test_stats.py]") == _hash(
        two, "preserve[tests/test_stats.py]"
    )
    assert _hash(one, "F1") != _hash(one, "F2")  # same edit, another claim
    changed = replace(review.wrapped[0], finding=replace(review.wrapped[0].finding, claim="x"))
    three = sarif.sarif_document(
        replace(review, wrapped=(changed, *review.wrapped[1:])), drops_results(), REJECT, RUN
    )
    assert _hash(three) != _hash(one)


def test_the_fingerprint_follows_the_edit_content_not_its_line_numbers() -> None:
    first = _patch("@@ -3,1 +3,1 @@\n-old\n+new\n")
    moved = _patch("@@ -9,1 +9,1 @@\n-old\n+new\n")
    other = _patch("@@ -3,1 +3,1 @@\n-old\n+newer\n")
    fingerprints = [
        sarif.fingerprint(parse_patch(text), "e1", "the claim") for text in (first, moved, other)
    ]
    assert fingerprints[0] == fingerprints[1] != fingerprints[2]


TESTS = """\
import pytest


def test_one():
    pass


class TestGroup:
    @pytest.mark.parametrize("x", [1, 2])
    def test_two(self, x):
        pass
"""


def _files(files: Mapping[str, str]) -> locations.Sources:
    return lambda path: files.get(path)


def test_the_def_line_follows_classes_and_drops_parameters() -> None:
    assert locations.def_line_of(TESTS, "tests/test_x.py::test_one") == 4
    assert locations.def_line_of(TESTS, "tests/test_x.py::TestGroup::test_two[1]") == 10
    assert locations.def_line_of(TESTS, "tests/test_x.py::test_two") is None
    assert locations.def_line_of(TESTS, "tests/test_x.py::Nope::test_two") is None
    assert locations.def_line_of("def broken(:\n", "t.py::broken") is None


def test_the_failing_test_is_found_in_the_patched_file_not_the_bases() -> None:
    # three lines added above test_one: its def moves from line 4 to line 7 of the patched file
    text = _patch("@@ -1,1 +1,4 @@\n import pytest\n+import os\n+\n+X = os.sep\n", path="t.py")
    patch = parse_patch(text)
    base = _files({"t.py": TESTS})
    where = locations.locate_test(patch, "t.py", ["t.py::nope", "t.py::test_one"], base)
    assert (where.path, where.start_line, where.end_line) == ("t.py", 7, 7)
    assert where.end_column == len("def test_one():") + 1
    # a file the patch leaves alone is read as the base has it
    assert locations.locate_test(patch, "u.py", ["u.py::test_one"], _files({"u.py": TESTS})) == (
        locations.Location("u.py", 4, 4, 1, len("def test_one():") + 1)
    )
    # unreadable, a hunk that does not fit the base, or no such test: the file's first line
    assert locations.locate_test(patch, "t.py", ["t.py::test_one"], _files({})).start_line == 1
    other = _files({"t.py": "import os\n" + TESTS})
    assert locations.locate_test(patch, "t.py", ["t.py::test_one"], other).start_line == 1
    assert locations.locate_test(patch, "t.py", ["t.py::nope"], base).start_line == 1


def test_the_failing_tests_are_read_from_the_results_logs() -> None:
    tests = ("tests/test_x.py::test_a", "tests/test_x.py::C::test_b", "tests/test_x.py::test_c")
    patched = {"tests.test_x::test_a": "failed", "tests.test_x.C::test_b": "error"}
    logs: dict[str, Any] = {"patched": [{"tests": {**patched, "tests.test_x::test_c": "passed"}}]}
    outcome = Outcome("verified", "regression")
    found = locations.failing_tests(tests, FindingResult("preserve[x]", outcome, "base", logs))
    assert found == ["tests/test_x.py::test_a", "tests/test_x.py::C::test_b"]
    logs["pre_existing"] = ["tests/test_x.py::test_a"]  # fails on the base too: not the patch's
    found = locations.failing_tests(tests, FindingResult("preserve[x]", outcome, "base", logs))
    assert found == ["tests/test_x.py::C::test_b"]
    unsaid = FindingResult("preserve[x]", outcome, "base", {})
    assert locations.failing_tests(tests, unsaid) == list(tests)


def test_every_rule_is_described_by_its_kind_or_check_never_by_the_prompt() -> None:
    # Issue 43: fullDescription was the critic's grammar, "{checks}" and all.
    document = sarif.sarif_document(drops_review(), drops_results(), REJECT, RUN)
    rules = {rule["id"]: rule for rule in document["runs"][0]["tool"]["driver"]["rules"]}
    for kind in builtin_kinds():
        if kind.name in rules:
            assert rules[kind.name]["shortDescription"]["text"] == kind_description(kind)
            assert rules[kind.name]["fullDescription"]["text"] == kind_description(kind)
    guard = REGISTRY.get("removed-guard")
    assert guard is not None
    assert rules["static/removed-guard"]["shortDescription"]["text"] == (
        guard.description[0].upper() + guard.description[1:] + "."
    )
    assert spec_problems(document) == []


def test_every_built_in_kind_describes_its_findings_in_one_sentence() -> None:
    for kind in builtin_kinds():
        assert "description" in vars(type(kind)), kind.name  # its own, not the default
        text = kind_description(kind)
        assert text.endswith(".") and "{" not in text
        assert text.count(". ") == 0 and len(text) <= 90, kind.name


def test_a_plugins_kind_without_a_description_gets_one() -> None:
    class Mentions:
        name = "mentions"
        grammar = "  mentions:        WORD  the edit mentions WORD\n"

    assert kind_description(Mentions()) == "Findings of the mentions procedure."
    kinds = [*builtin_kinds(), Mentions()]
    document = sarif.sarif_document(drops_review(), drops_results(), REJECT, RUN, kinds=kinds)
    (rule,) = [r for r in document["runs"][0]["tool"]["driver"]["rules"] if r["id"] == "mentions"]
    assert rule["fullDescription"]["text"] == "Findings of the mentions procedure."
    assert spec_problems(document) == []


def test_a_plugins_kind_and_check_seen_in_the_review_get_rules() -> None:
    text = _patch("@@ -1,1 +1,1 @@\n-a\n+b\n")
    review = build_review(text, [_record("e1", "c1", "static: removed-guard")])
    plugin_kind = RoutedFinding(
        "F2",
        ReviewFinding("e1", "c2", "blocking", "e", "mentions: b", 0.5),
        Procedure("mentions", Args(("b",))),
    )
    plugin_check = RoutedFinding(
        "F3",
        ReviewFinding("e1", "c3", "blocking", "e", "static: todo-added", 0.5),
        Procedure("static", StaticData("todo-added")),
    )
    review = replace(review, wrapped=(*review.wrapped, plugin_kind, plugin_check))
    results = {f"F{n}": result(f"F{n}", "verified") for n in (1, 2, 3)}
    document = sarif.sarif_document(review, results, REJECT, RUN)
    ids = [rule["id"] for rule in document["runs"][0]["tool"]["driver"]["rules"]]
    assert "mentions" in ids and "static/todo-added" in ids
    described = {
        rule["id"]: rule["shortDescription"]["text"]
        for rule in document["runs"][0]["tool"]["driver"]["rules"]
    }
    assert described["mentions"] == "Findings of the mentions procedure."
    assert described["static/todo-added"] == "Findings of the static check todo-added."
    assert spec_problems(document) == []
    assert {f: r["ruleId"] for f, r in results_of(document).items()} == {
        "F1": "static/removed-guard",
        "F2": "mentions",
        "F3": "static/todo-added",
    }
    assert schema_errors(document) == []


def test_the_hook_writes_the_file_only_when_asked(tmp_path: Path) -> None:
    def config(value: str | None) -> Any:
        return SimpleNamespace(
            getoption=lambda dest: value if dest == "critic22_sarif" else None,
            invocation_params=SimpleNamespace(dir=tmp_path),
            pluginmanager=SimpleNamespace(get_plugin=lambda name: None),
        )

    args = {"review": drops_review(), "results": drops_results(), "disposition": REJECT}
    sarif.pytest_critic22_review_finished(**args, run=RUN, config=config(None))
    assert list(tmp_path.iterdir()) == []
    sarif.pytest_critic22_review_finished(**args, run=RUN, config=config("out/review.sarif"))
    written = json.loads((tmp_path / "out" / "review.sarif").read_text())
    assert schema_errors(written) == [] and len(written["runs"][0]["results"]) == 5


SAMPLE_CASES = sorted(
    (p.parent.parent.parent.name, p.parent.name)
    for p in SAMPLES_DIR.glob("*/cases/*/expected.json")
)


def _recorded(sample: str, case: str) -> tuple[Review, dict[str, FindingResult], Disposition]:
    """The review of a sample case rebuilt in process: its patch and critic output parsed as
    the plugin does, the outcomes its expected.json records (with the reasons and trees of
    tests/data/reports where there is a golden report)."""
    folder = case_dir(sample, case)
    want = expected(sample, case)
    golden: dict[str, Any] = {}
    if golden_path(sample, case).exists():
        golden = json.loads(golden_path(sample, case).read_text())
    findings = (
        (folder / "findings.json").read_text() if (folder / "findings.json").exists() else "[]"
    )
    groups = {p["group"]: tuple(p["tests"]) for p in golden.get("preservation", [])}
    review = build_review(
        (folder / "patch.diff").read_text(),
        findings,
        preservation={g: groups.get(g, (g,)) for g in want["preservation"]},
        patch_path=folder / "patch.diff",
    )
    assert [w.finding_id for w in review.wrapped] == list(want["findings"])
    recorded = {f["id"]: f for f in golden.get("findings", [])}
    wrapped = []
    results: dict[str, FindingResult] = {}
    for w in review.wrapped:
        status = want["findings"][w.finding_id]
        if status == "advisory":  # downgraded by the run's validation, which needs trees
            w = replace(w, finding=replace(w.finding, severity="advisory"))
        else:
            got = recorded.get(w.finding_id, {})
            reason = got.get("outcome", {}).get("reason", f"recorded: {status}")
            tree = got.get("counterfactual") or f"without-{w.finding.location}"
            results[w.finding_id] = result(w.finding_id, status, reason, tree)
        wrapped.append(w)
    for group, status in want["preservation"].items():
        results[preservation_id(group)] = result(preservation_id(group), status)
    verified = tuple(i for i, r in results.items() if r.outcome.kind == "verified")
    disposition = Disposition(want["verdict"], verified, f"recorded verdict {want['verdict']}")
    return replace(review, wrapped=tuple(wrapped)), results, disposition


@pytest.mark.parametrize(("sample", "case"), SAMPLE_CASES, ids=[c for _, c in SAMPLE_CASES])
def test_the_sarif_of_every_recorded_sample_case_validates(sample: str, case: str) -> None:
    review, results, disposition = _recorded(sample, case)
    document = sarif.sarif_document(
        review, results, disposition, RUN, sources=sample_sources(sample)
    )
    assert schema_errors(document) == []
    assert spec_problems(document) == []
    want = expected(sample, case)
    reported = {
        **want["findings"],
        **{preservation_id(g): s for g, s in want["preservation"].items()},
    }
    assert set(results_of(document)) == {
        fid
        for fid, status in reported.items()
        if status in ("verified", "inconclusive", "advisory")
    }
    for entry in document["runs"][0]["results"]:
        uri, start, _, end, _ = region(entry)
        assert 1 <= start <= end
        assert uri in {f.path for f in review.patch.files} | set(review.preservation)


def test_every_sample_case_with_expectations_is_covered() -> None:
    assert len(SAMPLE_CASES) >= 12
    assert ("staticlab", "catalog") in SAMPLE_CASES


def check_sarif(document: Mapping[str, Any], want: Mapping[str, Any]) -> None:
    """A bundled sample run's SARIF: valid, and one result per finding or preservation group
    with a reportable outcome (every sample case's run checks it: tests/test_e2e_samples.py)."""
    assert schema_errors(document) == []
    assert spec_problems(document) == []
    statuses = {**want["findings"]}
    statuses.update({preservation_id(g): s for g, s in want["preservation"].items()})
    assert {fid: r["properties"]["outcome"] for fid, r in results_of(document).items()} == {
        fid: s for fid, s in statuses.items() if s in ("verified", "inconclusive", "advisory")
    }
    assert document["runs"][0]["automationDetails"]["id"].startswith("critic22/")
