"""A fresh user home for tests that stand for a first run on a new machine."""

from __future__ import annotations

from pathlib import Path

import pytest


def fresh(monkeypatch: pytest.MonkeyPatch, folder: Path) -> Path:
    """Point ``XDG_CACHE_HOME`` at ``folder/xdg`` and drop the suite's shared kernel cache.

    The two go together: the registry that lets a study share a cache folder lives under
    ``XDG_CACHE_HOME``, so a fresh home refuses the suite's folder by the cache's ownership
    rule, as it would refuse any folder it did not create."""
    home = folder / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.delenv("AUTOTUNE_CACHE_DIR", raising=False)
    return home


def shared(monkeypatch: pytest.MonkeyPatch, base: Path) -> None:
    """The suite's home: one ``XDG_CACHE_HOME`` and one kernel cache for every study of the
    run, never the user's, so that a graph the suite compiled once (default torch.compile's,
    the baseline of every study, above all) is an FX-graph-cache hit for the next test and the
    C++ toolchain is probed once per run."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(base / "xdg-cache"))
    monkeypatch.setenv("AUTOTUNE_CACHE_DIR", str(base / "kernels"))
