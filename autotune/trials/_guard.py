"""Makes a trial process take its whole process group down when its parent dies."""

from __future__ import annotations

import ctypes
import os
import signal
import threading
import time

_PR_SET_PDEATHSIG = 1


def kill_own_group(*_: object) -> None:
    os.killpg(os.getpgid(0), signal.SIGKILL)


def die_with_parent(poll_s: float = 0.5) -> None:
    """On parent death, SIGKILL this process group (compiler workers and g++ included).

    Linux delivers SIGTERM on parent death (prctl PDEATHSIG); its handler kills the group. A
    daemon thread also polls the parent pid, for platforms and races where the signal is lost.
    """
    parent = os.getppid()
    signal.signal(signal.SIGTERM, kill_own_group)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        kill_own_group()
    threading.Thread(target=_watch, args=(parent, poll_s), daemon=True).start()


def _watch(parent: int, poll_s: float) -> None:
    while os.getppid() == parent:
        time.sleep(poll_s)
    kill_own_group()
