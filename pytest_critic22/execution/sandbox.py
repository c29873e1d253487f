"""The sandbox every child that runs patch or critic code goes through (I/O: probes bwrap).

Two modes. ``bwrap`` runs the child under bubblewrap: the whole filesystem read-only, only
its own tree (and the run's scratch folders) writable, a private tmpfs ``/tmp`` and
``HOME`` (the controller's home, ``/run`` and ``/var/tmp`` are hidden too, except what
Python itself needs: they hold credentials and sockets such as ``docker.sock``, which a
network namespace does not stop), new PID, IPC, UTS, cgroup and network namespaces
(loopback only), its own ``/proc`` (the controller's environment is out of reach), every
capability dropped (a root child could otherwise remount ``/`` read-write), ``/proc/sys``
and ``/proc/sysrq-trigger`` read-only (a root child could otherwise set the host's kernel
settings: file modes are all it takes), ``--new-session`` and ``--die-with-parent``: when
the namespace's first process ends, every descendant ends with it, ``setsid`` ones
included. Where bubblewrap is 0.8 or later, no process inside can make a user namespace
(``--disable-userns``): with one, root's code could mount a cgroup hierarchy and leave a
cgroup behind on the host.
``rlimits`` is the fallback where bubblewrap cannot run: resource limits, a process group,
an allow-listed environment and a parent-death signal, and every report says so.

Both modes keep the resource limits (CPU, address space, processes) and the timeout, and
both build the child's environment from an allow-list.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "FALLBACK_WARNING",
    "MODES",
    "OLD_BWRAP_WARNING",
    "PROBE_PREFIX",
    "RLIMITS_LIMITS",
    "Sandbox",
    "SandboxError",
    "bwrap_argv",
    "checkout_folders",
    "child_env",
    "hidden_folders",
    "probe_bwrap",
    "probe_fork_server",
    "resolve",
]

SandboxMode = Literal["bwrap", "rlimits"]
MODES = ("auto", "bwrap", "rlimits")
FALLBACK_WARNING = "sandbox: rlimits only — install bubblewrap for isolation"
RLIMITS_LIMITS = (
    "sandbox: under rlimits the patch and the critic's tests run with your permissions: they "
    "can read your checkout, write the gate's own trees and other runs' results"
)
OLD_BWRAP_WARNING = (
    "sandbox: bubblewrap before 0.8 cannot forbid user namespaces inside (a root child could "
    "leave a cgroup on the host), and the critic's tests get no fork-server — upgrade it"
)
PROBE_PREFIX = "critic22-probe-"  # the probe's folder; one a killed run left is pruned
CHILD_HOME = "/tmp/critic22-home"  # inside the sandbox's private /tmp
CHILD_TMP = "/tmp"  # the sandbox's private tmpfs
# Hidden behind an empty tmpfs besides /tmp and the controller's home: service sockets
# (/run/docker.sock, /run/postgresql, /run/user/UID/...), secrets (/run/secrets,
# /var/run/secrets/kubernetes.io) and the other shared temp folder.
_HIDDEN = ("/tmp", "/run", "/var/tmp")

# What a child may inherit from the controller; everything else is dropped.
_ALLOWED = frozenset({"PATH", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR", "SYSTEMROOT"})
_ALLOWED_PREFIXES = ("LC_",)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class SandboxError(RuntimeError):
    """The requested sandbox cannot be used here."""


@dataclass(frozen=True, slots=True)
class Sandbox:
    """How children run: the mode, what environment they may see, and why (for reports)."""

    mode: SandboxMode
    pass_env: tuple[str, ...] = ()
    note: str = ""  # a fallback's warning line; empty when the requested mode runs

    @property
    def isolated(self) -> bool:
        return self.mode == "bwrap"


def validate_env_names(names: Iterable[str]) -> tuple[str, ...]:
    """``--critic22-pass-env`` values are variable names, nothing else."""
    out = []
    for name in names:
        for part in str(name).split(","):
            part = part.strip()
            if not part:
                continue
            if not _ENV_NAME.match(part):
                raise SandboxError(
                    f"--critic22-pass-env: {part!r} is not an environment variable name"
                )
            out.append(part)
    return tuple(dict.fromkeys(out))


def resolve(requested: str, pass_env: Sequence[str] = ()) -> Sandbox:
    """``auto`` → bwrap when it works here, else rlimits with a warning; ``bwrap`` → bwrap or
    a SandboxError naming what to install; ``rlimits`` → rlimits, no warning (asked for)."""
    names = validate_env_names(pass_env)
    if requested not in MODES:
        raise SandboxError(f"--critic22-sandbox: {requested!r} is not one of {', '.join(MODES)}")
    if requested == "rlimits":
        return Sandbox("rlimits", names)
    problem = probe_bwrap()
    if problem is None:
        return Sandbox("bwrap", names, note="" if _no_user_namespaces() else OLD_BWRAP_WARNING)
    if requested == "bwrap":
        raise SandboxError(
            f"--critic22-sandbox=bwrap: bubblewrap cannot run here ({problem}); install the "
            "'bubblewrap' package, or choose --critic22-sandbox=rlimits"
        )
    return Sandbox("rlimits", names, note=f"{FALLBACK_WARNING} ({problem})")


@functools.cache
def probe_bwrap() -> str | None:
    """None when bubblewrap can run a Python child with our options; else why not. Once per
    process: a run's controller probes, and tells its workers."""
    exe = shutil.which("bwrap")
    if exe is None:
        return "bwrap is not on PATH"
    return _runs_python(fork_server=False)


def _runs_python(*, fork_server: bool) -> str | None:
    with tempfile.TemporaryDirectory(prefix=PROBE_PREFIX) as tmp:
        argv = bwrap_argv(
            [sys.executable, "-c", "import sys; sys.exit(0)"],
            tree=Path(tmp),
            writable=(),
            fork_server=fork_server,
        )
        try:
            done = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=60,
                env=child_env(os.environ, [], home=CHILD_HOME, tmp=CHILD_TMP),
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bwrap failed to start: {exc}"
    if done.returncode != 0:
        first = (done.stdout.decode("utf-8", "replace").strip().splitlines() or ["no output"])[0]
        return f"bwrap exited {done.returncode}: {first}"
    return None


def child_env(
    base: Mapping[str, str],
    pythonpath: Sequence[Path],
    *,
    home: str,
    tmp: str | None = None,
    pass_env: Sequence[str] = (),
) -> dict[str, str]:
    """The child's environment, from an allow-list: PATH, locale and time zone, what the run
    sets (PYTHONPATH, hash seed, no bytecode, HOME, TMPDIR), and the names the user passes.

    ``tmp`` is the child's own temp folder (the sandbox's private ``/tmp``, or a folder of
    the run's scratch): what the child's tests put in "the temp folder" goes with the run.
    """
    env = {k: v for k, v in base.items() if k in _ALLOWED or k.startswith(_ALLOWED_PREFIXES)}
    for name in pass_env:
        if name in base:
            env[name] = base[name]
    env.setdefault("PATH", os.defpath)
    env["HOME"] = home
    if tmp is not None:
        env["TMPDIR"] = tmp
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in pythonpath)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONNOUSERSITE"] = "1"  # the controller's ~/.local is not the tree's business
    env["PY_COLORS"] = "0"
    return env


def bwrap_argv(
    command: Sequence[str],
    *,
    tree: Path,
    writable: Sequence[Path],
    readable: Sequence[Path] = (),
    fork_server: bool = False,
) -> list[str]:
    """The bubblewrap command line that runs ``command`` in ``tree``.

    ``fork_server``: the command is the namespace's first process, no bubblewrap init beside
    it (that init would hold its standard output where its sessions can open it through
    ``/proc/1/fd``; as PID 1 it reaps orphans itself); the IPC namespace's POSIX message
    queues are listed in ``/dev/mqueue`` (so that it can remove a session's). Every sandbox
    forbids user namespaces where bubblewrap can (a fork-server needs it: otherwise a session
    could move the server into a cgroup of its choosing, for every later session).

    Later mounts win, so the order is: everything read-only, then an empty tmpfs over /tmp,
    /run, /var/tmp and the controller's home, then what Python needs brought back read-only,
    then the writable folders (bubblewrap makes their mount points inside the tmpfs, so a
    tree under a hidden folder is still reachable, and only it).
    """
    exe = shutil.which("bwrap") or "bwrap"
    argv = [exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    # A new procfs is writable where file modes allow, and a root child passes them: kernel
    # settings of the host (core_pattern, sysrq) and of its namespaces must stay read-only.
    for setting in _PROC_READ_ONLY:
        argv += ["--ro-bind-try", setting, setting]
    hidden = _hidden_folders()
    for folder in hidden:
        argv += ["--tmpfs", str(folder)]
    every_checkout = checkout_folders()
    checkouts = [c for c in every_checkout if not any(_within(c, h) for h in hidden)]
    for folder in checkouts:
        argv += ["--tmpfs", str(folder)]
    argv += ["--dir", CHILD_HOME]
    covered = [*hidden, *checkouts]
    for path in _needed_paths(readable):
        if any(_within(path, h) for h in covered) and path not in covered:
            argv += ["--ro-bind", str(path), str(path)]
    argv += _git_metadata(every_checkout)
    for path in (tree, *writable):
        real = Path(os.path.realpath(path))
        argv += ["--bind", str(real), str(real)]
    argv += [
        "--unshare-all",  # user (where possible), ipc, pid, net (loopback only), uts, cgroup
        # A child running as root keeps every capability inside its namespaces otherwise,
        # and CAP_SYS_ADMIN remounts the read-only root read-write: drop them all.
        "--cap-drop",
        "ALL",
        "--die-with-parent",
        "--new-session",
        *_no_user_namespaces(),
        *(_FORK_SERVER if fork_server else []),
        "--chdir",
        str(Path(os.path.realpath(tree))),
        "--",
        *command,
    ]
    return argv


_FORK_SERVER = ["--as-pid-1", "--mqueue", "/dev/mqueue"]
_PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/fs")


@functools.cache
def _no_user_namespaces() -> tuple[str, ...]:
    """``--unshare-user --disable-userns`` where this bubblewrap has it (0.8 and later): no
    process in the sandbox can make a user namespace of its own. With one, code the critic
    wrote could mount a cgroup hierarchy, make a cgroup that outlives the run on the host and
    move processes into it. Older bubblewrap: () (a fork-server is then not used)."""
    exe = shutil.which("bwrap")
    if exe is None:
        return ()
    argv = [exe, "--ro-bind", "/", "/", "--unshare-user", "--disable-userns"]
    try:
        done = subprocess.run(
            [*argv, "--", sys.executable, "-c", ""],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return ("--unshare-user", "--disable-userns") if done.returncode == 0 else ()


def probe_fork_server() -> str | None:
    """None when this bubblewrap may run a fork-server: it can forbid user namespaces
    (``--disable-userns``, 0.8 or later) and runs a Python child with our options; else why
    not. Whether a server then starts is its own first line's to say
    (:mod:`pytest_critic22.execution.forkserver`): no probe of its own is spent on it."""
    if not _no_user_namespaces():
        return "this bubblewrap cannot forbid user namespaces (--disable-userns: 0.8 or later)"
    return probe_bwrap()


def hidden_folders() -> list[Path]:
    """The folders the sandbox covers with an empty, writable tmpfs (see below)."""
    return _hidden_folders()


def _hidden_folders() -> list[Path]:
    """The folders covered by an empty tmpfs, outermost first (a folder inside another
    hidden one is covered already): /tmp, /run, /var/tmp and the controller's home, when
    they are real folders. The trees may live inside one of them (a temp dir in home):
    their binds come later and win."""
    candidates = [Path(p) for p in _HIDDEN]
    home = _controller_home()
    if home is not None:
        candidates.append(home)
    out: list[Path] = []
    for candidate in candidates:
        real = Path(os.path.realpath(candidate))
        if real == Path("/") or not real.is_dir() or real in out:
            continue
        out.append(real)
    out.sort(key=lambda p: len(p.parts))
    return [p for i, p in enumerate(out) if not any(_within(p, q) for q in out[:i])]


def checkout_folders() -> list[Path]:
    """The user's checkout and every other folder the controller imports from that Python
    does not need: the folder pytest runs in and the entries of ``sys.path`` outside the
    interpreter's prefixes and this plugin's package. A child sees none of them (an
    untracked ``.env`` there is the user's, not the tree's): the tree is its own copy."""
    needed = _python_paths()
    out: list[Path] = []
    for raw in [os.getcwd(), *[p for p in sys.path if p]]:
        path = Path(os.path.realpath(raw))
        if not path.is_dir() or path in out or _is_system(path):
            continue
        if any(_within(path, n) for n in needed):
            continue
        out.append(path)
    out.sort(key=lambda p: len(p.parts))
    return [p for i, p in enumerate(out) if not any(_within(p, q) for q in out[:i])]


_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/opt", "/nix", "/dev")


def _is_system(path: Path) -> bool:
    """``/`` and the folders the system runs from, or any folder holding one: never hidden."""
    return any(_within(Path(system), path) for system in _SYSTEM) or path == Path("/")


def _git_metadata(checkouts: Sequence[Path]) -> list[str]:
    """A hidden checkout's ``.git`` brought back read-only (a tree is a worktree of it, and
    ``git describe`` in a tree's setup needs its objects), with its ``config`` masked: that is
    where a CI checkout keeps its token (``http.extraheader``)."""
    argv: list[str] = []
    for folder in checkouts:
        git_dir = folder / ".git"
        if git_dir.is_dir() and not git_dir.is_symlink():
            argv += ["--ro-bind", str(git_dir), str(git_dir)]
            if (git_dir / "config").is_file():
                argv += ["--ro-bind", os.devnull, str(git_dir / "config")]
    return argv


def _python_paths() -> list[Path]:
    """What a child's Python needs: the interpreter's prefixes, the site folders on the
    import path (``site-packages``, ``dist-packages``, wherever a ``.pth`` put them) and this
    plugin's package."""
    candidates = [
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
        os.path.dirname(sys.executable),
        str(Path(__file__).resolve().parent.parent),
        *[p for p in sys.path if p and _SITE.intersection(Path(p).parts)],
    ]
    return [Path(os.path.realpath(raw)) for raw in candidates]


_SITE = frozenset({"site-packages", "dist-packages"})


def _controller_home() -> Path | None:
    raw = os.environ.get("HOME") or os.path.expanduser("~")
    if not raw or raw == "~":
        return None
    home = Path(os.path.realpath(raw))
    if home == Path("/") or not home.is_dir():
        return None
    return home


def _needed_paths(extra: Sequence[Path]) -> list[Path]:
    """The interpreter, its libraries, the import path inside them, this plugin's package
    (the child loads its tracer; an editable install need not be on ``sys.path``), and any
    extra folders. Not the rest of ``sys.path``: that is the user's checkout."""
    python = _python_paths()
    inside = [
        p for p in sys.path if p and any(_within(Path(os.path.realpath(p)), q) for q in python)
    ]
    candidates = [*[str(p) for p in python], *inside, *[str(p) for p in extra]]
    out: list[Path] = []
    for raw in candidates:
        path = Path(os.path.realpath(raw))
        if path.exists() and path not in out:
            out.append(path)
    return out


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents
