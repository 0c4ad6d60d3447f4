"""Faults a user can cause, said in one paragraph instead of a traceback (the command line
exits 2; autotune.tune raises one UsageError): an output that cannot be written (a full disk, a
read-only folder, a directory where a file goes) and a storage that cannot be used (a damaged or
foreign SQLite file, a read-only database, a role that may only read). Anything else is a bug,
and keeps its traceback."""

from __future__ import annotations

import errno
import os

_DISK = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is spent",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission is denied",
    errno.EPERM: "the operation is not permitted",
    errno.EISDIR: "it is a directory, where a file goes",
    errno.ENOTDIR: "a part of the path is a file, not a directory",
    errno.ENOENT: "it does not exist",
}


def paragraph(exc: BaseException) -> str | None:
    """The one paragraph that says what went wrong and what to do, or None for a bug. The
    cause is looked for down the chain: Optuna wraps a database's error in its own."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in _DISK:
            return _os_fault(seen)
        if type(seen).__module__.startswith("sqlalchemy"):
            return _storage_fault(seen)
        seen = seen.__cause__ or seen.__context__
    return None


def _os_fault(exc: OSError) -> str:
    where = exc.filename2 or exc.filename or "a file"  # a rename names its target second
    why = _DISK[exc.errno or 0]
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        folder = os.path.dirname(os.path.abspath(str(where))) if exc.filename else "."
        remedy = (
            f"free space there (df -h {folder}) and run the same command again; every file "
            "autotune writes is written whole or not at all, so what was there before is kept"
        )
    elif exc.errno == errno.EISDIR:
        remedy = "name a file path (the folder itself is left alone)"
    elif exc.errno == errno.ENOENT:
        remedy = "create its folder or name another path"
    else:
        remedy = "name a path this user may write, or make that folder writable"
    return f"cannot write {where}: {why} ({exc.strerror}). Nothing half-written is left; {remedy}."


def _storage_fault(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    first = (str(orig).strip().splitlines() or [type(exc).__name__])[0]
    low = first.lower()
    if "not a database" in low or "malformed" in low or "disk image" in low:
        remedy = (
            "the SQLite file is damaged, truncated or not a database: restore it from a copy, "
            "or name another --storage (a new file starts a new study)"
        )
    elif "readonly" in low or "read-only" in low or "read only" in low:
        remedy = (
            "the database is read-only here (a read-only mount, or its folder or -wal/-shm files "
            "not writable): read it from a writable copy, or make it writable"
        )
    elif "permission denied" in low or "insufficient privilege" in low:
        remedy = (
            "the database role may only read: autotune search and worker need INSERT, UPDATE "
            "and DELETE on the study's tables (report, studies and export only read)"
        )
    elif "disk is full" in low or "database or disk is full" in low:
        remedy = "the disk holding the database is full: free space there and run it again"
    else:
        remedy = "check that the database is reachable and this role may use it"
    return f"the storage failed: {first}. {remedy[0].upper()}{remedy[1:]}; nothing was changed."
