"""Makes a process take its work down when its parent dies."""

from __future__ import annotations

import ctypes
import os
import signal
import threading
import time
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def kill_own_group(*_: object) -> None:
    os.killpg(os.getpgid(0), signal.SIGKILL)


def die_with_parent(poll_s: float = 0.5) -> None:
    """On parent death, SIGKILL this process group (compiler workers and g++ included)."""
    on_parent_death(kill_own_group, poll_s)


def on_parent_death(
    action: Callable[..., None], poll_s: float = 0.5, *, watch: bool = True
) -> None:
    """Runs ``action`` when the parent dies.

    Linux delivers SIGTERM on parent death (prctl PDEATHSIG), and ``action`` is its handler.
    With ``watch``, a daemon thread also polls the parent pid, for platforms and races where the
    signal is lost (a process that forks passes ``watch=False``: it must stay single-threaded).
    """
    parent = os.getppid()
    signal.signal(signal.SIGTERM, action)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        action()
    if watch:
        threading.Thread(target=_watch, args=(parent, poll_s, action), daemon=True).start()


def _watch(parent: int, poll_s: float, action: Callable[..., None]) -> None:
    while os.getppid() == parent:
        time.sleep(poll_s)
    action()
