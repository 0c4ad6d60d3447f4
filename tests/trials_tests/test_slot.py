"""The device slot: the measuring trial holds it throughout; a builder lets it go while
Inductor compiles, where its config launches nothing on the device meanwhile."""

from __future__ import annotations

import fcntl

import pytest
import torch._inductor.compile_fx as compile_fx_module

from autotune.runtime.config import CompileConfig
from autotune.trials import TrialSpec
from autotune.trials._slot import _compiles_off_device, device_slot


def free(path) -> bool:
    """Whether another process (another open file) could take the slot now."""
    with open(path, "a+") as other:
        try:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(other, fcntl.LOCK_UN)
        return True


def build(config: CompileConfig, slot: str | None = None) -> TrialSpec:
    return TrialSpec("m.py", "cuda", config.to_dict(), build_only=True, device_slot=slot)


@pytest.mark.parametrize(
    "config, off_device",
    [
        (CompileConfig(), True),
        (CompileConfig(options={"coordinate_descent_tuning": True}), True),
        (CompileConfig(mode="max-autotune-no-cudagraphs"), False),  # benchmarks kernels
        (CompileConfig(options={"max_autotune_gemm": True}), False),
        (CompileConfig(options={"freezing": True}), False),  # folds constants on the device
        (CompileConfig(backend="cudagraphs"), False),
    ],
)
def test_a_builder_lets_the_slot_go_only_where_its_compile_runs_nothing_on_the_device(
    config, off_device
):
    assert _compiles_off_device(build(config)) is off_device
    measuring = TrialSpec("m.py", "cuda", config.to_dict())
    assert not _compiles_off_device(measuring)  # the measuring trial holds it throughout


def test_the_slot_is_free_while_a_builder_compiles_and_held_before_and_after(
    tmp_path, monkeypatch
):
    slot = tmp_path / "slot.lock"
    seen = []

    def compile_fx(gm, inputs, depth=0):  # Inductor's compile_fx calls itself for some graphs
        seen.append(free(slot))
        if depth == 0:
            compile_fx_module.compile_fx(gm, inputs, depth=1)
        seen.append(free(slot))

    monkeypatch.setattr(compile_fx_module, "compile_fx", compile_fx)
    with device_slot(build(CompileConfig(), str(slot))):
        assert not free(slot)  # set-up runs eager on the device: held
        compile_fx_module.compile_fx(None, [])
        assert not free(slot)  # the compiled graph runs next: held again
    assert seen == [True, True, True, True]  # free throughout the outermost compile
    assert free(slot)  # the process's end (here: the block's) lets it go
    assert compile_fx_module.compile_fx is compile_fx  # the patch is undone


def test_a_measuring_trial_and_a_max_autotune_build_hold_the_slot_while_compiling(
    tmp_path, monkeypatch
):
    slot = tmp_path / "slot.lock"
    seen = []
    monkeypatch.setattr(compile_fx_module, "compile_fx", lambda *a: seen.append(free(slot)))
    for spec in (
        TrialSpec("m.py", "cuda", CompileConfig().to_dict(), device_slot=str(slot)),
        build(CompileConfig(mode="max-autotune"), str(slot)),
    ):
        with device_slot(spec):
            compile_fx_module.compile_fx(None, [])
    assert seen == [False, False]


def test_without_a_slot_nothing_is_locked(tmp_path):
    with device_slot(TrialSpec("m.py", "cpu", None)):
        pass
    assert list(tmp_path.iterdir()) == []
