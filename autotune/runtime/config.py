"""The best-config file: schema, strict validation, canonical hashing. Standard library only.

An entry's ``created_at`` is read as a time, never compared as text (:func:`created_time`):
one without an offset is UTC, as autotune writes every time, and the schema refuses one that is
not ISO 8601. What a file says of a machine (device names, torch versions) is shown inert and
on one line (:func:`entry_label`), whatever bytes it holds.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from autotune._printable import inline
from autotune.runtime import signing as _signing
from autotune.runtime._compile_config import (
    PREFILLS,
    CompileConfig,
    ConfigError,
    EnvironmentMismatchWarning,
    Part,
    QuantizeError,
    Scope,
    ScopeError,
    UnsafeKnobError,
    When,
    _build_compile,
    _json_copy,
    _raise_if,
    for_generate,
    prefill_config,
)
from autotune.runtime._schema import (
    FILE_KEYS,
    best_problems,
    compile_problems,
    expect,
    parse_utc,
    structure_problems,
    version_problems,
)

__all__ = [
    "DECISIONS", "FILE_SCHEMA_VERSION", "PREFILLS", "SCHEMA_VERSION", "BestConfig",
    "CompileConfig", "ConfigError", "ConfigFile", "EnvironmentMismatchWarning", "Part",
    "QuantizeError", "Scope", "ScopeError", "UnsafeKnobError", "When", "created_time",
    "entry_key", "entry_label", "for_generate", "load", "prefill_config", "read_bytes",
    "sha256_of", "sha256_of_file",
]  # fmt: skip

# The newest entry version this autotune reads. An entry is written at the oldest version that
# holds it: 1, readable by every autotune since the first, unless its config has parts (2).
SCHEMA_VERSION = 2
# A file with several entries (one per device name and torch version) is version 2; a file
# with one entry stays version 1, readable by every autotune since the first.
FILE_SCHEMA_VERSION = 2
# compile: the config won and its lead was confirmed (or never put to a confirmation round);
# do_not_compile: eager won; inconclusive: the confirmation round did not resolve the lead, and
# the cheaper side ships (default compile as the config, or eager: no config)
DECISIONS = ("compile", "do_not_compile", "inconclusive")


def load(path: str | os.PathLike[str]) -> BestConfig:
    """Reads and validates a best-config file (see :meth:`BestConfig.load`).

    Example:
        >>> best = autotune.load("best_config.json")  # doctest: +SKIP
        >>> print(best.decision, best.config.brief() if best.config else "")  # doctest: +SKIP
    """
    return BestConfig.load(path)


def _utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _autotune_version() -> str:
    from autotune._version import VERSION as __version__

    return __version__


@dataclass
class BestConfig:
    """The best-config file: the decision, the winning config, and where it was measured.

    Attributes:
        decision: ``"compile"``, ``"do_not_compile"`` (eager won) or ``"inconclusive"``
            (the confirmation round did not resolve the winner's lead: the cheaper side ships).
        reason: One human sentence explaining the decision.
        config: The config to run: ``None`` for ``do_not_compile``, and for an
            ``inconclusive`` decision that ships eager.
        config_hash: ``config.config_hash()``; filled in when left ``None``.
        metrics: Free-form numbers (``latency_median_s``, ``speedup_vs_eager``, ...), named as
            a trial's result names them; read them with :meth:`metric`.
        environment: The environment fingerprint the search ran in.
        model: The model fingerprint (``sha256``, ``parameters``, ``root_class``, ...).
        workload: What was measured (``kind``, ``device``, ``shapes``, ...).
        source: Where the result comes from (study, trial, storage).
        cache: The compile cache shipped beside the file (``autotune search --save-cache``):
            archive name, SHA-256, size and what it is valid for; None without one.
        aot: The AOTInductor package shipped beside the file (``autotune search --save-cache``),
            recorded like ``cache``; None without one.
        signature: An HMAC over the entry by the key in ``$AUTOTUNE_SIGNING_KEY`` where the
            file was written (see :mod:`autotune.runtime.signing`); None when unsigned.
        created_at: ISO 8601 UTC timestamp.
        schema_version: Version of this entry's format: 1, or 2 when its config has parts
            (older autotune versions refuse it, saying to upgrade).
        autotune_version: Version of autotune that wrote the file.
    """

    decision: str
    reason: str
    config: CompileConfig | None = None
    config_hash: str | None = None
    metrics: dict[str, float | int | None] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    model: dict[str, Any] = field(default_factory=dict)
    workload: dict[str, Any] = field(default_factory=dict)
    source: dict[str, Any] = field(default_factory=dict)
    cache: dict[str, Any] | None = None
    aot: dict[str, Any] | None = None
    signature: dict[str, Any] | None = None
    created_at: str = field(default_factory=_utc_now)
    schema_version: int = 1
    autotune_version: str = field(default_factory=_autotune_version)

    def __post_init__(self) -> None:
        if self.config is not None and self.config_hash is None:
            self.config_hash = self.config.config_hash()
        _raise_if(_all_best_problems(self._raw(), "BestConfig"), "invalid BestConfig")

    def _raw(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def metric(self, name: str) -> float | int | None:
        """The figure ``name`` of :attr:`metrics`, or None."""
        return self.metrics.get(name)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, ``schema_version`` first."""
        raw = self._raw()
        raw["config"] = None if self.config is None else self.config.to_dict()
        raw["schema_version"] = 2 if self.config is not None and self.config.parts else 1
        order = ["schema_version", "autotune_version", "decision", "reason", "config_hash"]
        order += ["config", "metrics", "environment", "model", "workload", "source", "cache"]
        order += ["aot", "created_at", "signature"]
        # A file without a cache, package or signature has no such key: older autotune
        # versions read it.
        optional = ("cache", "aot", "signature")
        return {key: _json_copy(raw[key]) for key in order if key not in optional or raw[key]}

    def to_json(self) -> str:
        """Human-readable, diffable JSON (indent 2, trailing newline); signed when
        ``$AUTOTUNE_SIGNING_KEY`` is set."""
        return json.dumps(_signed(self.to_dict()), indent=2, allow_nan=False) + "\n"

    @classmethod
    def from_dict(cls, d: Any, source: str = "<dict>") -> BestConfig:
        """Builds a best config from its JSON form, checking everything, executing nothing.

        Raises:
            ConfigError: Naming ``source`` and listing every problem (unknown keys, wrong
                types, a newer ``schema_version``, a ``config_hash`` that does not match), or
                ``d`` is a file of several entries (read it with :class:`ConfigFile`).
        """
        if isinstance(d, Mapping) and "entries" in d:
            entries = ConfigFile.from_dict(d, source).entries
            if len(entries) == 1:
                return entries[0]
            raise ConfigError(
                f"best-config {source} holds {len(entries)} entries, one per machine "
                f"({'; '.join(entry_label(e) for e in entries)}): read it with "
                "autotune.ConfigFile.load(), or let autotune.apply pick the entry for the "
                "machine it runs on"
            )
        _raise_if(_all_best_problems(d, "best config"), f"invalid best-config {source}")
        config = None if d["config"] is None else _build_compile(d["config"])
        fields = {k: v for k, v in d.items() if k != "config"}
        best = cls(config=config, **_json_copy(fields))
        _check_signature(best, source)
        return best

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> BestConfig:
        """Reads and validates a best-config JSON file.

        Raises:
            ConfigError: The file is missing, unreadable, not JSON, or breaks the schema; or
                it holds several entries (read it with :class:`ConfigFile`).
        """
        return cls.from_dict(_read_json(path), source=repr(os.fspath(path)))

    def dump(self, path: str | os.PathLike[str]) -> None:
        """Writes :meth:`to_json` atomically (a temporary file in the same folder, then rename)."""
        _write_atomically(Path(path), self.to_json())


def sha256_of(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a file's bytes, as hex."""
    with open(path, "rb") as f:
        return sha256_of_file(f)


def sha256_of_file(f: BinaryIO) -> str:
    """The SHA-256 of what is left to read in the open binary file ``f``, as hex."""
    digest = hashlib.sha256()
    while chunk := f.read(1 << 20):
        digest.update(chunk)
    return digest.hexdigest()


def entry_key(best: BestConfig) -> tuple[str, str]:
    """What a file holds one entry for: the device name and torch version tuned with."""
    env = best.environment
    return str(env.get("device_name") or "unknown device"), str(env.get("torch") or "unknown")


def entry_label(best: BestConfig) -> str:
    """``NVIDIA H100 80GB HBM3, torch 2.11.0``: shown inert, on one line
    (:func:`autotune._printable.inline`)."""
    device_name, torch_version = entry_key(best)
    return inline(f"{device_name}, torch {torch_version}")


def created_time(best: BestConfig) -> datetime.datetime:
    """When ``best`` was made, as an aware datetime: ``created_at`` read as ISO 8601 (without
    an offset, UTC; a date alone, its midnight). One that does not read (the schema refuses
    such a file; an object changed in code may still hold one) counts as the oldest."""
    return parse_utc(best.created_at) or _signing.OLDEST


@dataclass
class ConfigFile:
    """A best-config file: one entry per machine, i.e. per (device name, torch version).

    A search writes or replaces the entry for the machine it ran on; ``autotune merge``
    combines files; :func:`autotune.apply` picks the entry for the machine it runs on. A file
    with one entry is written exactly as a single :class:`BestConfig` (schema version 1); with
    several, as ``{"schema_version": 2, "entries": [...]}``.

    Example:
        >>> fleet = autotune.ConfigFile.load("fleet.json")  # doctest: +SKIP
        >>> [autotune.runtime.config.entry_label(e) for e in fleet.entries]  # doctest: +SKIP
        ['NVIDIA H100 80GB HBM3, torch 2.11.0', 'NVIDIA L4, torch 2.11.0']
    """

    entries: list[BestConfig]
    # The entries this process produced (written by its search, finalize or export): the only
    # ones it signs. The others keep the signature they were read with, or none.
    produced: list[BestConfig] = field(default_factory=list, compare=False, repr=False)

    def __post_init__(self) -> None:
        _raise_if(_entries_problems(self.entries), "invalid ConfigFile")

    @classmethod
    def from_dict(cls, d: Any, source: str = "<dict>") -> ConfigFile:
        """Reads either form (one entry, or ``entries``), checking everything.

        Raises:
            ConfigError: Listing every problem of every entry, prefixed by its index.
        """
        if not (isinstance(d, Mapping) and "entries" in d):
            return cls([BestConfig.from_dict(d, source)])
        _raise_if(structure_problems(d, "best-config file"), f"invalid best-config {source}")
        problems = [
            f"{key}: unknown key; a file of several entries has only {', '.join(FILE_KEYS)}"
            for key in d
            if key not in FILE_KEYS
        ]
        problems += version_problems(d.get("schema_version"), FILE_SCHEMA_VERSION)
        raw = d.get("entries")
        if not isinstance(raw, list) or not raw:
            problems.append(expect("entries", raw, "a non-empty list of best configs"))
            raw = []
        entries = []
        for index, item in enumerate(raw):
            try:
                entries.append(BestConfig.from_dict(item, f"entries[{index}]"))
            except ConfigError as e:
                lines = str(e).splitlines()[1:]
                problems += [f"entries[{index}].{line.strip()[2:]}" for line in lines]
        problems += _entries_problems(entries) if len(entries) == len(raw) else []
        _raise_if(problems, f"invalid best-config {source}")
        return cls(entries)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ConfigFile:
        """Reads and validates a best-config file of one or several entries.

        Raises:
            ConfigError: The file is missing, unreadable, not JSON, or breaks the schema.
        """
        return cls.from_dict(_read_json(path), source=repr(os.fspath(path)))

    @classmethod
    def from_bytes(cls, data: bytes, path: str | os.PathLike[str]) -> ConfigFile:
        """Validates the bytes of the best-config file ``path`` (:func:`read_bytes`), as
        :meth:`load` does: a caller that hands the file on (to a child process, a signature)
        reads it once and hands on exactly what it checked.

        Raises:
            ConfigError: The bytes are not UTF-8 JSON, or break the schema.
        """
        return cls.from_dict(_parse_json(data, path), source=repr(os.fspath(path)))

    def to_dict(self) -> dict[str, Any]:
        """One entry: its own JSON form (version 1); several: ``{"schema_version": 2, ...}``."""
        if len(self.entries) == 1:
            return self.entries[0].to_dict()
        return {
            "schema_version": FILE_SCHEMA_VERSION,
            "autotune_version": _autotune_version(),
            "entries": [entry.to_dict() for entry in self.entries],
        }

    def to_json(self) -> str:
        """Human-readable, diffable JSON (indent 2, trailing newline); with
        ``$AUTOTUNE_SIGNING_KEY`` set, each entry this process produced (:attr:`produced`)
        signed, every other one written with the signature it was read with, or none."""
        data = self.to_dict()
        mine = [any(e is p for p in self.produced) for e in self.entries]
        if len(self.entries) == 1:
            data = _signed(data) if mine[0] else data
        else:
            data["entries"] = [
                _signed(entry) if ours else entry
                for entry, ours in zip(data["entries"], mine, strict=True)
            ]
        return json.dumps(data, indent=2, allow_nan=False) + "\n"

    def dump(self, path: str | os.PathLike[str]) -> None:
        """Writes :meth:`to_json` atomically."""
        _write_atomically(Path(path), self.to_json())

    def put(self, best: BestConfig) -> BestConfig | None:
        """Adds ``best``, replacing the entry for the same machine; returns the replaced one.
        ``best`` is this process's product: :meth:`to_json` signs it."""
        self.produced.append(best)
        for index, entry in enumerate(self.entries):
            if entry_key(entry) == entry_key(best):
                self.entries[index] = best
                return entry
        self.entries.append(best)
        return None

    def entry_for(self, device_name: str, torch_version: str) -> BestConfig | None:
        """The entry tuned on exactly this device name and torch version, if any."""
        return next(
            (e for e in self.entries if entry_key(e) == (device_name, torch_version)), None
        )


def _entries_problems(entries: list[BestConfig]) -> list[str]:
    if not entries:
        return ["entries: a best-config file holds at least one entry"]
    seen: dict[tuple[str, str], int] = {}
    problems = []
    for index, entry in enumerate(entries):
        key = entry_key(entry)
        if key in seen:
            problems.append(
                f"entries[{index}]: a second entry for {entry_label(entry)} (entries"
                f"[{seen[key]}] is for it too); keep one entry per device name and torch"
            )
        seen.setdefault(key, index)
    return problems


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the best-config file ``path``.

    Raises:
        ConfigError: It is missing or unreadable.
    """
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise ConfigError(
            f"best-config file {os.fspath(path)!r} does not exist; pass the path that "
            "`autotune search` wrote (best_config.json by default)"
        ) from None
    except OSError as e:
        raise ConfigError(f"cannot read best-config file {os.fspath(path)!r}: {e}") from e


def _read_json(path: str | os.PathLike[str]) -> Any:
    return _parse_json(read_bytes(path), path)


def _parse_json(data: bytes, path: str | os.PathLike[str]) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"cannot read best-config file {os.fspath(path)!r}: {e}") from e
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(
            f"best-config file {os.fspath(path)!r} is not valid JSON: {e.msg} at line "
            f"{e.lineno}, column {e.colno}"
        ) from None
    except (ValueError, RecursionError) as e:  # an integer past Python's digits; deep nesting
        why = f"holds an integer longer than Python reads ({sys.get_int_max_str_digits()} digits)"
        if isinstance(e, RecursionError):
            why = "nests too deeply"
        raise ConfigError(
            f"best-config file {os.fspath(path)!r} cannot be read: its JSON {why}; a "
            "best-config file nests a few levels and holds ordinary numbers: regenerate it "
            "with `autotune search`"
        ) from None


def _write_atomically(target: Path, text: str) -> None:
    """A temporary file in the same folder, fsync, then rename: readers see the old or new
    file, never part of one."""
    from autotune._atomic import write_text

    write_text(target, text)


# --- signatures (see _signing) ---


def _signed(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` (a JSON form) with a fresh signature when a signing key is set: the process
    that produced the entry vouches for it (never for another machine's it only keeps)."""
    secret = _signing.key()
    if secret is None:
        return entry
    return {**entry, "signature": _signing.sign(entry, secret)}


def _check_signature(best: BestConfig, source: str) -> None:
    """An entry signed with this process's key must still match its signature."""
    secret = _signing.key() if best.signature else None
    if secret is None:
        return
    assert best.signature is not None
    if best.signature.get("key_id") != _signing.key_id(secret):
        return  # another key's: required signatures are checked where they are required
    why = _signing.problem(best.to_dict(), secret)
    if why is not None:
        raise ConfigError(
            f"best-config {source}: {why} (key {best.signature.get('key_id')}); it is not "
            "used. Write it again with `autotune search`/`finalize`, or restore the file."
        )


# --- validation (the rules themselves live in _validate) ---


def _all_best_problems(d: Any, where: str) -> list[str]:
    structure = structure_problems(d, where)
    if structure:  # no rule may recurse into it
        return structure
    problems = best_problems(d, where, SCHEMA_VERSION)
    return problems + (_decision_problems(d) if isinstance(d, Mapping) else [])


def _decision_problems(d: Mapping[str, Any]) -> list[str]:
    decision, config, digest = d.get("decision"), d.get("config"), d.get("config_hash")
    if decision not in DECISIONS:
        return [expect("decision", decision, " or ".join(repr(x) for x in DECISIONS))]
    if decision == "do_not_compile":
        problems = [] if config is None else [expect("config", config, "null (do_not_compile)")]
        return problems + ([] if digest is None else [expect("config_hash", digest, "null")])
    if "config" not in d:
        return []
    if config is None and decision == "inconclusive":  # it ships eager
        return [] if digest is None else [expect("config_hash", digest, "null")]
    if config is None:
        return ["config: a 'compile' decision needs a config, got null"]
    if not isinstance(config, CompileConfig):
        problems = compile_problems(config, "config")
        if problems:
            return problems
        config = _build_compile(config)
    actual = config.config_hash()
    if digest != actual:
        return [
            f"config_hash: the file says {digest!r} but the config hashes to {actual!r}; the "
            f"config was edited after the search: restore it, or set config_hash to {actual!r}"
        ]
    return []
