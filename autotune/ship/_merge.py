"""``autotune merge``: one best-config file for several machines, from the files each wrote.

Each source is read once (its entries checked and their signatures verified from those bytes),
and each artifact is copied before it is checked: the SHA-256 compared with the one its entry
records is the copy's, the bytes that land beside the output, so a file swapped between the
check and the copy is never what the merged file records (or ``--resign`` signs).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from autotune._atomic import replacing
from autotune.errors import UsageError
from autotune.runtime.cache import sha256_of
from autotune.runtime.config import BestConfig, ConfigError, ConfigFile, entry_key, entry_label
from autotune.ship._entries import AOT_SUFFIX, CACHE_SUFFIX, artifact_name, vouch


@dataclass(frozen=True)
class _Copy:
    """An artifact to copy beside the output, and the SHA-256 its entry records."""

    found: Path
    dest: Path
    sha256: str
    source: Path
    kind: str


def merge_files(
    sources: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    on_note: Callable[[str], None] = lambda note: None,
    allow_unsafe_knobs: Collection[str] = (),
    resign: bool = False,
) -> ConfigFile:
    """Combines the entries of ``sources`` into ``out``, one per (device name, torch): for a
    machine in several files, the later file's entry wins (a note says so). Each entry's cache
    and package are copied beside ``out`` under the entry's own name, and the copy's SHA-256
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
    merged = _entries(sources, on_note, allow_unsafe_knobs)
    copies: list[_Copy] = []
    for entry, source in merged:
        copies += _artifacts(entry, source, target, on_note, resign)
    entries = [entry for entry, _ in merged]
    file = ConfigFile(entries, produced=entries if resign else [])
    _copy_checked(copies)  # each in place before the file that records its hash
    file.dump(target)
    labels = "; ".join(entry_label(e) for e in file.entries)
    on_note(f"wrote {target} with {len(file.entries)} entries: {labels}")
    return file


def _entries(
    sources: Sequence[str | os.PathLike[str]],
    on_note: Callable[[str], None],
    allowed: Collection[str],
) -> list[tuple[BestConfig, Path]]:
    """The entry of each machine (the later source's wins), each with the file it came from."""
    by_machine: dict[tuple[str, str], tuple[BestConfig, Path]] = {}
    for source in map(Path, sources):
        try:
            file = ConfigFile.load(source)
        except ConfigError as e:
            raise UsageError(f"{source} is not a valid best-config file: {e}") from e
        for entry in file.entries:
            vouch(entry, allowed, f"the entry of {source} for {entry_label(entry)}")
            earlier = by_machine.get(entry_key(entry))
            if earlier is not None:
                on_note(f"{entry_label(entry)}: the entry of {source} replaces {earlier[1]}'s")
            by_machine[entry_key(entry)] = (entry, source)  # in the earlier one's place
    return list(by_machine.values())


def _artifacts(
    entry: BestConfig,
    source: Path,
    target: Path,
    on_note: Callable[[str], None],
    resign: bool,
) -> list[_Copy]:
    """The copies ``entry``'s artifacts need beside ``target``; the entry renamed to them (and
    unsigned where its signature covered the old names), a missing artifact dropped."""
    copies = []
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
        name = artifact_name(target, entry, suffix)
        copies.append(_Copy(found, target.parent / name, str(artifact["sha256"]), source, kind))
        if name != artifact["path"] and entry.signature and not resign:
            on_note(
                f"{entry_label(entry)}: its {kind} is renamed {name}, which its signature "
                f"(key {entry.signature.get('key_id')}) does not cover, so the entry is "
                "written unsigned (--resign signs the merged entries with this machine's key)"
            )
            entry.signature = None
        setattr(entry, kind, {**artifact, "path": name})
    return copies


def _copy_checked(copies: list[_Copy]) -> None:
    """Copies every artifact to a temporary file beside its destination and checks the copy's
    SHA-256; only when every one matches are they all renamed into place (else none is)."""
    with contextlib.ExitStack() as stack:
        for copy in copies:
            if copy.found.resolve() == copy.dest.resolve():
                _check(copy, copy.found)  # already in place: nothing is copied
                continue
            tmp = stack.enter_context(replacing(copy.dest))
            shutil.copyfile(copy.found, tmp)
            _check(copy, tmp)


def _check(copy: _Copy, path: Path) -> None:
    if sha256_of(path) != copy.sha256:
        raise UsageError(
            f"{copy.found} does not have the SHA-256 that {copy.source} records for it: it "
            "was changed after it was written, so it is not merged (nothing was written). "
            f"Export it again (autotune cache export) or remove the entry's {copy.kind!r} key."
        )
