"""The one way autotune runs work in a process of its own, and the one rule that no child
outlives its parent.

Every child autotune starts (a trial, the preloaded trial host, the scope analysis, the cache
child, a GPU's worker, a device query) goes through :func:`start`, and the rule is the same
for all of them:

- It leads a new process group, so whatever it starts (Inductor's compile workers, g++) goes
  with it: :func:`stop` SIGKILLs the group, then reaps the child.
- It is tracked from its start to its stop, so an interrupted study (:func:`kill_all`, on
  Ctrl-C or SIGTERM) takes it down with its group.
- The kernel sends it ``death_signal`` when the thread that started it ends, this process's
  death included (Linux's parent-death signal, ``prctl(PR_SET_PDEATHSIG)``; a no-op
  elsewhere). A child that has children of its own replaces it at its start with
  :func:`kill_group_with_parent` (or :func:`on_parent_death`), which takes its group down.

A trial forked by the preloaded host, without exec, follows the same rule: it leads a session
of its own, the host tracks and stops it, and it kills its group when the host dies.
"""

from __future__ import annotations

import ctypes
import functools
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

from autotune import _scratch

_PR_SET_PDEATHSIG = 1
_live_groups: set[int] = set()
_lock = threading.Lock()


def _load_prctl() -> Callable[..., int] | None:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


# Loaded here, not after a fork: a preexec_fn must not take the dynamic loader's lock.
_prctl = _load_prctl()

Output = int | IO[Any] | None


def start(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    stdout: Output,
    stderr: Output = subprocess.STDOUT,
    stdin: Output = subprocess.DEVNULL,
    death_signal: int = signal.SIGKILL,
    before: Callable[[], None] | None = None,
) -> subprocess.Popen[bytes]:
    """Starts ``argv`` as a tracked child leading its own process group, sent ``death_signal``
    when the calling thread ends (start it from a thread that waits for it); ``before`` runs in
    the child before it execs (e.g. to set its CPU affinity). Pair it with :func:`stop`."""
    at_start = functools.partial(_at_start, death_signal, os.getpid(), before)
    proc = subprocess.Popen(
        list(argv), env=dict(env), stdin=stdin, stdout=stdout, stderr=stderr,
        start_new_session=True, preexec_fn=at_start,
    )  # fmt: skip
    track(proc.pid)
    return proc


def _at_start(sig: int, parent: int, before: Callable[[], None] | None) -> None:
    die_with_parent(sig, parent=parent)
    if before is not None:
        before()


def wait(proc: subprocess.Popen[Any], timeout_s: float | None) -> bool:
    """Whether ``proc`` exited within ``timeout_s`` (None: waits for it). It is left unreaped
    for :func:`stop`, so its pid, its group's id, cannot be reused before its group is killed."""
    if not hasattr(os, "waitid"):  # macOS: reaped here, the group is then killed best-effort
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False
        return True
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    flags, pause = os.WEXITED | os.WNOHANG | os.WNOWAIT, 0.001
    while os.waitid(os.P_PID, proc.pid, flags) is None:
        left = 1.0 if deadline is None else deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(pause, left))
        pause = min(pause * 2, 0.05)
    return True


def stop(proc: subprocess.Popen[Any]) -> int:
    """SIGKILLs ``proc``'s group (whatever it left running), reaps it, stops tracking it, and
    returns its exit code (negative: the signal that ended it)."""
    kill_group(proc.pid)
    code = proc.wait()
    untrack(proc.pid)
    return code


def run(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    output: IO[Any],
    timeout_s: float,
    errors: Output = subprocess.STDOUT,
) -> int | None:
    """Runs ``argv`` to its end (:func:`start`, :func:`wait`, :func:`stop`), its stdout to
    ``output`` and its stderr to ``errors`` (default: ``output`` too): its exit code, or None
    when it outlived ``timeout_s`` and was killed. An exception here (KeyboardInterrupt, the
    CLI's SIGTERM) kills it too."""
    proc = start(argv, env=env, stdout=output, stderr=errors)
    try:
        exited = wait(proc, timeout_s)
    finally:
        code = stop(proc)
    return code if exited else None


def run_captured(
    argv: Sequence[str], *, env: Mapping[str, str], timeout_s: float
) -> subprocess.CompletedProcess[str]:
    """:func:`run` with its output captured, like ``subprocess.run(..., capture_output=True,
    text=True)``; its scratch goes under this process's run root.

    Raises:
        subprocess.TimeoutExpired: It ran past ``timeout_s`` (its group is dead by then).
    """
    with _output_file() as out, _output_file() as err:
        env = dict(env, **_scratch.run_root_env())
        code = run(argv, env=env, output=out, errors=err, timeout_s=timeout_s)
        stdout, stderr = _read(out), _read(err)
    if code is None:
        raise subprocess.TimeoutExpired(list(argv), timeout_s, stdout, stderr)
    return subprocess.CompletedProcess(list(argv), code, stdout, stderr)


def _output_file() -> IO[bytes]:
    # A file, not a pipe: a grandchild holding a pipe open would keep the reader waiting.
    return tempfile.TemporaryFile(dir=_scratch.run_root())


def _read(file: IO[bytes]) -> str:
    file.seek(0)
    return file.read().decode("utf-8", errors="replace")


def kill_all(keep: frozenset[int] = frozenset()) -> None:
    """SIGKILLs the process group of every child running now (on interrupt or exit), but those
    in ``keep`` (e.g. started before, by someone else in this process)."""
    with _lock:
        groups = list(_live_groups - keep)
    for pgid in groups:
        kill_group(pgid)


def tracked() -> frozenset[int]:
    """The process groups of the children running now."""
    with _lock:
        return frozenset(_live_groups)


def track(pgid: int) -> None:
    """Tracks a group started outside :func:`start` (a trial the host forked for us)."""
    with _lock:
        _live_groups.add(pgid)


def untrack(pgid: int) -> None:
    with _lock:
        _live_groups.discard(pgid)


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def die_with_parent(sig: int = signal.SIGKILL, *, parent: int | None = None) -> None:
    """Has this process get ``sig`` when its parent dies, and at once if ``parent`` (the pid
    its parent must be) is already gone. Safe in a ``preexec_fn``."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, int(sig))
    if parent is not None and os.getppid() != parent:
        os.kill(os.getpid(), sig)


def kill_own_group(*_: object) -> None:
    os.killpg(os.getpgid(0), signal.SIGKILL)


def kill_group_with_parent(poll_s: float = 0.5) -> None:
    """In a child: on its parent's death, SIGKILL its process group (compile workers, g++)."""
    on_parent_death(kill_own_group, poll_s)


def on_parent_death(
    action: Callable[..., None], poll_s: float = 0.5, *, watch: bool = True
) -> None:
    """In a child: runs ``action`` when the parent dies.

    Linux delivers SIGTERM on parent death (:func:`die_with_parent`), and ``action`` is its
    handler. With ``watch``, a daemon thread also polls the parent pid, for platforms and races
    where the signal is lost (a process that forks passes ``watch=False``: it must stay
    single-threaded).
    """
    parent = os.getppid()
    signal.signal(signal.SIGTERM, action)
    die_with_parent(signal.SIGTERM, parent=parent)
    if watch:
        threading.Thread(target=_watch, args=(parent, poll_s, action), daemon=True).start()


def _watch(parent: int, poll_s: float, action: Callable[..., None]) -> None:
    while os.getppid() == parent:
        time.sleep(poll_s)
    action()
