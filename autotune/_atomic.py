"""Files users rely on, written as databases write them: a temporary file in the same folder,
fsync, then ``os.replace``; readers see the old file or the new one, never half of one.

Standard library only (the runtime path writes best-config files with it). A writer killed
mid-way leaves at most a hidden folder ``.NAME.HOST.PID.RANDOM.tmp`` beside the target; the
next write of the same target on the same host deletes those whose process is gone.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

_SUFFIX = ".tmp"


@contextlib.contextmanager
def replacing(target: str | os.PathLike[str], mode: int | None = None) -> Iterator[Path]:
    """Yields a temporary path to write in full, named as ``target`` (some writers build
    names from it: AOTInductor names a package's folders after its stem) in a private folder
    beside it; when the block ends without an exception, the file is synced and renamed onto
    ``target`` (then the folder is synced), otherwise ``target`` is left as it was. The
    private folder goes either way.

    Args:
        target: The file to create or replace.
        mode: Its permission bits; default: the replaced file's, else ``0o644``.
    """
    final = Path(target)
    folder = final.parent
    folder.mkdir(parents=True, exist_ok=True)
    _sweep(final)
    work = folder / f".{final.name}.{_host()}.{os.getpid()}.{secrets.token_hex(4)}{_SUFFIX}"
    work.mkdir(mode=0o700)
    tmp = work / final.name
    try:
        yield tmp
        if not tmp.exists():
            raise FileNotFoundError(f"nothing was written to {tmp} for {final}")
        _fsync_file(tmp)
        if mode is None:
            mode = final.stat().st_mode & 0o777 if final.exists() else 0o644
        os.chmod(tmp, mode)
        os.replace(tmp, final)
        _fsync_dir(folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def write_text(target: str | os.PathLike[str], text: str, mode: int | None = None) -> None:
    """Writes ``text`` (UTF-8) to ``target`` atomically."""
    with replacing(target, mode) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_bytes(target: str | os.PathLike[str], data: bytes, mode: int | None = None) -> None:
    """Writes ``data`` to ``target`` atomically."""
    with replacing(target, mode) as tmp:
        tmp.write_bytes(data)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # a folder that cannot be opened for reading (some network file systems)
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _host() -> str:
    return "".join(c if c.isalnum() or c == "-" else "-" for c in socket.gethostname())[:40]


def _sweep(final: Path) -> None:
    """Deletes the private folders of earlier writes of ``final`` by processes of this host
    that are gone (a writer killed before its rename): real folders named as autotune names
    them, never a link."""
    prefix = f".{final.name}.{_host()}."
    try:
        names = [p for p in final.parent.iterdir() if p.name.startswith(prefix)]
    except OSError:
        return
    for path in names:
        pid, _, tail = path.name[len(prefix) :].partition(".")
        if not (pid.isdigit() and tail.endswith(_SUFFIX)) or _alive(int(pid)):
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
