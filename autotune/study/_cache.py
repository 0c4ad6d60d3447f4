"""The study's kernel cache on this machine: how much each trial wrote to it, and a limit.

A study's trials share one Inductor/Triton cache per machine (identical kernels are not built
twice), which grows with every configuration measured. Each trial records the bytes its
compile added; past the limit, files untouched for an hour are removed oldest first, so a
400-trial study cannot fill a disk and no compile running now loses a file it just wrote.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

DEFAULT_LIMIT_BYTES = 20 * 2**30
_KEEP_RECENT_S = 3600.0
_PRUNE_TO = 0.8  # of the limit


def cache_bytes(folder: str | None) -> int:
    """The bytes under ``folder`` (0 when there is none)."""
    return sum(size for _, size, _ in _files(folder))


class Pruned(NamedTuple):
    removed: int  # bytes removed
    left: int  # bytes the folder holds now


def prune(folder: str | None, limit_bytes: int) -> Pruned:
    """Removes the oldest files untouched for an hour until ``folder`` holds at most 80% of
    ``limit_bytes``, when it holds more than ``limit_bytes``. One walk of the folder: what is
    left is the size a trial's writes are counted from."""
    files = list(_files(folder))
    total = sum(size for _, size, _ in files)
    if total <= limit_bytes:
        return Pruned(0, total)
    removed, cutoff = 0, time.time() - _KEEP_RECENT_S
    for path, size, touched in sorted(files, key=lambda f: f[2]):
        if total - removed <= _PRUNE_TO * limit_bytes or touched > cutoff:
            break
        try:
            os.unlink(path)
        except OSError:
            continue
        removed += size
    return Pruned(removed, total - removed)


def _files(folder: str | None) -> Iterator[tuple[str, int, float]]:
    if not folder or not Path(folder).is_dir():
        return
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            try:
                stat = os.stat(path)
            except OSError:
                continue
            yield path, stat.st_size, max(stat.st_mtime, stat.st_atime)
