"""The levers beyond Inductor's knobs: precision, the training step, the generation's prefill,
and the backend's own options.

``[precision]`` holds ``autocast`` (``"none"``, ``"bfloat16"``, ``"float16"``) and ``matmul``
(``"highest"``, ``"high"``, ``"medium"``: ``torch.set_float32_matmul_precision``). They change
numerics on purpose, so they are searched only under an accuracy contract the user states
(``--accuracy``); without one they are left out with a note and the gate stays eager's.

``[train]`` holds ``optimizer`` (``"eager"``, ``"compiled"``: the optimizer step through
``torch.compile``, see :func:`autotune.apply_optimizer`); a space offers it for the train
workload only (``when = "workload == 'train'"``).

``[generate]`` holds ``prefill`` (``"eager"``, ``"compiled"``: how the generate workload
runs the prefill beside the decode steps the config compiles, see
:func:`autotune.runtime.config.for_generate`); a space offers it for the generate workload
only (``when = "workload == 'generate'"``).

``[shapes]`` holds ``plan`` (``"auto"``, ``"marked"``, ``"pad-pow2"``, ``"pad-64"``, ...: the
shape plan around a served model's calls, see :mod:`autotune.runtime.shapes`) and
``eager_above`` (``"none"``, or a batch size above which calls run eager: a compile
threshold); they apply the model's padding declaration, so a space offers them only where
the study has one (``when = "padding"``).

``[openvino]`` holds options of OpenVINO's ``torch.compile`` backend (see
:mod:`autotune.runtime.openvino_backend`); they are suggested only when ``compile.backend`` is
``openvino``. A backend that is not installed is left out of a built-in space with a note, and
is a problem in a space of the user's.

``[precision]`` also holds what changes the model's weights before it compiles (see
:mod:`autotune.runtime.quantize`): ``weights`` (``"float32"``, ``"bfloat16"``, ``"float16"``:
the model cast), ``quantize`` (``"none"`` or a torchao scheme: ``"int8-dynamic"``, ...) and
``quantize_layers`` (``"all"`` Linear layers, or ``"except-last"``: the output head kept).

Conditions may read what the hardware runs natively: ``cpu_flags`` (this CPU's flags from
``/proc/cpuinfo``: ``'amx_bf16' in cpu_flags``), ``cuda_capability`` (``[8, 0]`` on an A100;
none on a CPU), ``accuracy_contract`` (true when the study states one) and ``torchao`` (true
where torchao is installed).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from autotune.runtime import quantize
from autotune.runtime.config import PREFILLS
from autotune.runtime.shapes import AUTO, SHAPE_PLANS
from autotune.space._knob import Knob, did_you_mean

LAYERS = ("precision", "train", "generate", "shapes", "openvino")
PRECISION: dict[str, tuple[str, ...]] = {
    "autocast": ("none", "bfloat16", "float16"),
    "matmul": ("highest", "high", "medium"),
    "weights": ("float32", "bfloat16", "float16"),
    "quantize": ("none", *quantize.SCHEMES),
    "quantize_layers": ("all", "except-last"),
}
PRECISION_DEFAULTS = {
    "autocast": "none", "matmul": "highest", "weights": "float32", "quantize": "none",
    "quantize_layers": "all",
}  # fmt: skip
TRAIN: dict[str, tuple[str, ...]] = {"optimizer": ("eager", "compiled")}
TRAIN_DEFAULTS = {"optimizer": "eager"}
GENERATE: dict[str, tuple[str, ...]] = {"prefill": PREFILLS}
GENERATE_DEFAULTS = {"prefill": "eager"}
SHAPES: dict[str, tuple[Any, ...]] = {
    "plan": (AUTO, *SHAPE_PLANS),
    # the compile threshold: batches above it run eager ("none": every batch compiled)
    "eager_above": ("none", 1, 2, 4, 8, 16, 32, 64, 128, 256),
}
SHAPES_DEFAULTS = {"plan": AUTO, "eager_above": "none"}
# The choice layers: each knob's allowed values and the value that leaves a config as eager.
_CHOICES: dict[str, tuple[dict[str, tuple[Any, ...]], dict[str, str]]] = {
    "precision": (PRECISION, PRECISION_DEFAULTS),
    "train": (TRAIN, TRAIN_DEFAULTS),
    "generate": (GENERATE, GENERATE_DEFAULTS),
    "shapes": (SHAPES, SHAPES_DEFAULTS),
}
# Backends a space may name that are not part of torch, and what installs each.
EXTRA_BACKENDS = {"openvino": "pip install 'autotune[openvino]'"}
# Backends built for inference: a built-in space leaves them out of a train workload's search.
INFERENCE_ONLY_BACKENDS = frozenset({"openvino"})
CONTRACT_HINT = "state an accuracy contract (--accuracy 'cosine>=0.999') to search them"


def problems(knob: Knob, device: str) -> list[str]:
    """Every problem of one knob of a lever layer."""
    if knob.range is not None:
        return [f"{knob.param}: give a list of choices, not a range"]
    if knob.layer in _CHOICES:
        return _choice_problems(knob, device)
    from autotune.runtime import openvino_backend as _openvino

    return [p for v in knob.values() for p in _openvino.option_problems({knob.name: v})][:3]


def _choice_problems(knob: Knob, device: str) -> list[str]:
    table = _CHOICES[knob.layer][0]
    allowed = table.get(knob.name)
    if allowed is None:
        return [f"unknown key {knob.param}{did_you_mean(knob.name, list(table))}"]
    found = [
        f"{knob.param}: {v!r} is not one of {', '.join(map(repr, allowed))}"
        for v in knob.values()
        if v not in allowed
    ]
    if (
        knob.name in ("autocast", "weights")
        and "float16" in knob.values()
        and device.startswith("cpu")
    ):
        found.append(
            f"{knob.param}: 'float16' is for CUDA; on {device} use 'bfloat16' (on a CPU with "
            "AVX512-BF16 or AMX)"
        )
    if knob.name == "quantize":
        found += _quantize_problems(knob, device)
    return found


def _quantize_problems(knob: Knob, device: str) -> list[str]:
    """A scheme this device type or the installed torchao does not run; torchao itself
    missing, unless the knob's condition reads ``torchao`` (a built-in space's does: it is
    then left out)."""
    device_type = "cpu" if device.startswith("cpu") else "cuda"
    schemes = [v for v in knob.values() if v in quantize.SCHEMES]
    if quantize.torchao_version() is None:
        if schemes and "torchao" not in (knob.when or ""):
            return [
                f"{knob.param}: quantizing needs torchao, which is not installed here: "
                f"`{quantize.INSTALL}`, or add `torchao and` to the knob's condition so that "
                "it is left out where torchao is missing"
            ]
        return []
    return [p for v in schemes for p in quantize.scheme_problems({"quantize": v}, device_type)]


def describe(knob: Knob) -> tuple[str, Any]:
    """The knob's type and default, for ``autotune spaces --show``."""
    if knob.layer in _CHOICES:
        table, defaults = _CHOICES[knob.layer]
        return " | ".join(map(repr, table.get(knob.name, ()))), defaults.get(knob.name)
    from autotune.runtime import openvino_backend as _openvino

    spec = _openvino.OPTIONS.get(knob.name)
    default = "f32 (pinned)" if knob.name == "INFERENCE_PRECISION_HINT" else "OpenVINO's"
    return (spec.expected() if spec is not None else "unknown"), default


def chosen(layer: str, values: dict[str, Any]) -> dict[str, Any]:
    """A choice layer's values (``precision``, ``train``, ``generate``) as a config holds
    them: only those away from eager's."""
    defaults = _CHOICES[layer][1]
    return {k: v for k, v in values.items() if v != defaults.get(k)}


def installed(backend: str) -> bool:
    """Whether a backend named in :data:`EXTRA_BACKENDS` can be imported here."""
    if backend == "openvino":
        from autotune.runtime import openvino_backend as _openvino

        return _openvino.version() is not None
    return True


def context(device: str, contract: bool, reads: str, padding: bool = False) -> dict[str, Any]:
    """The values of the context names this module adds (``reads``: the text of every
    condition, so that ``nvidia-smi`` runs only when one reads the capability)."""
    on_cpu = device.startswith("cpu")
    capability = None
    if not on_cpu and "cuda_capability" in reads:
        capability = cuda_capability(device)
    return {
        "cpu_flags": sorted(cpu_flags()) if on_cpu else [],
        "cuda_capability": capability,
        "accuracy_contract": contract,
        "padding": padding,
        "torchao": _torchao_installed(),
    }


def _torchao_installed() -> bool:
    return quantize.torchao_version() is not None


@functools.cache
def cpu_flags() -> frozenset[str]:
    """This CPU's feature flags (``avx512_bf16``, ``amx_bf16``, ...); empty where unknown."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def cuda_capability(device: str) -> list[int] | None:
    """``[major, minor]`` of the CUDA device, None where unknown. Asked of ``nvidia-smi``, not
    of torch: a parent that starts trials must never initialize CUDA."""
    import os
    import shutil
    import subprocess

    from autotune import _process

    index = device.partition(":")[2] or "0"
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    query = [smi, f"--id={index}", "--query-gpu=compute_cap", "--format=csv,noheader"]
    try:
        done = _process.run_captured(query, env=os.environ, timeout_s=20)
        major, _, minor = done.stdout.strip().partition(".")
        return [int(major), int(minor or 0)] if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError):
        return None


def native_bf16(device: str) -> bool:
    """Whether ``device`` computes bf16 natively (a CPU with AVX512-BF16 or AMX-BF16)."""
    if device.startswith("cpu"):
        return bool({"avx512_bf16", "amx_bf16"} & cpu_flags())
    capability = cuda_capability(device)
    return capability is not None and capability >= [8, 0]
