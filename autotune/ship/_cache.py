"""Exports what lets production skip the cold compile of a best-config file's winning config:
a fresh process with an empty Inductor cache directory compiles the config and calls it on
the study's inputs, and the directory it filled is packed beside the file (see
:mod:`autotune.runtime.cache`); with ``aot``, the same process also packages the whole model
with AOTInductor (see :mod:`autotune.runtime.aot`).

A file with several entries gets the artifacts of the entry for this machine, named after it.
The child's part is :mod:`autotune.ship._cache_child`.

What is signed is what was checked (see :mod:`autotune.runtime.signing`):

- the file is read once; the compiling process gets a private copy of those bytes in this
  export's scratch folder, never the path, and the config hash and model structure it reports
  must be the entry's, so that a file swapped mid-export cannot have one config's artifacts
  recorded under another;
- with ``$AUTOTUNE_SIGNING_KEY`` set, the entry is signed as this machine's only when that key
  verifies the entry read: an unsigned one, or one signed with another key, is refused (its
  config, decision, metrics and workload would otherwise be vouched for by a machine that
  checked none of them); without a key, a signature the new artifacts void is dropped;
- ``bind_weights`` records the SHA-256 of the weights the model file builds in the entry's
  ``model.weights_sha256``, which the signature then covers and ``autotune.apply`` compares.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from autotune import _process
from autotune._scratch import scratch_dir
from autotune.errors import UsageError
from autotune.runtime import signing as _signing
from autotune.runtime.config import BestConfig, ConfigFile, entry_label, read_bytes
from autotune.ship._entries import AOT_SUFFIX, CACHE_SUFFIX, artifact_name, delete_replaced

_TIMEOUT_S = 3600.0
_TAIL = 1500
_CHILD = "autotune.ship._cache_child"


def ship_cache(
    best_path: str | os.PathLike[str],
    model_path: str | None,
    on_note: Callable[[str], None] = lambda note: None,
    timeout_s: float = _TIMEOUT_S,
    *,
    cache: bool = True,
    aot: bool = False,
    allow_unsafe_knobs: bool | Collection[str] = False,
    bind_weights: bool = False,
) -> BestConfig:
    """Packs the compile cache (``cache``) and the AOTInductor package (``aot``) of the
    entry of ``best_path`` for this machine beside the file, and records them in it; returns
    the updated entry.

    A package is written only where the winner compiles the whole model as one graph, and only
    after it computed what eager computes on the study's inputs; otherwise a note says why.

    ``model_path`` is the model file to run, named by the caller: the best-config file records
    where the model was (``model.source``), but a file never names code for autotune to run.
    ``allow_unsafe_knobs`` is passed to :func:`autotune.apply` in the compiling process.
    ``bind_weights`` records the SHA-256 of the weights the model file builds (under the
    study's seed) as ``model.weights_sha256``: ``autotune.apply`` then compares the applied
    model's, and refuses other weights where a signature is required. Without it, an earlier
    binding is dropped: the entry records what this export checked.

    Raises:
        UsageError: The file decides not to compile, its workload is not inference, it has no
            entry for this machine, no model file is named or it is not found, the model
            file builds a model of another structure than the entry's, a signing key is set
            and does not verify the entry, or compiling it in the fresh process failed.
    """
    path = Path(best_path)
    data = read_bytes(path)  # the one read: what is compiled, checked and signed
    file = ConfigFile.from_bytes(data, path)
    index = _entry_here(file, path)
    best = file.entries[index]
    _check_exportable(best, path)
    _check_may_sign(best, path)
    model = _model_file(path, best, model_path)
    old = [a for a in (best.cache if cache else None, best.aot if aot else None) if a]
    archive = path.with_name(artifact_name(path, best, CACHE_SUFFIX)) if cache else None
    package = path.with_name(artifact_name(path, best, AOT_SUFFIX)) if aot else None
    with scratch_dir("cache-export-") as tmp:
        made = " and ".join(p.name for p in (archive, package) if p is not None)
        on_note(f"cache: compiling the config in a fresh process to make {made}")
        command = [str(index), model, _device(best), str(package or ""), "1" if cache else "0",
                   _allowed_arg(allow_unsafe_knobs), "1" if bind_weights else "0"]  # fmt: skip
        facts = _compile(Path(tmp), data, command, path, timeout_s)
        _check_facts(facts, best, path, model)
        if archive is not None:
            from autotune.ship._archive import pack

            best.cache = {**pack(Path(tmp) / "inductor", archive), "valid_for": facts["valid_for"]}
            _note_written(on_note, "cache", archive, best.cache)
    if package is not None:
        _record_package(best, facts, package, on_note)
    _record_model(best, facts, bind_weights, on_note)
    file.produced.append(best)  # its cache and package are this process's: it signs the entry
    file.dump(path)  # after the artifacts are in place: the hashes it records are theirs
    for name in delete_replaced(path, file, best, old):
        on_note(f"cache: deleted {path.parent / name}, which the replaced entry named")
    return best


def _check_exportable(best: BestConfig, path: Path) -> None:
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


def _check_may_sign(best: BestConfig, path: Path) -> None:
    """With a signing key set, the export signs the entry it writes: only an entry that key
    verifies may be signed as this machine's (see :mod:`autotune.runtime.signing`)."""
    secret = _signing.key()
    why = None if secret is None else _signing.problem(best.to_dict(), secret)
    if secret is None or why is None:
        return
    raise UsageError(
        f"The entry of {path} for {entry_label(best)} cannot be verified with "
        f"${_signing.KEY_ENV} (key {_signing.key_id(secret)}): {why}. cache export signs the "
        "entry it writes, and a machine signs only what it produced or verified with its own "
        "key: signing this one would vouch for a config, decision, metrics and workload "
        "nobody here checked. Nothing was written. Produce the entry here (autotune search or "
        "finalize with the key set); or, if you vouch for every entry of the file, sign them "
        f"on purpose first (autotune merge {path} -o {path} --resign); or export it unsigned, "
        f"with ${_signing.KEY_ENV} unset."
    )


def _compile(
    tmp: Path, data: bytes, args: list[str], path: Path, timeout_s: float
) -> dict[str, Any]:
    """Runs the compiling process on a private copy of ``data`` (the bytes read of ``path``)
    with ``tmp/inductor`` as its Inductor cache; returns the facts it printed."""
    copy = tmp / "best_config.json"
    copy.write_bytes(data)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_CACHE_DIR"}
    env["TORCHINDUCTOR_CACHE_DIR"] = str(tmp / "inductor")
    env.pop(_signing.NOT_BEFORE_ENV, None)  # production's limit: the export checks the entry
    # The child imports the runtime path only, as production does: importing the search's
    # packages (optuna, sqlalchemy, ...) in the compiling process was seen to change
    # Inductor's FX graph cache key, so production then missed the shipped graphs.
    command = [sys.executable, "-m", _CHILD, str(copy), *args]
    try:
        done = _process.run_captured(command, env=env, timeout_s=timeout_s)
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
    return facts


def _check_facts(facts: dict[str, Any], best: BestConfig, path: Path, model: str) -> None:
    """The compiling process compiled the entry read, on a model of its structure."""
    if facts.get("config_hash") != best.config_hash:
        raise UsageError(
            f"The compiling process reports config {facts.get('config_hash')!r}, but the entry "
            f"of {path} read for this export holds {best.config_hash!r}: its artifacts would "
            "be recorded, and signed, for a config they were not compiled from. Nothing was "
            "written; run the export again."
        )
    recorded = best.model.get("sha256")
    if recorded and facts.get("model_sha256") != recorded:
        raise UsageError(
            f"The model file {model} builds a model of structure "
            f"{facts.get('model_sha256')!r}, but the entry of {path} for {entry_label(best)} "
            f"was tuned on {recorded!r} ({best.model.get('root_class')!r}): its artifacts "
            "would be recorded, and signed, for a model the entry was not tuned on. Nothing "
            "was written. Pass --model with the model file the entry was tuned on."
        )


def _record_package(
    best: BestConfig, facts: dict[str, Any], package: Path, on_note: Callable[[str], None]
) -> None:
    if facts.get("aot") is not None:
        best.aot = {**facts["aot"], "valid_for": facts["valid_for"]}
        _note_written(on_note, "AOTInductor package", package, best.aot)
    else:
        best.aot = None
        on_note(f"cache: no AOTInductor package was written: {facts.get('aot_skipped')}")


def _record_model(
    best: BestConfig, facts: dict[str, Any], bind_weights: bool, on_note: Callable[[str], None]
) -> None:
    """The weights binding this export asked for (or none), and no signature the new
    artifacts void where no key signs the entry again."""
    model = {k: v for k, v in best.model.items() if k != "weights_sha256"}
    if bind_weights:
        model["weights_sha256"] = str(facts["weights_sha256"])
        on_note(
            f"cache: bound the entry to the weights its model file builds (sha256 "
            f"{model['weights_sha256'][:16]}…): autotune.apply compares the applied model's, "
            "and refuses other weights where a signature is required"
        )
    elif "weights_sha256" in best.model:
        on_note("cache: the entry's weights binding is dropped (--bind-weights renews it)")
    best.model = model
    if best.signature and _signing.key() is None:
        on_note(
            f"cache: the entry's signature (key {best.signature.get('key_id')}) does not cover "
            f"its new artifacts and no ${_signing.KEY_ENV} is set here to sign them: the entry "
            "is written unsigned"
        )
        best.signature = None


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
