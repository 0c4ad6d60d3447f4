"""Compile caches shipped beside a best-config file, so that a fresh process's first call does
not pay the whole cold compile (torch and the standard library only).

The cache is the Inductor cache directory of one process that compiled the winning config
and called it on the study's inputs (FX graph cache, the C++ or Triton kernels g++ or Triton
built, autotuning results), packed as ``NAME.cache.tar.gz``; on CUDA it also holds the
mega-cache (``torch.compiler.save_cache_artifacts``). The file records the archive's SHA-256
and size, and the machine facts the cached code depends on. The archive holds pickles and
shared objects that run when loaded, so an archive whose hash differs is refused.
"""

from __future__ import annotations

import os
import shutil
import sys
import tarfile
from pathlib import Path
from typing import Any, BinaryIO

import torch

from autotune._scratch import scratch_dir
from autotune.runtime.config import sha256_of, sha256_of_file

__all__ = [
    "KIND", "MEGACACHE", "CacheRefusedError", "load", "mismatches", "refuse_if_changed",
    "sha256_of", "validity_keys",
]  # fmt: skip
KIND = "inductor-cache-dir"
MEGACACHE = "megacache.bin"  # CUDA: torch.compiler.save_cache_artifacts() bytes, at the root
MODE_MASK = 0o755  # what an extracted file may keep: no setuid/setgid/sticky, no group or
# world write


class CacheRefusedError(ValueError):
    """A shipped cache failed its integrity check: it is not loaded."""


def validity_keys(device: str) -> dict[str, Any]:
    """What cached compiled code depends on: torch, triton, CUDA, Python, the device, and on
    CPU the thread count (it is part of Inductor's FX graph cache key)."""
    from autotune.runtime.fingerprint import environment_fingerprint

    env = environment_fingerprint(device)
    keys = {k: env.get(k) for k in ("torch", "triton", "cuda", "python", "device_name")}
    if not device.startswith("cuda"):
        keys["threads"] = torch.get_num_threads()
    return keys


def mismatches(valid_for: dict[str, Any], device: str) -> list[str]:
    """How this machine differs from what the cache is valid for, one line per key."""
    here = validity_keys(device)
    return [
        f"{key}: cached for {want!r}, running with {here.get(key)!r}"
        for key, want in sorted(valid_for.items())
        if key in here and here[key] != want
    ]


def load(entry: dict[str, Any], archive: Path, device: str) -> str | None:
    """Loads the cache ``entry`` (the file's ``cache`` object) from ``archive`` into this
    process's Inductor cache directory, when it is valid here.

    Returns:
        None when it was loaded; else why not, in one line (missing, or made for another
        torch, device or thread count): the model then compiles as without a cache.

    Raises:
        CacheRefusedError: The archive's SHA-256 is not the one the file records, or it holds
            a path that would land outside the cache directory.
    """
    if not archive.is_file():
        return f"the cache {archive} named by the file is not there"
    different = mismatches(dict(entry.get("valid_for") or {}), device)
    with open(archive, "rb") as f:  # hashed and extracted from one open file
        refuse_if_changed(entry, archive, "compile cache", "a cache holds pickles and shared "
                          "objects", fileobj=f)  # fmt: skip
        if different:
            return "the cache was made elsewhere (" + "; ".join(different) + ")"
        f.seek(0)
        _extract(archive, f, Path(_cache_dir()), device)
    return None


def refuse_if_changed(
    entry: dict[str, Any], path: Path, what: str, holds: str, fileobj: BinaryIO | None = None
) -> None:
    """Raises :class:`CacheRefusedError` when ``path`` (read from ``fileobj`` when given) is
    not the file whose SHA-256 the best-config file records (``entry``): ``holds`` says what
    would run if it were loaded."""
    actual = sha256_of(path) if fileobj is None else sha256_of_file(fileobj)
    if actual != entry.get("sha256"):
        raise CacheRefusedError(
            f"The {what} {path} has SHA-256 {actual[:16]}…, but the best-config file records "
            f"{str(entry.get('sha256'))[:16]}…: it was changed or replaced after it was "
            f"written. It is not loaded, since {holds} that run when loaded. Export it again "
            "(autotune cache export), or pass cache=False to compile without it."
        )


def _cache_dir() -> str:
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    return str(cache_dir())


def _extract(archive: Path, fileobj: BinaryIO, target: Path, device: str) -> None:
    """Copies the archive's files into ``target``, keeping files already there (same key,
    same content), with plain modes (no setuid, setgid or sticky bit, not writable by others);
    CUDA's mega-cache is handed to torch."""
    with scratch_dir("cache-") as tmp, tarfile.open(fileobj=fileobj, mode="r:*") as tar:
        members = tar.getmembers()
        for member in members:
            name = Path(member.name)
            if not member.isfile() or name.is_absolute() or ".." in name.parts:
                raise CacheRefusedError(
                    f"The compile cache {archive} holds {member.name!r}, which is not a plain "
                    "file inside the cache: it is not loaded. Export the cache again."
                )
        for member in members:
            member.mode &= MODE_MASK
            member.uid = member.gid = 0
            member.uname = member.gname = ""
        if sys.version_info >= (3, 12):
            tar.extractall(tmp, members=members, filter="data")
        else:  # members checked above: plain files with relative paths, modes masked
            tar.extractall(tmp, members=members)  # noqa: S202
        source = Path(tmp)
        mega = source / MEGACACHE
        if mega.is_file():
            if device.startswith("cuda"):
                torch.compiler.load_cache_artifacts(mega.read_bytes())
            mega.unlink()
        for path in source.rglob("*"):
            if path.is_file():
                dest = target / path.relative_to(source)
                if not dest.exists():
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path, dest)
                    os.chmod(dest, path.stat().st_mode & MODE_MASK)
