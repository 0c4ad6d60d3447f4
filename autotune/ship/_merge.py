"""``autotune merge``: one best-config file for several machines, from the files each wrote."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Sequence
from pathlib import Path

from autotune import _atomic as atomic
from autotune.errors import UsageError
from autotune.runtime.cache import sha256_of
from autotune.runtime.config import BestConfig, ConfigError, ConfigFile, entry_key, entry_label
from autotune.ship._entries import AOT_SUFFIX, CACHE_SUFFIX, artifact_name, vouch


def merge_files(
    sources: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    on_note: Callable[[str], None] = lambda note: None,
    allow_unsafe_knobs: Collection[str] = (),
    resign: bool = False,
) -> ConfigFile:
    """Combines the entries of ``sources`` into ``out``, one per (device name, torch): for a
    machine in several files, the later file's entry wins (a note says so). Each entry's cache
    and package are copied beside ``out`` under the entry's own name, after their SHA-256 is
    checked; a missing one is dropped from its entry with a note.

    Every entry is checked as a file holding it is checked when read (see :func:`vouch`), and
    keeps its signature as it was: a merge vouches for nothing. An entry whose artifact is
    renamed is no longer what its signature covers, so it loses it, with a note. ``resign``
    signs every merged entry with this machine's key (``$AUTOTUNE_SIGNING_KEY``): the operator
    vouches for entries other machines wrote.

    Raises:
        UsageError: A source is not a valid best-config file, an entry breaks a rule, or an
            artifact beside it does not have the SHA-256 its file records (nothing is written).
    """
    target = Path(out)
    by_machine: dict[tuple[str, str], tuple[BestConfig, Path]] = {}
    for source in map(Path, sources):
        try:
            file = ConfigFile.load(source)
        except ConfigError as e:
            raise UsageError(f"{source} is not a valid best-config file: {e}") from e
        for entry in file.entries:
            vouch(entry, allow_unsafe_knobs, f"the entry of {source} for {entry_label(entry)}")
            earlier = by_machine.get(entry_key(entry))
            if earlier is not None:
                on_note(f"{entry_label(entry)}: the entry of {source} replaces {earlier[1]}'s")
            by_machine[entry_key(entry)] = (entry, source)  # in the earlier one's place
    merged = list(by_machine.values())
    copies: list[tuple[Path, Path]] = []
    for entry, source in merged:
        for kind, suffix in (("cache", CACHE_SUFFIX), ("aot", AOT_SUFFIX)):
            artifact = getattr(entry, kind)
            if not artifact:
                continue
            found = source.parent / str(artifact["path"])
            if not found.is_file():
                on_note(
                    f"{entry_label(entry)}: {found} is missing, so the entry is merged without "
                    f"its {kind}"
                )
                setattr(entry, kind, None)
                continue
            if sha256_of(found) != artifact["sha256"]:
                raise UsageError(
                    f"{found} does not have the SHA-256 that {source} records for it: it was "
                    "changed after it was written, so it is not merged (nothing was written). "
                    "Export it again (autotune cache export) or remove the entry's "
                    f"{kind!r} key."
                )
            name = artifact_name(target, entry, suffix)
            copies.append((found, target.parent / name))
            if name != artifact["path"] and entry.signature and not resign:
                on_note(
                    f"{entry_label(entry)}: its {kind} is renamed {name}, which its signature "
                    f"(key {entry.signature.get('key_id')}) does not cover, so the entry is "
                    "written unsigned (--resign signs the merged entries with this machine's key)"
                )
                entry.signature = None
            setattr(entry, kind, {**artifact, "path": name})
    entries = [entry for entry, _ in merged]
    file = ConfigFile(entries, produced=entries if resign else [])
    target.parent.mkdir(parents=True, exist_ok=True)
    for found, dest in copies:  # each in place before the file that records its hash
        if found.resolve() != dest.resolve():
            atomic.copy(found, dest)
    file.dump(target)
    labels = "; ".join(entry_label(e) for e in file.entries)
    on_note(f"wrote {target} with {len(file.entries)} entries: {labels}")
    return file
