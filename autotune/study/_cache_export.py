"""Exports the compile cache of a best-config file's winning config: a fresh process with an
empty Inductor cache directory compiles the config and calls it on the study's inputs, and
the directory it filled is packed beside the file (see :mod:`autotune.runtime.cache`).

The child's part is :mod:`autotune.runtime._cache_child`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from autotune.errors import UsageError
from autotune.runtime.config import BestConfig

_TIMEOUT_S = 3600.0
_TAIL = 1500


def export_cache(
    best_path: str | os.PathLike[str],
    model_path: str | None = None,
    on_note: Callable[[str], None] = lambda note: None,
    timeout_s: float = _TIMEOUT_S,
) -> BestConfig:
    """Packs the compile cache of ``best_path``'s config beside it (``NAME.cache.tar.gz``)
    and records it in the file; returns the updated file's content.

    Raises:
        UsageError: The file decides not to compile, its workload is not inference, the
            model file is not found, or compiling it in the fresh process failed.
    """
    path = Path(best_path)
    best = BestConfig.load(path)
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
    model = model_path or str(best.model.get("source") or "")
    if not model or not Path(model).is_file():
        raise UsageError(
            f"The model file {model or '(none recorded)'} of {path} is not on this machine; "
            "pass --model PATH with the file the study was run on."
        )
    device = str(workload.get("device") or best.environment.get("device") or "cpu")
    archive = path.with_name(f"{path.stem}.cache.tar.gz")
    with tempfile.TemporaryDirectory(prefix="autotune-cache-export-") as tmp:
        cache_dir = Path(tmp) / "inductor"
        env = {k: v for k, v in os.environ.items() if k != "TRITON_CACHE_DIR"}
        env["TORCHINDUCTOR_CACHE_DIR"] = str(cache_dir)
        on_note(f"cache: compiling the config in a fresh process to fill {archive.name}")
        # The child imports the runtime path only, as production does: importing the search's
        # packages (optuna, sqlalchemy, ...) in the compiling process was seen to change
        # Inductor's FX graph cache key, so production then missed the shipped graphs.
        command = [sys.executable, "-m", "autotune.runtime._cache_child", str(path), model, device]
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True,
                                  timeout=timeout_s, check=False)  # fmt: skip
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
        valid_for = json.loads(done.stdout.strip().splitlines()[-1])
        from autotune.runtime.cache import pack

        entry = pack(cache_dir, archive)
    entry["valid_for"] = valid_for
    best.cache = entry
    best.dump(path)
    on_note(
        f"cache: wrote {archive} ({entry['bytes'] / 2**20:.1f} MiB, sha256 "
        f"{entry['sha256'][:16]}…), valid for torch {valid_for.get('torch')} on "
        f"{valid_for.get('device_name')}"
    )
    return best
