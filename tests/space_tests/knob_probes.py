"""Probe models for the knob-effect tests: for each knob of the built-in spaces, a model where
it should matter and two configs that must generate different code (or the reason it cannot
matter), and the helper that gets the code Inductor generates without building it.

Compiles stop once Inductor has generated a graph's code (before g++ or Triton builds it), so
most probes cost a trace and a lowering.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import torch
from frozen import Scaled
from torch import nn

from autotune.runtime.apply import compile_module
from autotune.runtime.config import CompileConfig
from autotune.space import builtin_names, load_space
from autotune.space._validate import knob_notes, vector_widths
from autotune.trials._code import _normalized

Probe = Callable[[str], tuple[nn.Module, tuple[torch.Tensor, ...]]]


# Probe models: each makes one knob's decision visible in the generated code.
class Qkv(nn.Module):
    """Three Linears reading the same input (attention's q, k, v): ``cpp.enable_concat_linear``
    makes them one GEMM. (Two Linears with biases are left alone by torch 2.13's pattern.)"""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.k, self.v = nn.Linear(32, 32), nn.Linear(32, 32), nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.q(x) * self.k(x) + self.v(x)


class Steps(nn.Module):
    """``n`` pointwise steps, each returned: ``n`` buffers that fuse vertically."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        outs = []
        for _ in range(self.n):
            x = torch.sin(x) + 1.0
            outs.append(x)
        return outs


class Fanout(nn.Module):
    """``n`` outputs reading one input: they fuse horizontally."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        return [x * (i + 2) for i in range(self.n)]


class Strided(nn.Module):
    """A load with stride 2: the tiling heuristics decline to vectorize it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, ::2] + 1.0


class Pointwise(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x) * 2


class Independent(nn.Module):
    """Two same-sized pointwise ops that share no input: only ``aggressive_fusion`` pairs them."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.sigmoid(x), torch.tanh(y)


class Mlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def on(device: str, model: nn.Module, *shapes: tuple[int, ...]) -> Any:
    torch.manual_seed(0)
    return model.to(device).eval(), tuple(torch.randn(s, device=device) for s in shapes)


@dataclass(frozen=True)
class Effect:
    """Compiling ``probe`` with ``a`` and with ``b`` (CompileConfig fields) must differ."""

    probe: Probe
    a: dict[str, Any]
    b: dict[str, Any]
    why: str
    slow: bool = False  # builds kernels for real (max-autotune benchmarks its choices)


@dataclass(frozen=True)
class Inert:
    """The knob changes nothing on this probe here, for ``reason``: compiling ``probe`` with
    each of the knob's values gives the same code."""

    probe: Probe
    reason: str
    base: dict[str, Any] = field(default_factory=dict)


def options(**options: Any) -> dict[str, Any]:
    return {"options": {k.replace("__", "."): v for k, v in options.items()}}


_MAX_AUTOTUNE = {"max_autotune": True, "coordinate_descent_tuning": True}
_WIDTH = max(vector_widths() or [0])

CPU_EFFECTS: dict[str, Effect] = {
    "compile.mode": Effect(
        lambda d: on(d, Mlp(), (16, 64)),
        options(freezing=True),
        {
            "mode": "max-autotune-no-cudagraphs",
            **options(freezing=True, max_autotune_gemm_backends="CPP", **_MAX_AUTOTUNE),
        },
        "max-autotune's C++ GEMM template engages for the frozen Linears (offered alone: on an "
        "AMX CPU its benchmark picks oneDNN's ATen GEMM for this probe, the same code as "
        "default compile)",
        slow=True,
    ),
    "compile.dynamic": Effect(
        lambda d: on(d, Pointwise(), (64, 64)),
        {"dynamic": False},
        {"dynamic": True},
        "dynamic=True compiles kernels for symbolic sizes",
    ),
    "inductor.freezing": Effect(
        lambda d: on(d, Scaled(), (8, 32)),
        {},
        options(freezing=True),
        "the weight becomes a constant and 2w is folded at compile time",
    ),
    "inductor.cpp.enable_concat_linear": Effect(
        lambda d: on(d, Qkv(), (8, 32)),
        options(freezing=True),
        options(freezing=True, cpp__enable_concat_linear=True),
        "the three frozen Linears reading x become one GEMM",
    ),
    "inductor.cpp.simdlen": Effect(
        lambda d: on(d, Pointwise(), (2048,)),
        options(cpp__simdlen=_WIDTH),
        options(cpp__simdlen=1),
        f"the widest vector width of this CPU ({_WIDTH} bits) against scalar code",
    ),
    "inductor.cpp_wrapper": Effect(
        lambda d: on(d, Pointwise(), (2048,)),
        {},
        options(cpp_wrapper=True),
        "the kernels are called from generated C++ instead of Python",
    ),
    "inductor.max_fusion_size": Effect(
        lambda d: on(d, Steps(70), (1000,)),
        options(max_fusion_size=64),
        options(max_fusion_size=128),
        "70 fusable nodes: one kernel at 128, two at 64",
    ),
    "inductor.cpp.max_horizontal_fusion_size": Effect(
        lambda d: on(d, Fanout(24), (64,)),
        options(cpp__max_horizontal_fusion_size=16),
        options(cpp__max_horizontal_fusion_size=32),
        "24 outputs of one input: one kernel at 32, two at 16",
    ),
    "inductor.cpp.enable_tiling_heuristics": Effect(
        lambda d: on(d, Strided(), (64, 128)),
        options(cpp__enable_tiling_heuristics=True),
        options(cpp__enable_tiling_heuristics=False),
        "the heuristics keep a strided load scalar; without them it is vectorized",
    ),
    "inductor.cpp.min_chunk_size": Effect(
        # cpp.threads pins the thread count: with one thread nothing is parallel anyway.
        lambda d: on(d, Pointwise(), (2048,)),
        options(cpp__threads=4, cpp__min_chunk_size=512),
        options(cpp__threads=4, cpp__min_chunk_size=4096),
        "2048 elements run in parallel at 512 per thread and serially at 4096",
    ),
}

# Knobs that generate no other code on CPU for a reason other than the device (the device's own
# reasons come from knob_notes, what `autotune spaces` prints).
CPU_INERT: dict[str, Inert] = {
    "inductor.aggressive_fusion": Inert(
        lambda d: on(d, Independent(), (64, 64), (64, 64)),
        "it offers nodes that share no data as fusion candidates, and torch 2.13's horizontal "
        "fusion refuses pairs below score_fusion_memory_threshold whatever it says (checked: "
        "same code on this probe); it may matter on other torch releases",
    ),
}

# Knobs that set the C++ compiler's flags: the same source, other kernels.
CPU_BUILD_FLAGS = {
    "inductor.cpp.enable_unsafe_math_opt_flag": True,
    "inductor.cpp.enable_floating_point_contract_flag": "fast",
}


# Knobs beyond Inductor's: their effect is not in Inductor's code, so it is proven where it shows.
LEVERS = {
    "compile.backend": "tests/trials_tests/test_levers.py: an openvino trial's ops run in "
    "OpenVINO (its watch() counts them), and a graph it cannot convert fails as backend_fallback",
    "precision.autocast": "tests/runtime_tests/test_precision.py: Inductor generates bf16 code",
    "precision.matmul": "tests/runtime_tests/test_precision.py: the outputs move (bf16 matmuls)",
    "precision.quantize": "tests/runtime_tests/test_quantize.py: the Linear weights become "
    "torchao's int8 tensors (a quarter of the bytes) and Inductor's code reads int8",
    "precision.quantize_layers": "tests/runtime_tests/test_quantize.py: except-last leaves the "
    "output head's weight a float32 Parameter",
    "precision.weights": "tests/runtime_tests/test_quantize.py: every parameter is bf16 (half "
    "the bytes) and the outputs come back bf16",
    "functorch.activation_memory_budget": "tests/runtime_tests/test_functorch_knobs.py: the "
    "forward saves fewer activations for the backward, and Inductor's code changes",
    "train.optimizer": "tests/runtime_tests/test_optimizer.py and tests/trials_tests/"
    "test_train.py: the optimizer step is traced (a graph of its own) and updates as eager",
    "generate.prefill": "tests/runtime_tests/test_parts.py: generate() runs a prefill graph of "
    "its own (and one more, dynamic, over a second prompt length) beside the decode graph",
    "shapes.plan": "tests/trials_tests/test_traffic.py: pad-pow2 compiles a graph per bucket "
    "(four over lengths 3 to 40), marked one dynamic graph, the cut outputs equal eager's",
    "shapes.eager_above": "tests/runtime_tests/test_shapes.py: batches above the threshold run "
    "eager, compiling no graph",
    "dynamo.recompile_limit": "tests/runtime_tests/test_apply.py: 64 compiles all ten shapes "
    "of a static traffic, 8 (the default) eight, the rest running eager",
    "openvino.INFERENCE_PRECISION_HINT": "tests/trials_tests/test_levers.py: bf16 moves the "
    "error from float32's to bf16's",
    "openvino.PERFORMANCE_HINT": "tests/runtime_tests/test_openvino_effect.py: the compiled "
    "model reports the hint and its streams",
    "openvino.aot_autograd": "tests/runtime_tests/test_openvino_effect.py: a convolution that "
    "the default retrace cannot compile compiles, all in OpenVINO",
}

# The built-in spaces by the device they are written for.
SPACES = {"cpu": ("cpu", "quick"), "cuda": ("cuda", "quick")}


def searched_knobs(device: str, spaces: tuple[str, ...] | None = None) -> dict[str, list[Any]]:
    """Every knob with more than one value in the built-in spaces for ``device`` (numerics
    included), by param, with the values the spaces give it."""
    knobs: dict[str, list[Any]] = {}
    for name in spaces or SPACES[device]:
        space = load_space(name, device, allow_numerics_changes=True, accuracy_contract=True)
        for knob in space.knobs:
            if knob.count > 1:
                values = knobs.setdefault(knob.param, [])
                values += [v for v in knob.values() if v not in values]
    return knobs


def device_notes(device: str) -> dict[str, str]:
    """The Inductor knobs of every built-in space that `autotune spaces` says do nothing on
    ``device``, with that note (compile.mode's note is about some of its values only)."""
    notes = {}
    for name in builtin_names():
        for knob in load_space(name, device, allow_numerics_changes=True).knobs:
            said = [n for n in knob_notes(knob, device) if "does nothing on" in n]
            if said and knob.layer == "inductor":
                notes[knob.param] = said[0]
    return notes


class _Generated(Exception):
    """Stops a compile once Inductor has generated the graph's code."""


@contextlib.contextmanager
def _stop_at_code(codes: list[str]) -> Iterator[None]:
    from torch._inductor.graph import GraphLowering

    def save(code: str) -> None:
        codes.append(code)
        raise _Generated

    with mock.patch.object(GraphLowering, "save_output_code", save):
        yield


def _generated(e: BaseException | None) -> bool:
    while e is not None:
        if isinstance(e, _Generated):
            return True
        e = e.__cause__ or e.__context__
    return False


def generated_code(probe: Probe, config: CompileConfig, device: str = "cpu") -> list[str]:
    """The code Inductor generates for the probe's first call, compiled by ``compile_module``;
    without building it unless a choice is benchmarked on the way (max-autotune)."""
    torch._dynamo.reset()
    model, args = probe(device)
    codes: list[str] = []
    with _stop_at_code(codes), torch.no_grad():
        compiled = compile_module(copy.deepcopy(model), config)
        try:
            compiled(*args)
        except Exception as e:
            if not _generated(e):
                raise
    assert codes, f"Inductor generated no code for {type(model).__name__} with {config.brief()}"
    return [_normalized(code) for code in codes]


def config(fields: dict[str, Any]) -> CompileConfig:
    return CompileConfig(**{"dynamic": False, **fields})


def with_value(base: dict[str, Any], param: str, value: Any) -> CompileConfig:
    layer, name = param.split(".", 1)
    fields = copy.deepcopy(base)
    if layer == "compile":
        fields[name] = value
        if name == "mode":
            preset = dict(torch._inductor.list_mode_options(value))
            fields["options"] = {**preset, **fields.get("options", {})}
    else:
        fields.setdefault(layer if layer == "dynamo" else "options", {})[name] = value
    return config(fields)


# The cuda and quick spaces' knobs on a GPU (marked gpu: skipped without CUDA). Knobs whose
# choice rests on benchmarks (which GEMM wins) are probed with values that cannot end alike.
class Mm(nn.Module):
    def __init__(self, n: int = 256) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n, n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ self.weight)


class TwoMm(nn.Module):
    """An intermediate of 2047 columns: comprehensive padding pads its stride."""

    def __init__(self) -> None:
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(256, 2047))
        self.w2 = nn.Parameter(torch.randn(2047, 64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ self.w1) @ self.w2


class Conv(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(16, 32, 3), nn.ReLU(), nn.Conv2d(32, 32, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


class RowSum(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(-1)


class Permute3d(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.permute(2, 0, 1) + 1.0


class Exp(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.exp(x) + 1.0


def half(device: str, model: nn.Module, *shapes: tuple[int, ...]) -> Any:
    model, args = on(device, model, *shapes)
    return model.half(), tuple(a.half() for a in args)


TRITON_GEMM = {"max_autotune": True, "max_autotune_gemm_backends": "TRITON"}

GPU_EFFECTS: dict[str, Effect] = {
    "compile.mode": Effect(
        lambda d: on(d, Pointwise(), (1024, 1024)),
        {},
        {"mode": "max-autotune-no-cudagraphs", **options(**_MAX_AUTOTUNE)},
        "max-autotune's kernels carry coordinate-descent tuning",
    ),
    "compile.dynamic": CPU_EFFECTS["compile.dynamic"],
    "inductor.freezing": CPU_EFFECTS["inductor.freezing"],
    "inductor.coordinate_descent_tuning": Effect(
        lambda d: on(d, Pointwise(), (1024, 1024)),
        options(max_autotune=True),
        options(max_autotune=True, coordinate_descent_tuning=True),
        "each Triton kernel carries coordinate_descent_tuning in its inductor_meta",
    ),
    "inductor.max_autotune_gemm_backends": Effect(
        lambda d: on(d, Mm(), (256, 256)),
        options(max_autotune=True, max_autotune_gemm_backends="ATEN"),
        options(**TRITON_GEMM),
        "ATen's mm against a Triton GEMM template",
    ),
    "inductor.epilogue_fusion": Effect(
        lambda d: on(d, Mm(), (256, 256)),
        options(**TRITON_GEMM, epilogue_fusion=False),
        options(**TRITON_GEMM, epilogue_fusion=True),
        "the relu runs inside the Triton GEMM template, not after it",
    ),
    "inductor.shape_padding": Effect(
        lambda d: half(d, Mm(1023), (1023, 1023)),
        options(shape_padding=False, force_shape_pad=True),
        options(shape_padding=True, force_shape_pad=True),
        "the 1023-wide GEMM is padded to an aligned shape",
    ),
    "inductor.comprehensive_padding": Effect(
        lambda d: on(d, TwoMm(), (64, 256)),
        options(comprehensive_padding=False),
        options(comprehensive_padding=True),
        "the 2047-column intermediate gets a padded stride",
    ),
    "inductor.layout_optimization": Effect(
        lambda d: half(d, Conv(), (8, 16, 32, 32)),
        options(layout_optimization=False, force_layout_optimization=True),
        options(layout_optimization=True, force_layout_optimization=True),
        "the convolutions run channels-last",
    ),
    "inductor.triton.persistent_reductions": Effect(
        lambda d: on(d, RowSum(), (4096, 512)),
        options(triton__persistent_reductions=False),
        options(triton__persistent_reductions=True),
        "a 512-element row is reduced without a loop",
    ),
    "inductor.triton.cooperative_reductions": Effect(
        lambda d: on(d, RowSum(), (1, 1 << 20)),
        options(triton__cooperative_reductions=False),
        options(triton__cooperative_reductions=True),
        "one row of 2^20 elements is reduced by cooperating blocks",
    ),
    "inductor.triton.prefer_nd_tiling": Effect(
        lambda d: on(d, Permute3d(), (32, 64, 128)),
        # torch's default max_tiles, as the cuda space leaves it (proven on an H200 with
        # max_tiles=3; in this form not yet run on a GPU)
        options(triton__prefer_nd_tiling=False),
        options(triton__prefer_nd_tiling=True),
        "the permutation is tiled in every dimension",
    ),
    "inductor.combo_kernels": Effect(
        lambda d: on(d, Independent(), (1024, 1024), (1024, 1024)),
        options(combo_kernels=False),
        options(combo_kernels=True),
        "the two independent ops run as one combo kernel",
    ),
    "inductor.use_fast_math": Effect(
        lambda d: on(d, Exp(), (1024, 1024)),
        options(use_fast_math=False),
        options(use_fast_math=True),
        "exp is tl_math.exp (flush to zero) instead of libdevice.exp",
    ),
    "inductor.triton.codegen_upcast_to_fp32": Effect(
        lambda d: half(d, Pointwise(), (1024, 1024)),
        options(triton__codegen_upcast_to_fp32=True),
        options(triton__codegen_upcast_to_fp32=False),
        "half-precision math stays in half precision",
    ),
}

# Knobs whose effect is not in the code: CUDA graphs (how the code runs, checked by
# test_cuda_graphs_replay), and the GEMM search space (which choices are benchmarked).
GPU_BEYOND_CODE = ("inductor.triton.cudagraphs", "inductor.max_autotune_gemm_search_space")


class FloatScaled(nn.Module):
    def forward(self, x: torch.Tensor, scale: float) -> torch.Tensor:
        return torch.sigmoid(x) * scale
