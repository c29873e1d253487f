"""Code elsewhere in the repository that depends on the others."""

from __future__ import annotations

from staticlab.legacy import legacy_total
from staticlab.scaling import scale


def doubled_total(values):
    return scale(legacy_total(values), 2)
