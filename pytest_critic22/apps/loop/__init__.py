"""The review loop: review -> repair -> re-review until execution acquits.

``critic22 loop PATCH`` (and ``pytest_critic22.loop``, :mod:`.api`) repeats the plugin's
own review of a candidate patch, decides each round's verdict and score from execution
only (:mod:`.verdict`), composes the next candidate from verified repairs
(:mod:`.compose`), and keeps its state in ``.critic22/review-stage/`` (:mod:`.state`,
:mod:`.journal`). Nothing the critic says is read as a verdict or a score.
"""

from __future__ import annotations
