"""Fork-servers booted before their runs are known (forkserver.prestart).

The end-to-end tier: whole pytest runs. The rest, and the whole story:
tests/unit/test_forkserver_prestart.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_critic22.apps.samples import SAMPLES_DIR
from pytest_critic22.execution import forkserver as forkrun
from pytest_critic22.execution.sandbox import probe_bwrap
from pytest_critic22.execution.trees import trees_root
from tests.runs import make_sample
from tests.unit.test_forkserver_prestart import _no_server_outlives_the_test  # noqa: F401  (a fixture)

pytestmark = pytest.mark.skipif(probe_bwrap() is not None, reason="needs bubblewrap")


def _processes_in(folders: list[Path]) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cwd = os.readlink(f"/proc/{name}/cwd")
        except OSError:
            continue
        if any(cwd == str(f) or cwd.startswith(f"{f}/") for f in folders):
            found.append(int(name))
    return found


def test_a_review_whose_findings_never_run_a_session_leaves_no_server(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A static finding reads the trees but runs no test: the servers booted for the two trees
    # the review built are never taken, and the run's end kills them.
    repo = make_sample(pytester, "textstats")
    booted: list[bool] = []
    real = forkrun.prestart
    monkeypatch.setattr(forkrun, "prestart", lambda *a, **k: booted.append(real(*a, **k)))
    findings = pytester.path.parent / "static.json"
    record = {
        "location": "e1",
        "claim": "mean() lost its guard.",
        "severity": "blocking",
        "evidence": "the diff of e1",
        "falsification": "static: removed-guard",
        "confidence": 0.5,
    }
    findings.write_text(json.dumps([record]))
    patch = SAMPLES_DIR / "textstats/cases/median-drops-guard"
    result = pytester.runpytest_inprocess(
        f"--critic22={patch / 'patch.diff'}",
        f"--critic22-findings={findings}",
        "--critic22-only",
        "--critic22-preservation=off",
    )
    assert result.ret in (0, 1), result.stdout.str()
    assert booted == [True, True]  # the patched and the base tree
    assert forkrun._PRESTARTED == {}
    assert _processes_in([repo, trees_root(repo)]) == []
