"""Exports what lets production skip the cold compile of a best-config file's winning config:
a fresh process with an empty Inductor cache directory compiles the config and calls it on
the study's inputs, and the directory it filled is packed beside the file (see
:mod:`autotune.runtime.cache`); with ``aot``, the same process also packages the whole model
with AOTInductor (see :mod:`autotune.runtime.aot`).

A file with several entries gets the artifacts of the entry for this machine, named after it.
The child's part is :mod:`autotune.ship._cache_child`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from autotune._scratch import scratch_dir
from autotune.errors import UsageError
from autotune.runtime.config import BestConfig, ConfigFile, entry_label
from autotune.ship._entries import AOT_SUFFIX, CACHE_SUFFIX, artifact_name, delete_replaced
from autotune.trials import run_child

_TIMEOUT_S = 3600.0
_TAIL = 1500


def ship_cache(
    best_path: str | os.PathLike[str],
    model_path: str | None,
    on_note: Callable[[str], None] = lambda note: None,
    timeout_s: float = _TIMEOUT_S,
    *,
    cache: bool = True,
    aot: bool = False,
    allow_unsafe_knobs: bool | Collection[str] = False,
) -> BestConfig:
    """Packs the compile cache (``cache``) and the AOTInductor package (``aot``) of the
    entry of ``best_path`` for this machine beside the file, and records them in it; returns
    the updated entry.

    A package is written only where the winner compiles the whole model as one graph, and only
    after it computed what eager computes on the study's inputs; otherwise a note says why.

    ``model_path`` is the model file to run, named by the caller: the best-config file records
    where the model was (``model.source``), but a file never names code for autotune to run.
    ``allow_unsafe_knobs`` is passed to :func:`autotune.apply` in the compiling process.

    Raises:
        UsageError: The file decides not to compile, its workload is not inference, it has no
            entry for this machine, no model file is named or it is not found, or compiling
            it in the fresh process failed.
    """
    path = Path(best_path)
    file = ConfigFile.load(path)
    index = _entry_here(file, path)
    best = file.entries[index]
    if best.config is None:
        raise UsageError(
            f"{path} decides not to compile, so there is no compiled code to cache; a cache "
            "is exported for a file whose decision is compile."
        )
    workload = best.workload
    if workload.get("kind", "infer") != "infer":
        raise UsageError(
            f"{path} was tuned for {workload.get('kind')!r}: compile caches are exported for "
            "inference workloads only (a training step's backward graphs are not cached yet)."
        )
    model = _model_file(path, best, model_path)
    device = _device(best)
    old = [a for a in (best.cache if cache else None, best.aot if aot else None) if a]
    archive = path.with_name(artifact_name(path, best, CACHE_SUFFIX)) if cache else None
    package = path.with_name(artifact_name(path, best, AOT_SUFFIX)) if aot else None
    with scratch_dir("cache-export-") as tmp:
        cache_dir = Path(tmp) / "inductor"
        env = {k: v for k, v in os.environ.items() if k != "TRITON_CACHE_DIR"}
        env["TORCHINDUCTOR_CACHE_DIR"] = str(cache_dir)
        made = " and ".join(p.name for p in (archive, package) if p is not None)
        on_note(f"cache: compiling the config in a fresh process to make {made}")
        # The child imports the runtime path only, as production does: importing the search's
        # packages (optuna, sqlalchemy, ...) in the compiling process was seen to change
        # Inductor's FX graph cache key, so production then missed the shipped graphs.
        child = "autotune.ship._cache_child"
        command = [sys.executable, "-m", child, str(path), str(index), model, device,
                   str(package or ""), "1" if cache else "0",
                   _allowed_arg(allow_unsafe_knobs)]  # fmt: skip
        try:
            done = run_child(command, env=env, timeout_s=timeout_s)
        except subprocess.TimeoutExpired:
            raise UsageError(
                f"Exporting the cache of {path} took over {timeout_s:.0f} s; nothing was written."
            ) from None
        if done.returncode != 0:
            tail = (done.stderr or done.stdout)[-_TAIL:].strip()
            raise UsageError(
                f"Compiling {path}'s config to export its cache failed (exit {done.returncode}); "
                f"nothing was written. Its output ended with: {tail}"
            )
        facts: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        valid_for = facts["valid_for"]
        if archive is not None:
            from autotune.ship._archive import pack

            best.cache = {**pack(cache_dir, archive), "valid_for": valid_for}
            _note_written(on_note, "cache", archive, best.cache)
    if package is not None:
        if facts.get("aot") is not None:
            best.aot = {**facts["aot"], "valid_for": valid_for}
            _note_written(on_note, "AOTInductor package", package, best.aot)
        else:
            best.aot = None
            on_note(f"cache: no AOTInductor package was written: {facts.get('aot_skipped')}")
    file.produced.append(best)  # its cache and package are this process's: it signs the entry
    file.dump(path)  # after the artifacts are in place: the hashes it records are theirs
    for name in delete_replaced(path, file, old):
        on_note(f"cache: deleted {path.parent / name}, which the replaced entry named")
    return best


def _model_file(path: Path, best: BestConfig, model_path: str | None) -> str:
    recorded = str(best.model.get("source") or "")
    if not model_path:
        hint = f" (it was tuned with {recorded})" if recorded else ""
        raise UsageError(
            f"Exporting the cache of {path} runs its model file to compile it, and a "
            f"best-config file never names code for autotune to run{hint}: pass --model PATH "
            "with the model file you trust."
        )
    if not Path(model_path).is_file():
        raise UsageError(
            f"The model file {model_path} is not there; pass --model PATH with the model file "
            f"{path} was tuned on."
        )
    return str(Path(model_path).resolve())


def _allowed_arg(allowed: bool | Collection[str]) -> str:
    """The compiling process's ``allow_unsafe_knobs``, as one argument."""
    if allowed is True:
        return "*"
    return ",".join(sorted(allowed or ()))


def _note_written(
    on_note: Callable[[str], None], what: str, where: Path, entry: dict[str, Any]
) -> None:
    valid_for = entry["valid_for"]
    on_note(
        f"cache: wrote the {what} {where} ({entry['bytes'] / 2**20:.1f} MiB, sha256 "
        f"{entry['sha256'][:16]}…), valid for torch {valid_for.get('torch')} on "
        f"{valid_for.get('device_name')}: native code that runs when autotune.apply loads it, "
        "so ship it only with the file that records its SHA-256"
    )


def _device(best: BestConfig) -> str:
    return str(best.workload.get("device") or best.environment.get("device") or "cpu")


def _entry_here(file: ConfigFile, path: Path) -> int:
    """The index of the entry for this machine: compiled code is exported where it runs."""
    if len(file.entries) == 1:
        return 0
    import torch

    from autotune.runtime.fingerprint import environment_fingerprint

    for index, entry in enumerate(file.entries):
        device = _device(entry)
        if device.startswith("cuda") and not torch.cuda.is_available():
            continue
        here = environment_fingerprint(device)
        if file.entry_for(str(here["device_name"]), str(here["torch"])) is entry:
            return index
    entries = "; ".join(entry_label(e) for e in file.entries)
    raise UsageError(
        f"{path} has no entry for this machine (it holds {entries}): a cache is exported on "
        "the machine its entry was tuned on. Run this there, or run `autotune search --out "
        f"{path}` here first."
    )
