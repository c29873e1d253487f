"""Running pytest inside a tree, in a subprocess we do not trust.

The child runs in its own process group (a timeout or Ctrl-C kills the whole group),
under CPU-time, address-space and process-count limits, with an environment from which
everything that looks like a secret has been removed. Results come from a JUnit XML
report, never from scraped terminal text.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from pytest_critic22.verify import RunResult

__all__ = [
    "RunResult",
    "clean_env",
    "cpu_slot",
    "detect_pythonpath",
    "is_secret_name",
    "run_pytest",
    "spawn_python",
]

_SECRET_WORDS = re.compile(
    r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|SIGNATURE|CERT", re.I
)
_PROVIDER_PREFIXES = (
    "OPENAI",
    "ANTHROPIC",
    "AZURE",
    "AWS",
    "GOOGLE",
    "GCP",
    "GEMINI",
    "VERTEX",
    "COHERE",
    "MISTRAL",
    "GROQ",
    "HF_",
    "HUGGINGFACE",
    "LITELLM",
    "DEEPSEEK",
    "TOGETHER",
    "OPENROUTER",
    "REPLICATE",
    "PERPLEXITY",
    "FIREWORKS",
    "XAI",
    "OLLAMA",
    "BEDROCK",
    "GITHUB",
    "GH_",
    "GITLAB",
    "CRITIC22_MODEL",
    "NPM_",
    "PYPI",
    "TWINE",
    "DOCKER",
    "SSH_",
    "GPG_",
    "CI_JOB",
)
_PYTEST_VARS = re.compile(r"^(PYTEST_|PYTEST$|COV_CORE_|COVERAGE_|PYTHONPATH$|PYTHONSTARTUP$)")

# The launcher sets limits, then becomes pytest: limits without preexec_fn (thread-safe).
_LAUNCHER = """\
import os, resource, sys
def _set(limit, value):
    try:
        soft, hard = resource.getrlimit(limit)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(limit, (value, hard))
    except (ValueError, OSError):
        pass
cpu, mem, nproc = (int(x) for x in sys.argv[1:4])
_set(resource.RLIMIT_CPU, cpu)
if mem:
    _set(resource.RLIMIT_AS, mem)
if nproc:
    _set(resource.RLIMIT_NPROC, nproc)
os.execv(sys.executable, [sys.executable, *sys.argv[4:]])
"""


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return bool(_SECRET_WORDS.search(upper)) or upper.startswith(_PROVIDER_PREFIXES)


def clean_env(base: Mapping[str, str], pythonpath: Sequence[Path]) -> dict[str, str]:
    """The child's environment: no secrets, no pytest/xdist/coverage steering, the tree first."""
    env = {k: v for k, v in base.items() if not is_secret_name(k) and not _PYTEST_VARS.match(k)}
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in pythonpath)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONHASHSEED"] = "0"
    env["PY_COLORS"] = "0"
    env.pop("PYTEST_ADDOPTS", None)
    return env


def detect_pythonpath(tree: Path, override: Sequence[str] = ()) -> list[Path]:
    """Where the tree's code lives: ``src/`` when it has one, and the tree's root."""
    if override:
        return [tree / p for p in override]
    paths = []
    if (tree / "src").is_dir():
        paths.append(tree / "src")
    paths.append(tree)
    return paths


def run_pytest(
    tree: Path,
    args: Sequence[str],
    *,
    timeout: float,
    pythonpath: Sequence[Path],
    memory_bytes: int = 4 << 30,
    max_processes: int = 256,
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    module: Sequence[str] = (),
    plugins: Sequence[str] = (),
) -> RunResult:
    """Run ``python -m pytest ARGS`` in ``tree``; never hangs past ``timeout``.

    ``module`` wraps pytest (``["coverage", "run", ..., "-m"]`` runs it under coverage);
    ``plugins`` are extra ``-p`` plugins for the child (our tracer); ``extra_env`` is
    added after the environment was cleaned (a hash seed, the tracer's settings).
    """
    with tempfile.TemporaryDirectory(prefix="critic22-run-") as tmp:
        junit = Path(tmp) / "junit.xml"
        python_args = [
            "-m",
            *module,
            "pytest",
            *[arg for name in plugins for arg in ("-p", name)],
            "-p",
            "no:critic22",
            "-p",
            "no:cacheprovider",
            "-q",
            "-rN",
            f"--junitxml={junit}",
            "-o",
            "junit_family=xunit2",
            "-o",
            "junit_logging=no",
            "--color=no",
            *args,
        ]
        code, out, seconds = spawn_python(
            tree,
            python_args,
            timeout=timeout,
            pythonpath=pythonpath,
            memory_bytes=memory_bytes,
            max_processes=max_processes,
            env=env,
            extra_env=extra_env,
        )
        if code is None:
            return RunResult("error", f"timed out after {timeout:g}s", None, seconds, output=out)
        return _interpret(code, junit, out, seconds)


def spawn_python(
    tree: Path,
    python_args: Sequence[str],
    *,
    timeout: float,
    pythonpath: Sequence[Path],
    memory_bytes: int = 4 << 30,
    max_processes: int = 256,
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> tuple[int | None, str, float]:
    """``python ARGS`` in ``tree``, sandboxed: (exit code or None on timeout, output tail, s)."""
    command = [
        sys.executable,
        "-c",
        _LAUNCHER,
        str(int(timeout) + 5),
        str(memory_bytes),
        str(max_processes),
        *python_args,
    ]
    child_env = clean_env(os.environ if env is None else env, pythonpath)
    child_env.update(extra_env or {})
    start = time.monotonic()
    proc = subprocess.Popen(
        command,
        cwd=tree,
        env=child_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return None, tail_text(drain(proc)), time.monotonic() - start
    except BaseException:  # Ctrl-C and friends: leave no child behind
        _kill_group(proc)
        raise
    finally:
        _kill_group(proc)  # grandchildren that outlived the child
    return proc.returncode, tail_text(out), time.monotonic() - start


def _interpret(code: int, junit: Path, output: str, seconds: float) -> RunResult:
    tests = _read_junit(junit)
    if code == 0:
        return RunResult("passed", "", code, seconds, tests, output)
    if code == 1:
        if any(v == "failed" for v in tests.values()):
            return RunResult("failed", "", code, seconds, tests, output)
        return RunResult("error", "errors during collection or setup", code, seconds, tests, output)
    reasons = {
        2: "the run was interrupted (errors during collection?)",
        3: "pytest internal error",
        4: "pytest usage error (unknown test or option?)",
        5: "no tests were collected",
    }
    if code < 0:
        reason = f"killed by signal {-code} (resource limit?)"
    else:
        reason = reasons.get(code, f"pytest exited with {code}")
    return RunResult("error", reason, code, seconds, tests, output)


def _read_junit(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        return {}
    tests: dict[str, str] = {}
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        if case.find("failure") is not None:
            status = "failed"
        elif case.find("error") is not None:
            status = "error"
        elif case.find("skipped") is not None:
            status = "skipped"
        else:
            status = "passed"
        tests[name] = status
    return tests


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        proc.wait(timeout=5)


def drain(proc: subprocess.Popen[bytes]) -> bytes:
    try:
        out, _ = proc.communicate(timeout=5)
    except (subprocess.TimeoutExpired, ValueError):
        return b""
    return out or b""


def tail_text(out: bytes | None, limit: int = 4000) -> str:
    text = (out or b"").decode("utf-8", "replace")
    return text if len(text) <= limit else "...\n" + text[-limit:]


@contextlib.contextmanager
def cpu_slot(folder: Path, slots: int) -> Iterator[None]:
    """Hold one of ``slots`` machine-wide slots (file locks), so xdist workers times
    subprocesses never exceed the CPUs."""
    import fcntl

    folder.mkdir(parents=True, exist_ok=True)
    fds = []
    try:
        while True:
            for index in range(max(1, slots)):
                fd = os.open(folder / f"slot-{index}.lock", os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    os.close(fd)
                    continue
                fds.append(fd)
                break
            if fds:
                break
            time.sleep(0.05)
        yield
    finally:
        for fd in fds:
            os.close(fd)
