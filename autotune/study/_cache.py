"""The study's kernel cache on this machine: a folder autotune owns, how much each trial wrote
to it, and a limit.

A study's trials share one Inductor/Triton cache per machine (identical kernels are not built
twice), which grows with every configuration measured. Each trial records the bytes its
compile added; past the limit, files untouched for an hour are removed oldest first, so a
400-trial study cannot fill a disk and no compile running now loses a file it just wrote.

Pruning deletes files, so it deletes only what autotune wrote: the folder is one autotune made
(or found empty, or holding only its own caches) and marked as its own, and only the compile
caches inside it (``inductor/``, ``triton/``) are counted and pruned. A folder holding anything
else and no mark is refused before the first trial.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from autotune._atomic import write_text
from autotune.errors import UsageError
from autotune.trials import CACHE_PARTS, HOST_LOG_PREFIX

MARKER = ".autotune-kernel-cache"
_MARK = (
    "This folder is autotune's kernel cache: past --cache-limit, autotune removes the oldest "
    "files of its inductor/ and triton/ subfolders. Keep nothing else here.\n"
)
_KEEP_RECENT_S = 3600.0
_PRUNE_TO = 0.8  # of the limit


def own(folder: str, option: str = "--cache-dir") -> None:
    """Makes ``folder`` a kernel cache autotune owns: created and marked when new, marked when
    empty or holding only what autotune keeps there (its caches, its hosts' logs), accepted
    when marked already.

    Raises:
        UsageError: ``folder`` is a file, cannot be made, or holds files of someone else.
    """
    path = Path(folder)
    if (path / MARKER).is_file():
        return
    try:
        path.mkdir(parents=True, exist_ok=True)
        foreign = sorted(e.name for e in path.iterdir() if not _autotunes(e.name))
    except OSError as exc:
        raise UsageError(
            f"{option} {folder} cannot be used as the kernel cache: {exc.strerror or exc}. "
            "Name a folder this user may create and write, or leave the option out (default "
            "~/.cache/autotune/STUDY-ID)."
        ) from exc
    if foreign:
        shown = ", ".join(foreign[:3]) + (
            f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        )
        raise UsageError(
            f"{option} {folder} holds files autotune did not write ({shown}) and no {MARKER}: "
            "autotune prunes its kernel cache past --cache-limit, so it keeps it in a folder of "
            "its own. Name a new or empty folder (autotune creates and marks it), or leave the "
            "option out (default ~/.cache/autotune/STUDY-ID)."
        )
    write_text(path / MARKER, _MARK)


def _autotunes(name: str) -> bool:
    """What autotune keeps in its cache folder: the compile caches and the hosts' logs."""
    return (
        name in CACHE_PARTS.values()
        or name == MARKER
        or (name.startswith(HOST_LOG_PREFIX) and name.endswith(".log"))
    )


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
    """The compile caches' files of an owned cache folder: nothing of a folder not marked."""
    if not folder or not (Path(folder) / MARKER).is_file():
        return
    for part in CACHE_PARTS.values():
        yield from _walk(os.path.join(folder, part))


def _walk(folder: str) -> Iterator[tuple[str, int, float]]:
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            try:
                stat = os.stat(path)
            except OSError:
                continue
            yield path, stat.st_size, max(stat.st_mtime, stat.st_atime)
