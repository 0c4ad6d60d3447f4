"""Finding processes a test expects to be gone (a trial's grandchildren, hosts, sleepers)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

# Every process a test of this run starts inherits this mark (its environment), so that the
# sweeps below find only this test process's leftovers: never those of another run of the
# suite on the machine, nor of another pytest-xdist worker's tests.
RUN_MARK = f"AUTOTUNE_TEST_PROCESS={os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{os.getpid()}"
os.environ[RUN_MARK.partition("=")[0]] = RUN_MARK.partition("=")[2]


def procs_with(marker: bytes) -> list[int]:
    """Pids of live processes this test process started (they carry :data:`RUN_MARK`), however
    far down, whose command line contains ``marker``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker not in f.read():
                    continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                if RUN_MARK.encode() in f.read().split(b"\0"):
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


def descendants(pid: int) -> set[int]:
    """The live processes below ``pid`` (children, their children, ...)."""
    parents: dict[int, int] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                # pid (comm) state ppid ...; comm may hold spaces and parentheses
                parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pids: set[int]) -> set[int]:
    """Those of ``pids`` that still run (zombies count as gone)."""
    running = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    running.add(pid)
        except OSError:
            continue
    return running
