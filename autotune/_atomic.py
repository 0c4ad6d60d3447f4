"""Files users rely on, written as databases write them: a temporary file in the same folder,
fsync, then ``os.replace``; readers see the old file or the new one, never half of one.

Standard library only (the runtime path writes best-config files with it). A writer killed
mid-way leaves at most a hidden ``.NAME.HOST.PID.RANDOM.tmpSUFFIX`` beside the target; the
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
    """Yields a temporary path beside ``target`` to write in full; when the block ends without
    an exception, the file is synced and renamed onto ``target`` (then the folder is synced),
    otherwise it is deleted and ``target`` is left as it was.

    Args:
        target: The file to create or replace.
        mode: Its permission bits; default: the replaced file's, else ``0o644``.
    """
    final = Path(target)
    folder = final.parent
    folder.mkdir(parents=True, exist_ok=True)
    _sweep(final)
    # The target's own suffix last: some writers insist on it (AOTInductor wants ".pt2").
    token = f"{os.getpid()}.{secrets.token_hex(4)}{_SUFFIX}{final.suffix}"
    tmp = folder / f".{final.name}.{_host()}.{token}"
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
        tmp.unlink(missing_ok=True)


def write_text(target: str | os.PathLike[str], text: str, mode: int | None = None) -> None:
    """Writes ``text`` (UTF-8) to ``target`` atomically."""
    with replacing(target, mode) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_bytes(target: str | os.PathLike[str], data: bytes, mode: int | None = None) -> None:
    """Writes ``data`` to ``target`` atomically."""
    with replacing(target, mode) as tmp:
        tmp.write_bytes(data)


def copy(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Copies ``source``'s bytes onto ``target`` atomically."""
    with replacing(target) as tmp:
        shutil.copyfile(source, tmp)


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
    """Deletes temporary files of earlier writes of ``final`` by processes of this host that
    are gone (a writer killed before its rename)."""
    prefix = f".{final.name}.{_host()}."
    try:
        names = [p for p in final.parent.iterdir() if p.name.startswith(prefix)]
    except OSError:
        return
    for path in names:
        rest = path.name[len(prefix) :]
        pid, _, tail = rest.partition(".")
        if not (pid.isdigit() and f"{_SUFFIX}{final.suffix}" in tail) or _alive(int(pid)):
            continue
        path.unlink(missing_ok=True)


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
