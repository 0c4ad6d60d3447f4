"""One scratch folder per run in the system's temporary folder, and none left behind.

A run (an ``autotune`` command, a script using the library) gets
``<tmp>/autotune-run-<host>.pidns<N>.boot<ID>-<pid>-<start>/`` the first time it needs scratch
space; its trials, probes, verify runs and exports make their folders inside it
(:func:`scratch_dir`), and the root goes when the run exits normally. A SIGKILLed run cannot
remove it, so the first :func:`run_root` of each run sweeps the roots of this host whose run
is gone: its pid is not alive, or is alive but started at another time (a reused pid). This
host is its name, its PID namespace and the kernel's boot id (see :func:`_host`). The start
time is field 22 of ``/proc/<pid>/stat``; where there is no ``/proc``, a live pid counts as
the owner.

A child process uses its parent's root, passed in :data:`RUN_ROOT_ENV` (see
:func:`run_root_env`) and accepted only when it is named like a root and is a real directory
of this user; a child never sweeps, nor removes the root.

Standard library only: the compile-cache child of the production path imports it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import socket
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

RUN_ROOT_ENV = "AUTOTUNE_RUN_ROOT"
_PREFIX = "autotune-run-"
_NAME = re.compile(r"autotune-run-[A-Za-z0-9._-]+-\d+-\d+")
_OWNER = re.compile(r"(\d+)-(\d+)")
_lock = threading.Lock()
_root: Path | None = None


def run_root() -> Path:
    """This run's scratch root: created (after a sweep) at the first call, or the parent's."""
    global _root
    with _lock:
        if _root is None:
            _root = _adopted() or _create(Path(tempfile.gettempdir()))
        return _root


def run_root_env() -> dict[str, str]:
    """The environment entry that makes a child process use this run's root."""
    return {RUN_ROOT_ENV: str(run_root())}


@contextlib.contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """A new folder in this run's root, deleted with all it holds when the block ends."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=run_root()))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def root_name(pid: int) -> str:
    """The name of the root of the run of process ``pid`` on this host."""
    return f"{_PREFIX}{_host()}-{pid}-{start_time(pid) or 0}"


def sweep(tmp: Path) -> list[Path]:
    """Deletes the roots in ``tmp`` of this host's runs that are gone; returns them.

    Only entries named exactly like a root of this host, owned by this user and real
    directories (a symlink is never followed, nor deleted) are candidates.
    """
    prefix = f"{_PREFIX}{_host()}-"
    swept = []
    with contextlib.suppress(OSError), os.scandir(tmp) as entries:
        for entry in entries:
            owner = _OWNER.fullmatch(entry.name.removeprefix(prefix))
            if not entry.name.startswith(prefix) or owner is None:
                continue
            path = Path(entry.path)
            if _is_ours(path) and start_time(int(owner[1])) != int(owner[2]):
                # rmtree works through file descriptors: it does not follow symlinks inside,
                # and refuses a root swapped for a symlink after the check above.
                shutil.rmtree(path, ignore_errors=True)
                swept.append(path)
    return swept


def process_owner() -> str:
    """This process as a claim's owner names it: ``HOST.pidnsN.bootID:PID:START``, so that
    another process of the same host, boot and PID namespace can tell when it is gone
    (:func:`owner_gone`)."""
    pid = os.getpid()
    return f"{_host()}:{pid}:{start_time(pid) or 0}"


def owner_gone(owner: str) -> bool:
    """Whether the process :func:`process_owner` named ``owner`` is known to be gone: it ran
    on this host, in this PID namespace, and its pid is not alive or started at another time.
    False for any other owner (another machine's, or one named otherwise): nobody knows."""
    host, _, rest = owner.partition(":")
    pid, _, start = rest.partition(":")
    if host != _host() or not pid.isdigit() or not start.isdigit():
        return False
    return start_time(int(pid)) != int(start)


def start_time(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks after boot); None if it does not run (a zombie
    does not); 0 for a live process where there is no ``/proc``."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # pid (comm) state ...: comm may hold ")"
    except OSError:
        if os.path.exists("/proc/self/stat"):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return 0
    return None if fields[0] in ("Z", "X") else int(fields[19])


def _adopted() -> Path | None:
    given = os.environ.get(RUN_ROOT_ENV)
    if not given:
        return None
    path = Path(given)
    if path.is_absolute() and _NAME.fullmatch(path.name) and _is_ours(path):
        return path
    return None


def _create(tmp: Path) -> Path:
    sweep(tmp)
    root = tmp / root_name(os.getpid())
    try:
        os.mkdir(root, 0o700)
    except FileExistsError:
        if not _is_ours(root):
            raise FileExistsError(
                f"The scratch root of this run must be a directory of this user, but {root} "
                "is not (a symlink, a file or another user's); remove it, or set TMPDIR to "
                "a folder of your own."
            ) from None
    atexit.register(_remove, root, os.getpid())
    return root


def _remove(root: Path, owner: int) -> None:
    if os.getpid() == owner:  # a forked child inherits this hook; the root is not its own
        shutil.rmtree(root, ignore_errors=True)


def _is_ours(path: Path) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()


def _host() -> str:
    """This host as the roots and claims name it: its name and, where there is one, its PID
    namespace and the kernel's boot id. Containers that share a host name and ``TMPDIR``
    number their processes apart, so a pid means something only in its own namespace; and
    the initial namespace has the same inode on every machine, so two machines of one name
    (a shared ``TMPDIR``, or finalist claims in one database) are told apart by the boot id:
    the sweep of one never judges another's processes."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname()) or "localhost"
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return name
    return f"{name}.pidns{namespace}{_boot()}"


def _boot() -> str:
    """``.boot`` and 16 hex digits of the running kernel's random boot id, or nothing."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            digits = re.sub(r"[^0-9a-f]", "", f.read().lower())[:16]
    except OSError:
        return ""
    return f".boot{digits}" if digits else ""
