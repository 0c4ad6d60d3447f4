"""No child outlives its parent: the one place where autotune ties a process's life to its
parent's (Linux's parent-death signal, ``prctl(PR_SET_PDEATHSIG)``; a no-op elsewhere) and
runs a helper process that is killed with everything it started.
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
from autotune.trials import _runner

_PR_SET_PDEATHSIG = 1


def _load_prctl() -> Callable[..., int] | None:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


# Loaded here, not after a fork: a preexec_fn must not take the dynamic loader's lock.
_prctl = _load_prctl()


def die_with_parent(sig: int = signal.SIGKILL, *, parent: int | None = None) -> None:
    """Has this process get ``sig`` when its parent dies, and at once if ``parent`` (the pid
    its parent must be) is already gone. Safe in a ``preexec_fn`` (see :func:`dies_with_us`).
    """
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, int(sig))
    if parent is not None and os.getppid() != parent:
        os.kill(os.getpid(), sig)


def dies_with_us(sig: int = signal.SIGKILL) -> Callable[[], None]:
    """A ``preexec_fn`` for ``subprocess.Popen``: the child gets ``sig`` (SIGKILL by default;
    SIGTERM for a child that stops cleanly on it) when the thread starting it ends, which
    includes this process's death; start it from a thread that waits for it."""
    return functools.partial(die_with_parent, sig, parent=os.getpid())


def run_child(
    command: Sequence[str], *, env: Mapping[str, str], timeout_s: float
) -> subprocess.CompletedProcess[str]:
    """Runs ``command`` to its end and returns its exit code and output, like
    ``subprocess.run(..., capture_output=True, text=True)``, but nothing it starts outlives it.

    The child leads a new process group and is SIGKILLed if this process dies; it is tracked
    like a trial (:func:`autotune.trials.kill_all_trials`). Its group is SIGKILLed when it
    exits, when ``timeout_s`` passes, and on any exception here (KeyboardInterrupt, SIGTERM
    turned into one by the CLI).

    Raises:
        subprocess.TimeoutExpired: It ran past ``timeout_s`` (its group is dead by then).
    """
    with _output_file() as out, _output_file() as err:
        proc = subprocess.Popen(
            list(command), env=dict(env, **_scratch.run_root_env()), stdin=subprocess.DEVNULL,
            stdout=out, stderr=err, start_new_session=True, preexec_fn=dies_with_us(),
        )  # fmt: skip
        _runner.track(proc.pid)
        try:
            exited = _wait_unreaped(proc, timeout_s)
        finally:
            # The child is not reaped yet, so its pid (the group's id) cannot have been reused.
            _runner.kill_group(proc.pid)
            proc.wait()
            _runner.untrack(proc.pid)
        stdout, stderr = _read(out), _read(err)
    if not exited:
        raise subprocess.TimeoutExpired(list(command), timeout_s, stdout, stderr)
    return subprocess.CompletedProcess(list(command), proc.returncode, stdout, stderr)


def _output_file() -> IO[bytes]:
    # A file, not a pipe: a grandchild holding a pipe open would keep the reader waiting.
    return tempfile.TemporaryFile(dir=_scratch.run_root())


def _read(file: IO[bytes]) -> str:
    file.seek(0)
    return file.read().decode("utf-8", errors="replace")


def _wait_unreaped(proc: subprocess.Popen[Any], timeout_s: float) -> bool:
    """Whether ``proc`` exited within ``timeout_s``; it is left a zombie for the caller."""
    if not hasattr(os, "waitid"):  # macOS: reaped here, the group is then killed best-effort
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False
        return True
    deadline, pause = time.monotonic() + timeout_s, 0.001
    flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
    while os.waitid(os.P_PID, proc.pid, flags) is None:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(pause, left))
        pause = min(pause * 2, 0.05)
    return True


def kill_own_group(*_: object) -> None:
    os.killpg(os.getpgid(0), signal.SIGKILL)


def kill_group_with_parent(poll_s: float = 0.5) -> None:
    """On parent death, SIGKILL this process group (compiler workers and g++ included)."""
    on_parent_death(kill_own_group, poll_s)


def on_parent_death(
    action: Callable[..., None], poll_s: float = 0.5, *, watch: bool = True
) -> None:
    """Runs ``action`` when the parent dies.

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
