"""One best-config file for several machines: reading and writing entries, choosing the
entry for a machine, and autotune.apply picking it (the device name is faked)."""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from torch._dynamo.eval_frame import OptimizedModule

import autotune
from autotune.runtime import apply as apply_module
from autotune.runtime.config import (
    BestConfig,
    CompileConfig,
    ConfigError,
    ConfigFile,
    EnvironmentMismatchWarning,
)
from autotune.runtime.select import choose
from autotune.ship import CACHE_SUFFIX, artifact_name, write_entry

TORCH = torch.__version__


def _entry(
    device_name: str, torch_version: str = TORCH, device: str = "cpu", **more: Any
) -> BestConfig:
    """An entry whose config compiles only ``layers.<i>``: which one shows what was applied."""
    layer = more.pop("layer", 0)
    config = CompileConfig(backend="eager", scope={"compile": [f"layers.{layer}"]})
    environment = {"device": device, "device_name": device_name, "torch": torch_version}
    environment.update(more.pop("environment", {}))
    return BestConfig(decision="compile", reason="r", config=config, environment=environment,
                      **more)  # fmt: skip


def _here(
    device_name: str, torch_version: str = TORCH, device: str = "cpu", **more: Any
) -> dict[str, Any]:
    return {"device": device, "device_name": device_name, "torch": torch_version, **more}


class _Layers(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers[1](self.layers[0](x))


def _compiled_layer(model: torch.nn.Module) -> int | None:
    kinds = [isinstance(m, OptimizedModule) for m in model.layers]  # type: ignore[union-attr]
    return kinds.index(True) if True in kinds else None


@pytest.fixture
def fake_machine(monkeypatch):
    """Makes autotune.apply see the machine ``set(device_name, torch_version)`` describes."""
    seen: dict[str, Any] = {}

    def fingerprint(device: str) -> dict[str, Any]:
        return {**seen, "device": device}

    monkeypatch.setattr(apply_module, "environment_fingerprint", fingerprint)

    def set_machine(device_name: str, torch_version: str = TORCH) -> None:
        seen.update(device_name=device_name, torch=torch_version)

    return set_machine


def test_a_file_of_one_entry_is_written_as_before_and_two_as_entries(tmp_path: Path) -> None:
    path = tmp_path / "best.json"
    assert write_entry(path, _entry("CPU A")) == f"wrote {path}"
    assert json.loads(path.read_text())["schema_version"] == 1
    note = write_entry(path, _entry("CPU B", layer=1))
    assert "added the entry for CPU B" in note and "2 entries" in note
    data = json.loads(path.read_text())
    assert data["schema_version"] == 2 and len(data["entries"]) == 2
    file = ConfigFile.load(path)
    assert [e.environment["device_name"] for e in file.entries] == ["CPU A", "CPU B"]


def test_the_same_machine_replaces_its_entry_and_its_old_artifacts(tmp_path: Path) -> None:
    path = tmp_path / "best.json"
    stale = tmp_path / artifact_name(path, _entry("CPU A"), CACHE_SUFFIX)
    stale.write_bytes(b"x")
    cache = _artifact(stale)
    write_entry(path, _entry("CPU A", cache=cache))
    write_entry(path, _entry("CPU B"))
    note = write_entry(path, _entry("CPU A", layer=1))
    assert "replaced the entry for CPU A" in note and "1 other entry kept" in note
    file = ConfigFile.load(path)
    assert len(file.entries) == 2
    assert file.entry_for("CPU A", TORCH).config.scope.compile == ("layers.1",)  # type: ignore[union-attr]
    assert not stale.exists()


def _artifact(path: Path, sha256: str | None = None) -> dict:
    digest = sha256 or hashlib.sha256(path.read_bytes()).hexdigest()
    return {"kind": "inductor-cache-dir", "path": path.name, "sha256": digest,
            "bytes": path.stat().st_size, "valid_for": {}}  # fmt: skip


@pytest.mark.parametrize(
    "case", ["the study's database", "the model file", "edited since", "a link", "of another file"]
)
def test_replacing_an_entry_deletes_nothing_autotune_did_not_write(tmp_path, case) -> None:
    """An entry naming `autotune.db` as its cache used to delete the study's database."""
    path = tmp_path / "best.json"
    names = {"the study's database": "autotune.db", "the model file": "model.py",
             "of another file": "other.cache.tar.gz"}  # fmt: skip
    target = tmp_path / names.get(case, "best.cpu.cache.tar.gz")
    target.write_bytes(b"precious")
    record = _artifact(target)
    if case == "edited since":
        target.write_bytes(b"precious, edited")
    if case == "a link":
        real = tmp_path / "real"
        target.rename(real)
        target.symlink_to(real)
    write_entry(path, _entry("CPU A", cache=record))

    write_entry(path, _entry("CPU A", layer=1))

    assert target.exists() and b"precious" in target.read_bytes()


def test_writing_into_a_file_that_is_not_a_best_config_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "best.json"
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="move it away or pass another --out"):
        write_entry(path, _entry("CPU A"))
    assert path.read_text() == "{not json"


def test_a_file_of_several_entries_lists_every_problem_with_its_index() -> None:
    good = _entry("CPU A").to_dict()
    bad = {**_entry("CPU B").to_dict(), "decision": "maybe"}
    with pytest.raises(ConfigError) as caught:
        ConfigFile.from_dict({"schema_version": 2, "entries": [good, bad], "extra": 1})
    text = str(caught.value)
    assert "entries[1].decision" in text and "extra: unknown key" in text
    with pytest.raises(ConfigError, match="a second entry for CPU A"):
        ConfigFile.from_dict({"schema_version": 2, "entries": [good, good]})
    with pytest.raises(ConfigError, match="newer than the 2"):
        ConfigFile.from_dict({"schema_version": 3, "entries": [good]})


def test_load_of_a_single_best_config_refuses_a_file_of_several(tmp_path: Path) -> None:
    path = tmp_path / "fleet.json"
    ConfigFile([_entry("CPU A"), _entry("CPU B")]).dump(path)
    with pytest.raises(ConfigError, match="holds 2 entries.*autotune.ConfigFile.load"):
        autotune.load(path)
    ConfigFile([_entry("CPU A")]).dump(path)
    assert autotune.load(path).environment["device_name"] == "CPU A"


def test_choose_prefers_the_machine_then_its_torch_then_its_kind() -> None:
    a, b = _entry("CPU A"), _entry("CPU B", "2.11.0")
    h100 = _entry("NVIDIA H100 80GB HBM3", device="cuda:0", environment={"capability": "9.0"})
    entries = [a, b, h100]
    assert choose(entries, _here("CPU A")).entry is a
    assert choose(entries, _here("CPU A")).match == "exact"

    other_torch = choose(entries, _here("CPU B"))
    assert (other_torch.entry, other_torch.match) == (b, "other-torch")
    assert "same device, other torch" in other_torch.why

    closest = choose(entries, _here("CPU C"))
    assert (closest.entry, closest.match) == (a, "same-class")  # same torch first
    h100_pcie = choose(entries, _here("NVIDIA H100 PCIe", device="cuda:0", capability="9.0"))
    assert (h100_pcie.entry, h100_pcie.match) == (h100, "same-class")

    a100 = choose(entries, _here("NVIDIA A100", device="cuda:0", capability="8.0"))
    assert a100.entry is None and "compute capability 8.0" in a100.why
    assert "autotune search --out" in a100.why


def test_apply_picks_the_entry_of_the_machine_it_runs_on(tmp_path, fake_machine) -> None:
    path = tmp_path / "fleet.json"
    ConfigFile([_entry("CPU A", layer=0), _entry("CPU B", layer=1)]).dump(path)
    for device_name, layer in (("CPU A", 0), ("CPU B", 1)):
        fake_machine(device_name)
        with warnings.catch_warnings():
            warnings.simplefilter("error", EnvironmentMismatchWarning)
            model = autotune.apply(_Layers(), path)
        assert _compiled_layer(model) == layer


def test_apply_falls_back_to_the_closest_entry_with_a_warning(tmp_path, fake_machine) -> None:
    path = tmp_path / "fleet.json"
    ConfigFile([_entry("CPU A", "2.11.0", layer=0), _entry("CPU B", layer=1)]).dump(path)
    fake_machine("CPU A")
    with pytest.warns(EnvironmentMismatchWarning, match="using the one for CPU A, torch 2.11.0"):
        model = autotune.apply(_Layers(), path)
    assert _compiled_layer(model) == 0


def test_apply_without_a_usable_entry_returns_the_model_or_raises_when_strict(
    tmp_path, fake_machine
) -> None:
    path = tmp_path / "gpu_only.json"
    ConfigFile(
        [_entry("NVIDIA L4", device="cuda:0"), _entry("NVIDIA H100", device="cuda:0")]
    ).dump(path)
    fake_machine("CPU A")
    model = _Layers()
    with pytest.warns(EnvironmentMismatchWarning, match="returned uncompiled"):
        assert autotune.apply(model, path) is model
    assert _compiled_layer(model) is None
    with pytest.raises(ConfigError, match=r"strict=True.*NVIDIA L4.*NVIDIA H100"):
        autotune.apply(_Layers(), path, strict=True)


def test_artifact_names_are_one_per_entry(tmp_path: Path) -> None:
    a = artifact_name(tmp_path / "best.json", _entry("Intel(R) Xeon(R) CPU @ 2.20GHz"), ".pt2")
    b = artifact_name(tmp_path / "best.json", _entry("NVIDIA H100 80GB HBM3"), ".pt2")
    assert a != b and a.startswith("best.intel-xeon-") and a.endswith(".pt2")
    assert "/" not in a and " " not in b


def test_replacing_an_entry_keeps_another_best_config_files_artifacts(tmp_path: Path) -> None:
    """Issue 56, item 8: the pattern for model.json's artifacts (STEM, any slug, a suffix) also
    matched model.v2.cache.tar.gz, model.v2.json's cache, which was deleted."""
    path = tmp_path / "model.json"
    theirs = tmp_path / "model.v2.cache.tar.gz"
    theirs.write_bytes(b"model.v2.json's cache")
    write_entry(path, _entry("CPU A", cache=_artifact(theirs)))
    ours = tmp_path / artifact_name(path, _entry("CPU B"), CACHE_SUFFIX)
    ours.write_bytes(b"model.json's cache")
    write_entry(path, _entry("CPU B", cache=_artifact(ours)))

    write_entry(path, _entry("CPU A", layer=1))
    write_entry(path, _entry("CPU B", layer=1))

    assert theirs.read_bytes() == b"model.v2.json's cache"
    assert not ours.exists()  # the name autotune gives CPU B's cache beside model.json
