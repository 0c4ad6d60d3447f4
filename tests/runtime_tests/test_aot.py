"""AOTInductor packages: built without their weights, fed the model's tensors at load, refused
when changed, and not attempted where one package cannot serve the config; with frozen
weights, built with them and refused for a model with others."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from autotune.runtime.aot import KIND, PackageMismatchError, load_package
from autotune.runtime.cache import CacheRefusedError
from autotune.runtime.config import CompileConfig, Scope
from autotune.runtime.fingerprint import weights_sha256
from autotune.ship._aot import PackageError, build_package, why_not_packaged
from autotune.workload import Call


def _tiny() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).eval()


def _calls(*batches: int) -> list[Call]:
    return [Call((torch.randn(batch, 16),), {}) for batch in batches]


def _new_weights(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: torch.randn_like(value) for name, value in model.state_dict().items()}


def _assert_runs_like(packaged: nn.Module, model: nn.Module, x: torch.Tensor) -> None:
    with torch.no_grad():
        torch.testing.assert_close(packaged(x), model(x), rtol=1e-4, atol=1e-4)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[dict[str, Any], Path]:
    """One package of the tiny model for the whole module: (entry, path)."""
    path = tmp_path_factory.mktemp("aot") / "best.pt2"
    entry = build_package(_tiny(), _calls(8), CompileConfig(), path)
    return entry, path


# --- why_not_packaged: static reasons, no export ---


@pytest.mark.parametrize(
    ("config", "graph_breaks", "reason"),
    [
        (CompileConfig(backend="aot_eager"), 0, "the backend is 'aot_eager'"),
        (CompileConfig(scope=Scope(compile=("0", "2"))), 0, "the scope is regional (0, 2)"),
        (CompileConfig(scope=Scope(disable=("1",))), 0, "the scope keeps 1 eager"),
        (CompileConfig(), 2, "runs as 3 graphs (2 graph breaks)"),
    ],
)
def test_why_not_packaged_names_the_reason(config, graph_breaks, reason):
    assert reason in (why_not_packaged(config, _calls(8), graph_breaks) or "")


def test_several_shapes_need_a_config_that_is_not_static():
    calls = _calls(8, 16)

    assert "2 distinct input shapes" in (
        why_not_packaged(CompileConfig(dynamic=False), calls, 0) or ""
    )
    assert why_not_packaged(CompileConfig(dynamic=None), calls, 0) is None
    assert why_not_packaged(CompileConfig(dynamic=False), _calls(8, 8), None) is None


# --- failures before any compile ---


class _DataDependent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:  # Python control flow on a tensor's value: export cannot trace it
            return self.fc(x)
        return -self.fc(x)


class _WithTensorConstant(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x) * torch.tensor([1.0, 2.0, 3.0, 4.0])


def test_a_model_export_cannot_trace_gives_a_one_line_reason(tmp_path):
    with pytest.raises(PackageError, match="^torch.export failed: ") as info:
        build_package(_DataDependent(), _calls(8), CompileConfig(), tmp_path / "p.pt2")

    assert "\n" not in str(info.value) and len(str(info.value)) < 250
    assert not (tmp_path / "p.pt2").exists()


def test_tensors_that_are_not_parameters_or_buffers_are_refused(tmp_path):
    with pytest.raises(PackageError, match="neither parameters nor buffers .*lifted_tensor"):
        build_package(_WithTensorConstant(), _calls(8), CompileConfig(), tmp_path / "p.pt2")


def test_a_missing_package_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="is not there"):
        load_package({"sha256": "0" * 64}, tmp_path / "gone.pt2", _tiny())


# --- one real package (slow) ---


@pytest.mark.slow
def test_the_entry_records_the_package(built):
    entry, path = built

    assert entry["kind"] == KIND and entry["path"] == "best.pt2"
    assert entry["bytes"] == path.stat().st_size and entry["weights"] == "from-model"


@pytest.mark.slow
def test_a_loaded_package_computes_what_eager_computes(built):
    entry, path = built
    model = _tiny()

    packaged = load_package(entry, path, model)

    _assert_runs_like(packaged, model, torch.randn(8, 16))
    assert packaged._orig_mod is model
    assert list(packaged.parameters()) == list(model.parameters())


@pytest.mark.slow
def test_weights_come_from_the_model_not_the_package(built):
    entry, path = built
    model = _tiny()
    model.load_state_dict(_new_weights(model))  # retrained: same architecture, new weights

    packaged = load_package(entry, path, model)

    _assert_runs_like(packaged, model, torch.randn(8, 16))


@pytest.mark.slow
def test_weights_loaded_after_the_package_are_seen(built):
    entry, path = built
    model = _tiny()
    packaged = load_package(entry, path, model)
    x = torch.randn(8, 16)

    model.load_state_dict(_new_weights(model))  # in place: the package reads these tensors
    _assert_runs_like(packaged, model, x)
    model.load_state_dict(_new_weights(model), assign=True)  # new tensor objects
    _assert_runs_like(packaged, model, x)
    model[0].weight.data = torch.randn(32, 16)  # new storage under the same parameter
    _assert_runs_like(packaged, model, x)


@pytest.mark.slow
def test_a_changed_package_is_refused(built, tmp_path):
    entry, path = built
    changed = tmp_path / path.name
    shutil.copy(path, changed)
    with open(changed, "ab") as f:
        f.write(b"\0")

    with pytest.raises(CacheRefusedError, match="changed or replaced after it was written"):
        load_package(entry, changed, _tiny())


@pytest.mark.slow
def test_a_model_of_another_shape_or_dtype_is_refused(built):
    entry, path = built
    wider = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))

    with pytest.raises(PackageMismatchError, match=r"0.weight: float32 cpu \[32, 16\] expected"):
        load_package(entry, path, wider)
    packaged = load_package(entry, path, _tiny())
    packaged._orig_mod.double()
    with pytest.raises(PackageMismatchError, match="the model has float64"):
        packaged(torch.randn(8, 16, dtype=torch.float64))


@pytest.mark.slow
def test_shapes_that_differ_across_calls_become_dynamic(tmp_path):
    model, calls = _tiny(), _calls(1, 8)  # traced on 8: export would specialize a size of 1

    entry = build_package(model, calls, CompileConfig(dynamic=None), tmp_path / "dyn.pt2")

    packaged = load_package(entry, tmp_path / "dyn.pt2", model)
    for batch in (1, 6):  # 6: a batch size never seen
        _assert_runs_like(packaged, model, torch.randn(batch, 16))


# --- frozen weights (slow) ---


@pytest.mark.slow
def test_a_frozen_config_packages_its_weights_and_serves_only_those(built, tmp_path):
    """Freezing folds and packs the weights at build time: the package carries them, records
    which weights they were, and serves a model only when its weights are those."""
    model = _tiny()
    path = tmp_path / "frozen.pt2"

    entry = build_package(model, _calls(8), CompileConfig(options={"freezing": True}), path)

    assert entry["weights"] == "embedded" and entry["weights_sha256"] == weights_sha256(model)
    # The package holds the weights themselves (the biases byte for byte; the weights are
    # prepacked into another layout), where the unfrozen one takes them from the model. Its
    # size says nothing: the generated code differs from build to build by more than 3 KB.
    biases = [model[0].bias, model[2].bias]
    frozen_bytes, plain_bytes = path.read_bytes(), built[1].read_bytes()
    for bias in biases:
        raw = bias.detach().numpy().tobytes()
        assert raw in frozen_bytes and raw not in plain_bytes
    same = _tiny()  # the same seed: the same weights, other tensor objects
    packaged = load_package(entry, path, same)
    _assert_runs_like(packaged, same, torch.randn(8, 16))
    retrained = _tiny()
    retrained.load_state_dict(_new_weights(retrained))
    with pytest.raises(PackageMismatchError, match="embeds the weights it was built from"):
        load_package(entry, path, retrained)


def test_a_weights_digest_covers_values_names_and_dtypes():
    model = _tiny()
    digest = weights_sha256(model)
    assert len(digest) == 64 and digest == weights_sha256(_tiny())
    with torch.no_grad():
        model[0].bias[3] += 1.0
    assert weights_sha256(model) != digest
    assert weights_sha256(_tiny().double()) != digest


@pytest.mark.slow
def test_a_build_that_fails_its_check_leaves_the_package_it_replaces(built, tmp_path, monkeypatch):
    """The new package is built and checked under a temporary name: the one already shipped
    keeps serving when the new one is refused (it was deleted first, before)."""
    from autotune.ship import _aot as aot

    entry, path = built
    shipped = tmp_path / path.name
    shutil.copy(path, shipped)

    def differs(*args: Any) -> None:
        raise PackageError("the package's outputs differ from eager")

    monkeypatch.setattr(aot, "_check_outputs", differs)
    with pytest.raises(PackageError, match="differ from eager"):
        build_package(_tiny(), _calls(8), CompileConfig(), shipped)

    assert shipped.read_bytes() == path.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    load_package(entry, shipped, _tiny())  # still the file its record describes


def test_a_package_is_not_built_for_a_config_naming_a_compiler(tmp_path):
    from autotune.runtime.config import UnsafeKnobError

    config = CompileConfig(options={"cpp.cxx": [None, "/path/prog"]})
    with pytest.raises(UnsafeKnobError, match="options.cpp.cxx: names a program"):
        build_package(_tiny(), _calls(8), config, tmp_path / "best.pt2")
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_a_package_holds_its_own_name_not_the_temporary_one(built):
    """AOTInductor names the package's folders after the file's stem: the package is built
    under its own name (in a private folder), so what ships names nothing temporary."""
    import zipfile

    _, path = built
    with zipfile.ZipFile(path) as archive:
        tops = {name.split("/", 1)[0] for name in archive.namelist()}
    assert tops == {path.stem}
