"""Packing a compile cache into the archive that ships beside a best-config file (see
:mod:`autotune.runtime.cache`, which checks and unpacks one in production)."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path
from typing import Any

from autotune.runtime.cache import KIND, MODE_MASK
from autotune.runtime.config import sha256_of


def pack(folder: str | os.PathLike[str], archive: str | os.PathLike[str]) -> dict[str, Any]:
    """Packs the cache directory ``folder`` into ``archive`` (tar.gz, regular files only, with
    plain modes), written atomically: a killed export leaves the archive it replaces intact.
    Returns what the best-config file records of it (without ``valid_for``)."""
    from autotune._atomic import replacing

    root = Path(folder)
    with replacing(archive) as tmp:
        with tarfile.open(tmp, "w:gz") as tar:
            for path in sorted(root.rglob("*")):
                if path.is_file() and not path.is_symlink() and not path.name.endswith(".lock"):
                    tar.add(path, arcname=str(path.relative_to(root)), recursive=False,
                            filter=_plain)  # fmt: skip
        record = {"kind": KIND, "path": Path(archive).name, "sha256": sha256_of(tmp),
                  "bytes": tmp.stat().st_size}  # fmt: skip
    return record


def _plain(info: tarfile.TarInfo) -> tarfile.TarInfo:
    """No owner, and permission bits only (no setuid, setgid or sticky bit)."""
    info.mode &= MODE_MASK
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info
