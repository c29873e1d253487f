"""Counts how often the critic's raw text is parsed, in every process of a run (xdist
workers too): each call of ``parse_findings`` appends one line to $CRITIC22_PARSE_LOG."""

from __future__ import annotations

import hashlib
import os
import sys
from typing import Any

from pytest_critic22.critic import finding

_original = finding.parse_findings


def _counted(raw: str, *args: Any, **kwargs: Any) -> Any:
    with open(os.environ["CRITIC22_PARSE_LOG"], "a", encoding="utf-8") as log:
        digest = hashlib.sha256(raw.encode()).hexdigest()[:12]
        log.write(f"{os.getpid()} {os.environ.get('PYTEST_XDIST_WORKER', 'controller')} {digest}\n")
    return _original(raw, *args, **kwargs)


# Every module that already bound the function (the extension surface imports the pipeline,
# and another -p plugin may have loaded it first) and the ones that will.
for module in [finding, *list(sys.modules.values())]:
    if getattr(module, "parse_findings", None) is _original:
        module.parse_findings = _counted  # type: ignore[union-attr]
