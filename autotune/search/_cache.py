"""The study's kernel cache on this machine: a folder autotune created, how much each trial
wrote to it, and a limit.

A study's trials share one Inductor/Triton cache per machine (identical kernels are not built
twice), which grows with every configuration measured. Each trial records the bytes its
compile added; past the limit, files untouched for an hour are removed oldest first, so a
400-trial study cannot fill a disk and no compile running now loses a file it just wrote.

Pruning deletes files, so it deletes only what autotune wrote, judged by facts, never by
names:

- **Ours means created by us.** A folder is adopted only when it is new or empty: autotune
  writes a marker holding a random id, which the study records first with the folder's host,
  path and inode (an attribute of the Optuna study). A marked folder is used again only when
  the marker is a regular file of this user's (not a link, not a hard link, not a FIFO) whose
  id a study of the same database recorded for this very folder (its inode: a marker copied
  into another folder is not enough), or that this user's registry on this machine
  (``~/.cache/autotune/kernel-caches/``) holds for it, so that studies of several databases
  may share one ``$AUTOTUNE_CACHE_DIR``; any other folder is refused before the first
  trial, whatever its entries are called.
- **Pruning never leaves the folder.** It works from file descriptors: the folder must still
  be the one adopted (device and inode), each compile cache inside it (``inductor/``,
  ``triton/``) must be a real folder, not a link; the walk follows no link, enters no folder
  of another device or owner, counts and removes only regular files of this user, and
  re-opens each file's folders without following links when it removes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import socket
import stat
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from autotune._atomic import write_text
from autotune.errors import UsageError
from autotune.storage import user_cache
from autotune.trials import CACHE_PARTS

MARKER = ".autotune-kernel-cache"
_MARK = (
    "This folder is autotune's kernel cache: past --cache-limit, autotune removes the oldest "
    "files of its inductor/ and triton/ subfolders. Keep nothing else here.\n"
    "id: {id}\n"
)
_ID = re.compile(r"^id: ([0-9a-f]{32})$", re.MULTILINE)
_MARKER_BYTES = 4096  # a marker is two lines: more is not one of autotune's
_KEEP_RECENT_S = 3600.0
_PRUNE_TO = 0.8  # of the limit
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_REMEDY = (
    "Name a new or empty folder (autotune creates and marks it), or leave the option out "
    "(default ~/.cache/autotune/STUDY-ID)."
)


class Pruned(NamedTuple):
    removed: int  # bytes removed
    left: int  # bytes the folder holds now


@dataclass(frozen=True)
class KernelCache:
    """A kernel cache folder autotune adopted: where it is, its marker's id and the folder's
    identity when adopted (device, inode, owner), which every later walk checks again."""

    path: str
    id: str
    device: int
    inode: int
    owner: int

    def size(self) -> int:
        """The bytes of the compile caches' files (0 when the folder is no longer this one)."""
        return sum(f.size for f in self._files())

    def prune(self, limit_bytes: int) -> Pruned:
        """Removes the oldest files untouched for an hour until the folder holds at most 80%
        of ``limit_bytes``, when it holds more than ``limit_bytes``. One walk of the folder:
        what is left is the size a trial's writes are counted from."""
        files = list(self._files())
        total = sum(f.size for f in files)
        if total <= limit_bytes:
            return Pruned(0, total)
        removed, cutoff = 0, time.time() - _KEEP_RECENT_S
        for found in sorted(files, key=lambda f: f.touched):
            if total - removed <= _PRUNE_TO * limit_bytes or found.touched > cutoff:
                break
            if self._remove(found):
                removed += found.size
        return Pruned(removed, total - removed)

    def keep_under(self, limit_bytes: int, on_note: Callable[[str], None]) -> int:
        """:meth:`prune`, saying what it removed; returns the bytes the folder holds."""
        removed, left = self.prune(limit_bytes)
        if removed:
            on_note(
                f"the kernel cache {self.path} passed its limit of {limit_bytes / 2**30:.1f} "
                f"GiB: removed {removed / 2**20:.0f} MiB of its oldest files"
            )
        return left

    def _files(self) -> Iterator[_File]:
        with self._opened() as top:
            if top is None:
                return
            for part in CACHE_PARTS.values():
                yield from self._walk(top, part)

    @contextlib.contextmanager
    def _opened(self) -> Iterator[int | None]:
        """The folder, opened; None when it is gone, or is another folder or marker now."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            yield None
            return
        try:
            st = os.fstat(fd)
            same = (st.st_dev, st.st_ino, st.st_uid) == (self.device, self.inode, self.owner)
            yield fd if same and _marker_id(fd) == self.id else None
        finally:
            os.close(fd)

    def _walk(self, top: int, part: str) -> Iterator[_File]:
        try:
            st = os.stat(part, dir_fd=top, follow_symlinks=False)
        except OSError:
            return
        if not (stat.S_ISDIR(st.st_mode) and self._ours(st)):
            return  # a link (to anywhere), a file, or a folder of another device or owner
        for root, dirs, names, fd in os.fwalk(part, dir_fd=top, follow_symlinks=False):
            dirs[:] = [d for d in dirs if self._ours_at(d, fd, stat.S_ISDIR)]
            for name in names:
                found = _lstat(name, fd)
                if found is not None and stat.S_ISREG(found.st_mode) and self._ours(found):
                    yield _File(root, name, found.st_size, max(found.st_mtime, found.st_atime))

    def _ours(self, st: os.stat_result) -> bool:
        return st.st_dev == self.device and st.st_uid == self.owner

    def _ours_at(self, name: str, fd: int, kind: Callable[[int], bool]) -> bool:
        st = _lstat(name, fd)
        return st is not None and kind(st.st_mode) and self._ours(st)

    def _remove(self, found: _File) -> bool:
        """Unlinks ``found`` through its folders opened one by one without following a link,
        if it is still a regular file of this user's: a folder swapped for a link since the
        walk is not followed."""
        with self._opened() as top:
            if top is None:
                return False
            fds: list[int] = []
            try:
                at = top
                for name in Path(found.folder).parts:
                    at = os.open(name, _DIR_FLAGS, dir_fd=at)
                    fds.append(at)
                    if not self._ours(os.fstat(at)):
                        return False
                if not self._ours_at(found.name, at, stat.S_ISREG):
                    return False
                os.unlink(found.name, dir_fd=at)
                return True
            except OSError:
                return False
            finally:
                for fd in fds:
                    os.close(fd)


class _File(NamedTuple):
    folder: str  # relative to the cache folder
    name: str
    size: int
    touched: float


def own(
    folder: str,
    option: str,
    recorded: Callable[[str], Mapping[str, Any] | None],
    record: Callable[[str, dict[str, Any]], None],
) -> KernelCache:
    """Adopts ``folder`` as a kernel cache: created and marked when new or empty (its id and
    the folder's host, path and inode passed to ``record``, the study's record, and kept in
    this user's registry on this machine, before the marker is written), used again when
    marked with an id the study's record (``recorded``) or this machine's registry knows for
    this very folder (its inode: a marker copied into another folder is not enough).

    Raises:
        UsageError: ``folder`` is a file, cannot be made, belongs to another user, holds
            anything and no marker, or a marker that neither record knows for it.
    """
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise _unusable(folder, option, exc) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # two processes of a study adopt one folder once
        st = os.fstat(fd)
        if st.st_uid != os.geteuid():
            raise _others(folder, option, st.st_uid)
        found = _marker_id(fd)
        if found is None:
            found = _adopt(folder, fd, option, record)
        elif not _made_here(found, st.st_ino, recorded):
            raise _foreign_marker(folder, option, found)
        return KernelCache(os.path.abspath(folder), found, st.st_dev, st.st_ino, st.st_uid)
    except OSError as exc:
        raise _unusable(folder, option, exc) from exc
    finally:
        os.close(fd)


def _adopt(
    folder: str, fd: int, option: str, record: Callable[[str, dict[str, Any]], None]
) -> str:
    entries = sorted(os.listdir(fd))
    if entries:
        raise _not_empty(folder, option, entries)
    new = secrets.token_hex(16)
    where: dict[str, Any] = {"host": socket.gethostname(), "path": os.path.abspath(folder)}
    where["inode"] = os.fstat(fd).st_ino
    record(new, where)  # first: a marker exists only with an id that is recorded
    _register(new, where)
    write_text(Path(folder, MARKER), _MARK.format(id=new))
    return new


def _made_here(
    cache_id: str, inode: int, recorded: Callable[[str], Mapping[str, Any] | None]
) -> bool:
    """Whether the study's record or this machine's registry says autotune made the folder
    of ``inode`` under ``cache_id`` (this machine's registry lets studies of several
    databases share one $AUTOTUNE_CACHE_DIR; the study's, its workers on several hosts)."""
    return any(
        isinstance(where, Mapping) and where.get("inode") == inode
        for where in (recorded(cache_id), _registered(cache_id))
    )


def _registry() -> Path:
    """This user's record, on this machine, of the kernel cache folders autotune made."""
    return user_cache() / "kernel-caches"


def _register(cache_id: str, where: dict[str, Any]) -> None:
    """Keeps ``where`` in this machine's registry; the study's record stands without it (a
    home that cannot be written loses only the sharing across databases)."""
    with contextlib.suppress(OSError):
        _registry().mkdir(parents=True, exist_ok=True, mode=0o700)
        write_text(_registry() / f"{cache_id}.json", json.dumps(where), mode=0o600)


def _registered(cache_id: str) -> Any:
    """What this machine's registry holds of ``cache_id``: None unless a file of this user's
    (:func:`_own_file`) holding JSON."""
    data = _own_file(_registry() / f"{cache_id}.json")
    try:
        return None if data is None else json.loads(data)
    except ValueError:
        return None


def _marker_id(fd: int) -> str | None:
    """The id in the folder's marker: None when there is none, or when the marker is not a
    file of this user's (:func:`_own_file`) or not one autotune wrote."""
    data = _own_file(MARKER, dir_fd=fd)
    match = None if data is None else _ID.search(data.decode("utf-8", "replace"))
    return match.group(1) if match else None


def _own_file(path: str | Path, dir_fd: int | None = None) -> bytes | None:
    """The first bytes of ``path`` when it is a regular file of this user's with one name:
    None for a link (never followed), a hard link from elsewhere, another user's file or none.
    Opened without blocking: a FIFO planted in its place is no file, not a hang."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_nlink != 1:
            return None
        return os.read(fd, _MARKER_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)


def _lstat(name: str, fd: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return None


def _unusable(folder: str, option: str, exc: OSError) -> UsageError:
    return UsageError(
        f"{option} {folder} cannot be used as the kernel cache: {exc.strerror or exc}. "
        "Name a folder this user may create and write, or leave the option out (default "
        "~/.cache/autotune/STUDY-ID)."
    )


def _not_empty(folder: str, option: str, entries: list[str]) -> UsageError:
    shown = ", ".join(entries[:3]) + (f" and {len(entries) - 3} more" if len(entries) > 3 else "")
    marker = (
        f"a {MARKER} autotune cannot trust (a link, another user's, or one an earlier "
        "autotune wrote without an id)"
        if MARKER in entries
        else f"no {MARKER} of autotune's"
    )
    return UsageError(
        f"{option} {folder} holds files ({shown}) and {marker}: autotune "
        "prunes its kernel cache past --cache-limit, so it keeps it in a folder it created "
        f"and never adopts one that holds anything, whatever the names. {_REMEDY}"
    )


def _foreign_marker(folder: str, option: str, found: str) -> UsageError:
    return UsageError(
        f"{option} {folder} is marked as a kernel cache (id {found}) that autotune did not "
        "make in this folder for a study of this database nor for this user on this machine: "
        "autotune prunes only a folder it created, so a marker copied from elsewhere or left "
        "by another machine's study is not enough. "
        f"{_REMEDY} If the folder is autotune's cache of another study and holds nothing of "
        "yours, delete it and it is made again."
    )


def _others(folder: str, option: str, uid: int) -> UsageError:
    return UsageError(
        f"{option} {folder} belongs to another user (uid {uid}, not {os.geteuid()}): autotune "
        f"prunes its kernel cache, so it uses only a folder of this user's. {_REMEDY}"
    )
