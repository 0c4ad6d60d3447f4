"""Which entry of a fleet file serves a machine (issue 56, item 8): an entry that says where it
was tuned outranks one that says nothing, "newest" compares times, and what the file says of a
machine or a model is shown inert in apply's warnings."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
import torch

import autotune
from autotune.runtime import apply as apply_module
from autotune.runtime.config import (
    BestConfig,
    CompileConfig,
    ConfigFile,
    EnvironmentMismatchWarning,
)
from autotune.runtime.select import choose

TORCH = torch.__version__


def _entry(device_name: str | None, torch_version: str = TORCH, **more: Any) -> BestConfig:
    device = "cuda:0" if device_name and device_name.startswith("NVIDIA") else "cpu"
    environment = {"device": device, "torch": torch_version}
    if device_name is not None:
        environment["device_name"] = device_name
    return BestConfig(decision="compile", reason="r", config=CompileConfig(backend="eager"),
                      environment=environment, **more)  # fmt: skip


def _here(device_name: str, device: str = "cpu", **more: Any) -> dict[str, Any]:
    return {"device": device, "device_name": device_name, "torch": TORCH, **more}


def test_an_entry_that_says_where_it_was_tuned_outranks_one_that_says_nothing() -> None:
    """The entry without a device_name was taken, as an exact match and silently, before the
    same device's entry for another torch and another CPU's entry."""
    unknown = _entry(None, created_at="2026-03-01T00:00:00+00:00")  # the newest
    same_device = _entry("CPU A", "2.11.0")
    same_class = _entry("CPU B")
    entries = [unknown, same_device, same_class]

    other_torch = choose(entries, _here("CPU A"))
    assert (other_torch.entry, other_torch.match) == (same_device, "other-torch")
    closest = choose(entries, _here("CPU C"))
    assert (closest.entry, closest.match) == (same_class, "same-class")

    gpu = choose(entries, _here("NVIDIA L4", device="cuda:0", capability="8.9"))
    assert (gpu.entry, gpu.match, gpu.exact) == (unknown, "unknown", False)
    assert "does not say where it was tuned" in gpu.why and "CPU A, torch 2.11.0" in gpu.why

    hand_written = choose([unknown], _here("CPU A"))  # a file of such entries only: silent
    assert (hand_written.entry, hand_written.exact, hand_written.why) == (unknown, True, "")


def test_apply_says_when_it_serves_an_entry_that_does_not_say_where_it_was_tuned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "fleet.json"
    ConfigFile([_entry(None), _entry("NVIDIA L4")]).dump(path)
    here = _here("CPU A")
    monkeypatch.setattr(apply_module, "environment_fingerprint", lambda device: here)

    with pytest.warns(EnvironmentMismatchWarning, match="does not say where it was tuned"):
        autotune.apply(torch.nn.Linear(4, 4), path)


def test_newest_compares_created_at_as_times_not_as_text() -> None:
    """'2026-01-01T10:00:00Z' sorted after '2026-01-01T09:30:00-01:00' (10:30 UTC), and a date
    alone before any time of its day."""
    later = _entry("CPU A", "2.11.1", created_at="2026-01-01T09:30:00-01:00")
    earlier = _entry("CPU A", "2.11.0", created_at="2026-01-01T10:00:00Z")
    assert choose([earlier, later], _here("CPU A")).entry is later
    assert choose([later, earlier], _here("CPU A")).entry is later

    midnight = _entry("CPU A", "2.10.0", created_at="2026-01-02")  # a date: its midnight, UTC
    evening = _entry("CPU A", "2.10.1", created_at="2026-01-01T23:00:00-02:00")  # 01:00 UTC
    assert choose([midnight, evening], _here("CPU A")).entry is evening


def test_apply_shows_what_the_file_says_of_machines_and_models_inert(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """root_class, device names and torch versions from the file reached the terminal raw: an
    escape sequence in them could clear the screen or retitle the window."""
    hostile = "CPU \x1b]0;owned\x07 A\x1b[2J"
    entry = _entry(
        hostile, "2.0\u202e1",
        model={"sha256": "0" * 16, "root_class": "Net\x1b[31m\nfake line"},
    )  # fmt: skip
    path = tmp_path / "fleet.json"
    ConfigFile([entry, _entry("NVIDIA L4")]).dump(path)
    here = _here("CPU Z")
    monkeypatch.setattr(apply_module, "environment_fingerprint", lambda device: here)

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        autotune.apply(torch.nn.Linear(4, 4), path)

    texts = [str(w.message) for w in seen]
    assert any("using the closest" in t for t in texts)
    assert any("tuned on structure" in t for t in texts)
    raw = [c for t in texts for c in t if c in "\x1b\x07\u202e"]
    assert not raw, texts
    assert any("\\x1b]0;owned\\x07" in t for t in texts), texts
    assert not any("\nfake line" in t for t in texts), texts
