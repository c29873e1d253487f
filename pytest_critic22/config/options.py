"""The plugin's options and ini values, the validators of their numbers, and the deprecations.

Imported on every pytest run (``plugin.py`` calls :func:`add_options` from
``pytest_addoption``), so it stays light: argparse, math, dataclasses and pytest, nothing
of the review.

Rules the options follow:

- A number option has a validator that names what it expects (``as_seconds``, ``as_count``,
  ``as_temperature``, ...): ``expected a temperature (a number from 0 to 2), got '3'``.
- ``--critic22-spec``, ``--critic22-root-cause`` and ``--critic22-obligations`` take
  ``TEXT|@FILE``: ``@FILE`` is a file, always; any other value is the text itself, always.
  The options that are never text (``--critic22-request``, ``--critic22-findings``,
  ``--critic22-report``, ``--critic22-ledger``) take a file path as it is.
- The critic model's tuning is ini values (``critic22_temperature``,
  ``critic22_max_tokens``, ``critic22_retries``), read by :func:`critic_tuning`.
- ``--critic22-procedure-timeout`` limits one test command in a tree;
  ``--critic22-critic-timeout`` is the critic model's overall deadline.

Deprecated for one release: ``--critic22-timeout`` (now ``--critic22-procedure-timeout``,
same destination ``critic22_timeout``), and the flags ``--critic22-temperature``,
``--critic22-max-tokens`` and ``--critic22-retries`` (now ini values; when given they still
win over the ini value). Using one issues a ``PytestDeprecationWarning``
(:func:`warn_deprecated`, from the plugin's ``pytest_configure``).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

__all__ = [
    "DEFAULT_IMPACT_BUDGET",
    "DEFAULT_RETRIES",
    "DEFAULT_TEMPERATURE",
    "MAX_DEFAULTS",
    "UNTRUSTED_TREE",
    "CriticTuning",
    "Deprecated",
    "as_characters",
    "as_count",
    "as_retries",
    "as_seconds",
    "as_temperature",
    "as_tokens",
    "check_ini",
    "critic_tuning",
    "deprecated_flags_used",
    "warn_deprecated",
]

#: The ini limits of the blast radius a critic may be declined for: (name, default).
MAX_DEFAULTS: tuple[tuple[str, int], ...] = (
    ("edits", 3),
    ("files", 2),
    ("symbols", 4),
    ("callers", 12),
    ("modules", 3),
)

DEFAULT_TEMPERATURE = 0.2
DEFAULT_RETRIES = 2
# How long the base's suite may run under coverage.py for --critic22-preservation=auto.
DEFAULT_IMPACT_BUDGET = 120.0

#: Why this run's controller does not trust its working tree (set by the plugin's
#: ``pytest_load_initial_conftests`` under ``--critic22-only``: no conftest.py of it was
#: imported), e.g. "already has the patch applied"; absent when it does.
UNTRUSTED_TREE = pytest.StashKey[str]()

T = TypeVar("T")

# -- validators (argparse ``type=``): each names what it expects ---------------------------------


def _expected(value: str, what: str) -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(f"expected {what}, got {value!r}")


def _number(value: str, what: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise _expected(value, what) from None
    if not math.isfinite(number):
        raise _expected(value, what)
    return number


def _whole(value: str, what: str, minimum: int) -> int:
    try:
        number = int(value)
    except ValueError:
        raise _expected(value, what) from None
    if number < minimum:
        raise _expected(value, what)
    return number


def as_seconds(value: str) -> float:
    """A duration: a number of seconds greater than 0."""
    what = "a number of seconds (greater than 0)"
    number = _number(value, what)
    if number <= 0:
        raise _expected(value, what)
    return number


def as_temperature(value: str) -> float:
    """A sampling temperature: a number from 0 to 2."""
    what = "a temperature (a number from 0 to 2)"
    number = _number(value, what)
    if not 0 <= number <= 2:
        raise _expected(value, what)
    return number


def as_count(value: str) -> int:
    """A whole number, 1 or more (runs, findings)."""
    return _whole(value, "a whole number (1 or more)", 1)


def as_retries(value: str) -> int:
    """A number of re-asks: a whole number, 0 or more."""
    return _whole(value, "a number of re-asks (a whole number, 0 or more)", 0)


def as_tokens(value: str) -> int:
    """A number of tokens: a whole number, 1 or more."""
    return _whole(value, "a number of tokens (a whole number, 1 or more)", 1)


def as_characters(value: str) -> int:
    """A number of characters: a whole number, 1 or more."""
    return _whole(value, "a number of characters (a whole number, 1 or more)", 1)


# -- deprecated flags ----------------------------------------------------------------------------

#: Where :class:`Deprecated` records the deprecated flags a run used (not an option's dest).
_USED = "critic22_deprecated_flags_used"

#: Each deprecated flag and what to use instead.
_DEPRECATED: dict[str, str] = {
    "--critic22-timeout": "--critic22-procedure-timeout",
    "--critic22-temperature": "the ini value critic22_temperature (-o critic22_temperature=T)",
    "--critic22-max-tokens": "the ini value critic22_max_tokens (-o critic22_max_tokens=N)",
    "--critic22-retries": "the ini value critic22_retries (-o critic22_retries=N)",
}


class Deprecated(argparse.Action):
    """Store the value as ``store`` does, and record that the deprecated flag was used.

    Recorded at parse time, so it sees the flag wherever pytest read it from: the command
    line, ``PYTEST_ADDOPTS`` or the ini ``addopts``.
    """

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        used = tuple(getattr(namespace, _USED, ()))
        if option_string and option_string not in used:
            setattr(namespace, _USED, (*used, option_string))


def deprecated_flags_used(config: pytest.Config) -> tuple[str, ...]:
    """The deprecated flags this run was given, in the order first seen."""
    return tuple(getattr(config.option, _USED, ()))


def _deprecation_message(flag: str) -> str:
    if flag == "--critic22-timeout":
        return "--critic22-timeout is deprecated: use --critic22-procedure-timeout"
    return (
        f"{flag} is deprecated: use {_DEPRECATED[flag]}; for this release the flag still "
        "overrides the ini value"
    )


def warn_deprecated(config: pytest.Config) -> None:
    """One ``PytestDeprecationWarning`` per deprecated flag the run was given.

    Only in the controlling process: xdist workers parse the same arguments and would
    repeat it.
    """
    if hasattr(config, "workerinput"):
        return
    for flag in deprecated_flags_used(config):
        config.issue_config_time_warning(
            pytest.PytestDeprecationWarning(_deprecation_message(flag)), stacklevel=2
        )


# -- the critic model's tuning: ini values, with the deprecated flags as overrides --------------


@dataclass(frozen=True, slots=True)
class CriticTuning:
    """How the critic model is asked (ini ``critic22_temperature``, ``critic22_max_tokens``,
    ``critic22_retries``)."""

    temperature: float
    max_tokens: int | None
    retries: int


def _ini_value(config: pytest.Config, key: str, validate: Callable[[str], T], default: T) -> T:
    """An ini value through its validator; empty is the default; bad is one UsageError line."""
    text = str(config.getini(key) or "").strip()
    if not text:
        return default
    try:
        return validate(text)
    except argparse.ArgumentTypeError as exc:
        shown = "none" if default is None else f"{default}"
        raise pytest.UsageError(f"ini {key}: {exc} (the default is {shown})") from None


def _ini_tuning(config: pytest.Config) -> CriticTuning:
    return CriticTuning(
        temperature=_ini_value(config, "critic22_temperature", as_temperature, DEFAULT_TEMPERATURE),
        max_tokens=_ini_value(config, "critic22_max_tokens", as_tokens, None),
        retries=_ini_value(config, "critic22_retries", as_retries, DEFAULT_RETRIES),
    )


def critic_tuning(config: pytest.Config) -> CriticTuning:
    """The critic's tuning: each deprecated flag when given, else its ini value (validated;
    a bad ini value is a one-line ``pytest.UsageError``)."""
    ini = _ini_tuning(config)
    temperature = config.getoption("critic22_temperature", default=None)
    max_tokens = config.getoption("critic22_max_tokens", default=None)
    retries = config.getoption("critic22_retries", default=None)
    return CriticTuning(
        temperature=ini.temperature if temperature is None else float(temperature),
        max_tokens=ini.max_tokens if max_tokens is None else int(max_tokens),
        retries=ini.retries if retries is None else int(retries),
    )


# -- ini checks ----------------------------------------------------------------------------------


def check_ini(config: pytest.Config) -> dict[str, int]:
    """Check the ini values before anything is built: the ``critic22_max_*`` limits (returned
    as numbers) and the critic's tuning. A bad one is a one-line ``pytest.UsageError``."""
    limits = {
        name: _ini_whole_number(
            f"critic22_max_{name}", config.getini(f"critic22_max_{name}"), default
        )
        for name, default in MAX_DEFAULTS
    }
    _ini_tuning(config)
    impact_budget(config)
    return limits


def impact_budget(config: pytest.Config) -> float:
    """``critic22_impact_budget``: seconds (a bad value is a one-line ``pytest.UsageError``)."""
    return _ini_value(config, "critic22_impact_budget", as_seconds, DEFAULT_IMPACT_BUDGET)


def _ini_whole_number(key: str, value: object, default: int) -> int:
    text = str(value).strip()
    try:
        number = int(text)
    except ValueError:
        raise pytest.UsageError(
            f"ini {key}: {text!r} is not a whole number (the default is {default})"
        ) from None
    if number < 0:
        raise pytest.UsageError(
            f"ini {key}: {text!r} must not be negative (the default is {default})"
        )
    return number
