"""What the controller and the sandboxed child agree on, written down once.

Both sides import this module; it imports nothing (not even the rest of the package), so a
child that loads it loads no more of us. The fork-server's source is sent to the child as text
(``python -c``) and imports it by name as the rerun plugin and the tracer do.
"""

from __future__ import annotations

__all__ = [
    "ATTEMPTS",
    "CPU_GRACE",
    "EXPIRED",
    "GENERATED_PREFIX",
    "JOB_DIR",
    "JUNIT",
    "NODEID",
    "OUTPUT",
    "expired",
]

#: A fork-server session's files, in the sandbox's private ``/tmp``, emptied between sessions.
JOB_DIR = "/tmp/critic22-job"
JUNIT = JOB_DIR + "/junit.xml"
OUTPUT = JOB_DIR + "/output.txt"

#: The JUnit properties the rerun plugin writes per test case and the controller reads.
ATTEMPTS = "critic22_attempts"
NODEID = "critic22_nodeid"

#: The exit status of a child whose attempt outlived its time (as ``timeout(1)``).
EXPIRED = 124

#: Seconds of CPU between SIGXCPU (the soft limit) and SIGKILL (the hard one).
CPU_GRACE = 5

#: The critic's test module in a tree: ``test_critic22_f1.py``, beside the project's tests.
GENERATED_PREFIX = "test_critic22_"


def expired(code: int, attempts: int, attempt_timeout: float, reported: bool) -> bool:
    """A child ended by its own watchdog: an attempt outlived ``attempt_timeout``. The
    watchdog's exit writes no JUnit report; a test that made pytest exit 124 left one."""
    return attempts > 1 and attempt_timeout > 0 and code == EXPIRED and not reported
