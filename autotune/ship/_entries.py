"""Writing an entry into a best-config file: a new file, or the entry for this machine added
or replaced (other machines' entries kept), and the artifacts of a replaced entry deleted when
autotune wrote them and nothing names them any more.

"Autotune wrote them" is read from the name exactly: the names :func:`artifact_name` gives the
replaced entry's artifacts beside this file, never a pattern that another file's artifacts
also fit (``model.v2.cache.tar.gz`` belongs to ``model.v2.json``, not to ``model.json``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from pathlib import Path
from typing import Any

from autotune.errors import UsageError
from autotune.runtime import safety as _safety
from autotune.runtime.config import (
    BestConfig,
    ConfigError,
    ConfigFile,
    entry_key,
    entry_label,
    sha256_of,
)


def artifact_name(config_path: str | os.PathLike[str], best: BestConfig, suffix: str) -> str:
    """The file name of an entry's cache or package beside ``config_path``: one per entry,
    e.g. ``best_config.intel-xeon-torch-2-13-0-cpu.cache.tar.gz`` (``best_config.cache.tar.gz``
    for an entry that does not say where it was tuned)."""
    if not best.environment.get("device_name"):
        return f"{Path(config_path).stem}{suffix}"
    device_name, torch_version = entry_key(best)
    words = re.sub(r"\((tm|r)\)|\b(cpu|processor|corporation)\b", " ", device_name.lower())
    slug = re.sub(r"[^a-z0-9]+", "-", f"{words} torch {torch_version}").strip("-")[:64]
    return f"{Path(config_path).stem}.{slug}{suffix}"


def vouch(best: BestConfig, allowed: Collection[str], where: str) -> None:
    """Checks ``best`` as a file holding it is checked when read, before it is written, signed
    or merged: the schema, the knobs refused from data (those ``allowed`` names by the
    operator's say-so aside) and the backends data may name, whatever a database row or another
    file says. ``where`` names the entry's source (``trial 12 of study 's'``).

    Raises:
        UsageError: The entry breaks a rule; nothing is written.
    """
    try:
        BestConfig.from_dict(best.to_dict(), where)
    except ConfigError as e:
        raise UsageError(f"{e}\nIt is not written (nothing was written).") from e
    config = best.config
    if config is None:
        return
    lines = _safety.config_problems(config, allowed)
    if config.backend == "openvino":
        from autotune.runtime import openvino_backend as _openvino

        lines += [f"openvino {line}" for line in _openvino.option_problems(config.options)]
    if lines:
        raise UsageError(
            _safety.explain(lines, f"The config of {where}", "pass --allow-unsafe-knob KNOB for "
                            "each") + " It is not written (nothing was written)."
        )  # fmt: skip


def write_entry(path: str | os.PathLike[str], best: BestConfig) -> str:
    """Writes ``best`` into the best-config file at ``path``: a new file, or the existing
    one with the entry for ``best``'s machine added or replaced (other machines' entries are
    kept). The cache and package files of a replaced entry are deleted when autotune wrote
    them and nothing names them any more (:func:`delete_replaced`). With a signing key set,
    ``best`` is signed, the one entry this process produced; the others keep their signatures
    (or none) as they were. Returns one line saying what was done.

    Raises:
        ConfigError: ``path`` exists but is not a valid best-config file (nothing is written).
    """
    target = Path(path)
    file = existing_file(target)
    if file is None:
        ConfigFile([best], produced=[best]).dump(target)
        return f"wrote {target}"
    replaced = file.put(best)  # this process produced it: the one entry it signs
    file.dump(target)
    if replaced is None:
        return (
            f"added the entry for {entry_label(best)} to {target} "
            f"({len(file.entries)} entries now)"
        )
    delete_replaced(target, file, replaced, [a for a in (replaced.cache, replaced.aot) if a])
    others = len(file.entries) - 1
    also = f"; its {others} other entr{'y' if others == 1 else 'ies'} kept" if others else ""
    return f"replaced the entry for {entry_label(best)} in {target}{also}"


def existing_file(path: str | os.PathLike[str]) -> ConfigFile | None:
    """The best-config file an entry would be written into: None when there is none yet.

    Raises:
        ConfigError: ``path`` exists but is not a valid best-config file.
    """
    target = Path(path)
    if not target.exists():
        return None
    try:
        return ConfigFile.load(target)
    except ConfigError as e:
        raise ConfigError(
            f"{target} exists but is not a valid best-config file, so the entry for this "
            f"machine cannot be written into it; move it away or pass another --out. {e}"
        ) from e


CACHE_SUFFIX = ".cache.tar.gz"
AOT_SUFFIX = ".pt2"
ARTIFACT_SUFFIXES = (CACHE_SUFFIX, AOT_SUFFIX)


def delete_replaced(
    path: str | os.PathLike[str],
    file: ConfigFile,
    entry: BestConfig,
    replaced: list[dict[str, Any]],
) -> list[str]:
    """Deletes the artifacts of a replaced entry (its ``cache`` and ``aot`` records, the
    entry of the machine ``entry`` was tuned on) beside ``path`` that autotune wrote and
    nothing names any more, and returns their names.

    A file is deleted only when every one holds: no entry of ``file`` names it; its name is
    one autotune gives an artifact of that entry beside this best-config file
    (:func:`is_artifact_name`); it is a regular file, not a link; and its content has the
    SHA-256 the replaced entry recorded. Anything else beside the file (a database, a model,
    another best-config file's artifacts, a file edited since) is left alone.
    """
    folder = Path(path).parent
    named = {str(a["path"]) for e in file.entries for a in (e.cache, e.aot) if a}
    deleted = []
    for record in replaced:
        name = str(record.get("path"))
        candidate = folder / name
        if name in named or not is_artifact_name(path, name, entry):
            continue
        if candidate.is_symlink() or not candidate.is_file():
            continue
        if sha256_of(candidate) != record.get("sha256"):
            continue
        candidate.unlink()
        deleted.append(name)
    return deleted


def is_artifact_name(config_path: str | os.PathLike[str], name: str, entry: BestConfig) -> bool:
    """Whether ``name`` is a name :func:`artifact_name` gives an artifact of ``entry`` beside
    ``config_path``: ``STEM.SLUG.cache.tar.gz`` or ``STEM.SLUG.pt2`` with the slug of the
    entry's machine, or ``STEM.cache.tar.gz`` / ``STEM.pt2`` (an entry that does not say where
    it was tuned). Any other slug may be another file's stem: ``model.v2.cache.tar.gz`` is
    ``model.v2.json``'s."""
    stem = Path(config_path).stem
    names = {artifact_name(config_path, entry, suffix) for suffix in ARTIFACT_SUFFIXES}
    return name in names | {f"{stem}{suffix}" for suffix in ARTIFACT_SUFFIXES}
