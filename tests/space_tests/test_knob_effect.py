"""Every knob of the built-in spaces takes effect through autotune's own compile path.

A knob is proven by its effect, never by having been passed: ``options={"freezing": True}`` was
passed for weeks and changed nothing. For each knob the built-in spaces search, a probe model
where the knob should matter (``knob_probes``) is compiled through ``compile_module`` (what
trials, finalists, cache export and ``autotune.apply`` all use) with two values of the knob,
and the generated code must differ; knobs that set the C++ compiler's flags must make g++ build
other kernels. A knob that cannot matter on this device, or on this torch, is listed with the
reason, and that claim is checked too: the probe's code is then the same. The cuda space's
knobs are checked on a GPU by ``test_knob_effect_gpu.py``.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import torch

from autotune.runtime.apply import compile_module
from autotune.space import builtin_names
from space_tests.knob_probes import (
    CPU_BUILD_FLAGS,
    CPU_EFFECTS,
    CPU_INERT,
    GPU_BEYOND_CODE,
    GPU_EFFECTS,
    LEVERS,
    SPACES,
    Pointwise,
    Probe,
    config,
    device_notes,
    generated_code,
    on,
    searched_knobs,
    with_value,
)


def test_every_searched_knob_is_proven_or_explained() -> None:
    assert set(builtin_names()) <= {name for names in SPACES.values() for name in names}
    explained = set(CPU_EFFECTS) | set(CPU_INERT) | set(CPU_BUILD_FLAGS) | set(device_notes("cpu"))
    explained |= set(LEVERS)
    missing = sorted(set(searched_knobs("cpu")) - explained)
    assert not missing, f"knobs of the CPU spaces with no effect check: {missing}"
    explained = (
        set(GPU_EFFECTS) | set(GPU_BEYOND_CODE) | set(CPU_INERT) | set(device_notes("cuda"))
    )
    # The same autocast and matmul-precision code runs on either device (torch.autocast of the
    # module's device type); their CUDA effect is not checked on a GPU yet.
    explained |= {"precision.autocast", "precision.matmul"}
    # The same cast and torchao quantize_ run on either device (autotune.runtime.quantize);
    # their CUDA kernels are torchao's, not checked on a GPU yet.
    explained |= {"precision.weights", "precision.quantize", "precision.quantize_layers"}
    # The partitioner, the compiled optimizer step, the prefill's part and the shape plan are
    # the same code on either device.
    explained |= {"functorch.activation_memory_budget", "train.optimizer", "generate.prefill"}
    # marks, pads and routes around the call, and Dynamo's limit, the same on either device
    explained |= {"shapes.plan", "shapes.eager_above", "dynamo.recompile_limit"}
    missing = sorted(set(searched_knobs("cuda")) - explained)
    assert not missing, f"knobs of the CUDA spaces with no check on a GPU: {missing}"


_PARAMS = [
    pytest.param(p, marks=[pytest.mark.slow] if e.slow else [], id=p)
    for p, e in CPU_EFFECTS.items()
]


@pytest.mark.parametrize("param", _PARAMS)
def test_the_knob_changes_the_generated_code(param: str) -> None:
    effect = CPU_EFFECTS[param]
    a = generated_code(effect.probe, config(effect.a))
    b = generated_code(effect.probe, config(effect.b))
    assert a != b, f"{param} generated the same code on its probe; expected: {effect.why}"


@pytest.mark.parametrize("param", sorted(CPU_INERT))
def test_a_knob_listed_inert_generates_the_same_code(param: str) -> None:
    inert = CPU_INERT[param]
    values = searched_knobs("cpu")[param]
    codes = [generated_code(inert.probe, with_value(inert.base, param, v)) for v in values]
    assert all(code == codes[0] for code in codes), (
        f"{param} changes the code on its probe: it is not inert on torch {torch.__version__} "
        "(move it to CPU_EFFECTS)"
    )


def test_knobs_said_to_do_nothing_on_cpu_generate_the_same_code() -> None:
    """What `autotune spaces` notes as Triton/GPU-only changes no C++ code, on the probe where
    it changes Triton code (or a plain pointwise one)."""
    pointwise: Probe = lambda d: on(d, Pointwise(), (64, 64))  # noqa: E731
    knobs = searched_knobs("cpu", tuple(builtin_names()))
    for param in device_notes("cpu"):
        effect = GPU_EFFECTS.get(param)
        if effect is not None:
            configs = [config(effect.a), config(effect.b)]
        else:
            configs = [with_value({}, param, value) for value in knobs[param]]
        probe = effect.probe if effect is not None else pointwise
        codes = [_kernels(generated_code(probe, c)) for c in configs]
        assert codes[0] == codes[1], f"{param} changed the C++ code, but it is noted inert"


def _kernels(codes: list[str]) -> list[str]:
    """The code less the inputs' shape assertions, which Inductor leaves out when asked for
    CUDA graphs (static inputs), even on a CPU that then runs no graph."""
    return [re.sub(r"^ *assert_size_stride\(.*\n", "", code, flags=re.MULTILINE) for code in codes]


def _built(cache: Path) -> set[str]:
    return {str(p.relative_to(cache)) for p in cache.rglob("*.so")}


@pytest.mark.slow
def test_compiler_flag_knobs_build_other_kernels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same source, other flags: the kernel cache (keyed by source and command) builds anew,
    while compiling the same config again builds nothing."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    model, (x,) = on("cpu", Pointwise(), (2048,))

    def build(options: dict[str, Any]) -> set[str]:
        torch._dynamo.reset()
        with torch.no_grad():
            compile_module(copy.deepcopy(model), config({"options": options}))(x)
        return _built(tmp_path)

    plain = build({})
    assert plain, "the probe built no kernel"
    assert build({}) == plain  # the same config: nothing new
    for param, value in CPU_BUILD_FLAGS.items():
        before = _built(tmp_path)
        after = build({param.removeprefix("inductor."): value})
        assert after - before, f"{param}={value!r} built no other kernel"
