"""Finding processes a test expects to be gone (a trial's grandchildren, hosts, sleepers)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable


def procs_with(marker: bytes) -> list[int]:
    """Pids of live processes whose command line contains ``marker``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker in f.read():
                    found.append(int(pid))
        except OSError:
            continue
    return found


def wait_for(predicate: Callable[[], object], seconds: float) -> bool:
    """Polls ``predicate`` until it is truthy or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False
