"""``autotune merge`` records the bytes it copied (issue 56, item 4): each artifact's SHA-256
is checked on the copy that lands beside the output, and nothing is written when one fails."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch

from autotune.errors import UsageError
from autotune.runtime.config import BestConfig, CompileConfig, ConfigFile
from autotune.ship import _merge, merge_files


def _source(folder: Path, device_name: str, content: bytes) -> Path:
    """A best-config file in ``folder`` whose entry ships a cache holding ``content``."""
    folder.mkdir()
    artifact = folder / "best.cache.tar.gz"
    artifact.write_bytes(content)
    cache = {"kind": "inductor-cache-dir", "path": artifact.name, "bytes": len(content),
             "sha256": hashlib.sha256(content).hexdigest(), "valid_for": {}}  # fmt: skip
    path = folder / "best.json"
    BestConfig(decision="compile", reason="r", config=CompileConfig(backend="eager"),
               cache=cache, environment={"device_name": device_name, "torch": torch.__version__},
               ).dump(path)  # fmt: skip
    return path


def test_merge_copies_the_bytes_it_checked_not_a_file_swapped_after_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It hashed the artifact, then copied it: a file swapped between the two was copied under
    the hash of the one checked (and --resign signed that)."""
    source = _source(tmp_path / "a", "CPU A", b"checked")
    real_sha256_of = _merge.sha256_of

    def check_then_swap(path: Path) -> str:
        digest = real_sha256_of(path)
        (source.parent / "best.cache.tar.gz").write_bytes(b"swapped after the check")
        return digest

    monkeypatch.setattr(_merge, "sha256_of", check_then_swap)
    out = tmp_path / "fleet" / "fleet.json"

    merge_files([source], out)

    cache = ConfigFile.load(out).entries[0].cache
    assert cache is not None
    assert (out.parent / cache["path"]).read_bytes() == b"checked"


def test_an_artifact_that_fails_its_check_leaves_nothing_written(tmp_path: Path) -> None:
    good = _source(tmp_path / "a", "CPU A", b"good")
    bad = _source(tmp_path / "b", "CPU B", b"recorded")
    (bad.parent / "best.cache.tar.gz").write_bytes(b"changed since")
    out = tmp_path / "fleet" / "fleet.json"

    with pytest.raises(UsageError, match="does not have the SHA-256 that .* records"):
        merge_files([good, bad], out)

    assert not out.parent.exists() or not list(out.parent.iterdir())
