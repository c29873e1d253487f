"""Loaded into a child pytest (``-p pytest_critic22.config.inert_options``): the plugin's
options and ini values, registered and never read.

The project's configuration may name them (``addopts = --critic22-reruns=2``, or
``critic22_model`` under ``--strict-config``). The plugin itself is blocked in a child
(``-p no:critic22``), so pytest would stop with a usage error on every tree, and "could not
run" would hide a regression. Known here, they parse, and nothing acts on them.
"""

from __future__ import annotations

import pytest

from pytest_critic22.config.optiontable import add_options


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)
