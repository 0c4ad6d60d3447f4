"""The rules of a shape plan (:mod:`autotune.runtime.shapes`) as data: its plans, the padding
declaration's form, the bucket a length pads to, and the warm-up calls a best-config entry
lists. Standard library only: the config schema reads it."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

# The plans (besides "auto", the default: no plan).
SHAPE_PLANS = ("marked", "pad-pow2", "pad-16", "pad-32", "pad-64", "pad-128")
AUTO = "auto"
# The smallest bucket of pad-pow2.
PAD_FLOOR = 8
SHAPES_KEYS = ("plan", "inputs", "outputs", "eager_above")
# A plan's compile threshold: calls whose batch (dimension 0 of the declared inputs) is larger
# run the eager model (SGLang's torch_compile_max_bs).
EAGER_ABOVE = "eager_above"
PADDING_KEYS = ("inputs", "outputs")
# A warm-up plan (a best-config entry's workload.warmup): the calls apply(..., warmup="plan")
# makes, one per distinct shape the search measured, each tensor filled with ones. The search
# records the inputs it measured on the device it searched on; the caps below hold every real
# model input with room to spare (a batch of 256 RGB images of 1024x1024 is 0.8 * 2**30
# elements, a 32k x 32k attention mask exactly 2**30) and refuse a file that would allocate
# more than a model call's inputs ever take (2**31 elements: 8 GiB at float32).
WARMUP_DTYPES = (
    "bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
    "float16", "bfloat16", "float32", "float64", "complex32", "complex64", "complex128",
    "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
)  # fmt: skip
"""The dtypes a warm-up tensor may have: those torch.ones fills (no quantized or bit dtypes)."""
MAX_WARMUP_CALLS = 1024  # a traffic trace holds at most 256 distinct shapes; each call compiles
MAX_DIMS = 16  # a model input has a handful (a video batch: 5)
MAX_TENSOR_ELEMENTS = 2**30
MAX_CALL_ELEMENTS = 2**31
CALL_KEYS = ("args", "kwargs")
TENSOR_KEYS = ("shape", "dtype")
_EXAMPLE = '{"inputs": {"input_ids": {"dim": 1, "value": 0}}, "outputs": {"last_hidden_state": 1}}'
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")


def padding_problems(d: Any, where: str) -> list[str]:
    """Every problem of a padding declaration ``{"inputs": {NAME: {"dim": D, "value": V}},
    "outputs": {KEY: D}}``: NAME a keyword argument or a positional index (``"0"``), KEY an
    output's key, index, or ``""`` for a bare tensor."""
    if not isinstance(d, Mapping):
        return [f"{where}: expected an object like {_EXAMPLE}, got {_show(d)}"]
    problems = [f"{where}: unknown key {k!r}" for k in d if k not in SHAPES_KEYS]
    inputs, outputs = d.get("inputs"), d.get("outputs", {})
    if not isinstance(inputs, Mapping) or not inputs:
        problems.append(f"{where}.inputs: expected at least one input to pad, got {_show(inputs)}")
    else:
        for name, spec in inputs.items():
            at = f"{where}.inputs.{name}"
            if not (isinstance(name, str) and _NAME.fullmatch(name)):
                problems.append(f"{at}: a name must be an argument's name or a position ('0')")
            if not isinstance(spec, Mapping) or set(spec) != {"dim", "value"}:
                problems.append(f'{at}: expected {{"dim": D, "value": V}}, got {_show(spec)}')
                continue
            if not _dim(spec["dim"]):
                problems.append(f"{at}.dim: expected a dimension >= 0, got {_show(spec['dim'])}")
            if isinstance(spec["value"], bool) or not isinstance(spec["value"], (int, float)):
                problems.append(f"{at}.value: expected a number, got {_show(spec['value'])}")
    if not isinstance(outputs, Mapping):
        problems.append(f"{where}.outputs: expected an object of KEY: dim, got {_show(outputs)}")
    else:
        for key, dim in outputs.items():
            if not (isinstance(key, str) and (key == "" or _NAME.fullmatch(key))):
                problems.append(f"{where}.outputs: {key!r} is not an output's key or index")
            if not _dim(dim):
                problems.append(f"{where}.outputs.{key}: expected a dimension >= 0, got {dim!r}")
    return problems


def shapes_problems(d: Any, where: str) -> list[str]:
    """Every problem of a config's ``shapes``: a plan of :data:`SHAPE_PLANS` (``auto`` with a
    compile threshold only), the threshold (``eager_above``: a batch size >= 1) and the padding
    declaration they apply (:func:`padding_problems`)."""
    if not isinstance(d, Mapping):
        return [f"{where}: expected an object with keys {', '.join(SHAPES_KEYS)}, got {_show(d)}"]
    problems = []
    threshold = d.get(EAGER_ABOVE)
    if threshold is not None and not (_dim(threshold) and threshold >= 1):
        problems.append(
            f"{where}.{EAGER_ABOVE}: expected a batch size >= 1, got {_show(threshold)}"
        )
    plans = SHAPE_PLANS if threshold is None else (AUTO, *SHAPE_PLANS)
    if d.get("plan") not in plans:
        problems.append(
            f"{where}.plan: expected one of {', '.join(plans)}, got {_show(d.get('plan'))}"
        )
    return problems + padding_problems(d, where)


def warmup_problems(value: Any, where: str) -> list[str]:
    """Every problem of a warm-up plan: a list of at most :data:`MAX_WARMUP_CALLS` calls, each
    as :func:`call_problems` says."""
    if not isinstance(value, list):
        return [f"{where}: expected a list of calls, got {_show(value)}"]
    if len(value) > MAX_WARMUP_CALLS:
        return [
            f"{where}: {len(value)} calls, more than the {MAX_WARMUP_CALLS} a warm-up makes "
            "(each one compiles); keep the shapes the model is served with"
        ]
    return [p for i, call in enumerate(value) for p in call_problems(call, f"{where}[{i}]")]


def call_problems(call: Any, where: str) -> list[str]:
    """Every problem of one warm-up call ``{"args": [T, ...], "kwargs": {NAME: T}}``, each T a
    tensor (:func:`tensor_problems`) or null (an argument that is no tensor: the call is not
    made), its tensors at most :data:`MAX_CALL_ELEMENTS` elements in all."""
    if not isinstance(call, Mapping):
        return [f'{where}: expected {{"args": [...], "kwargs": {{...}}}}, got {_show(call)}']
    unknown = [k for k in call if k not in CALL_KEYS]
    problems = [f"{where}: unknown key {_show(k)}; a call has args and kwargs" for k in unknown]
    args, kwargs = call.get("args", []), call.get("kwargs", {})
    if not isinstance(args, list):
        return [*problems, f"{where}.args: expected a list, got {_show(args)}"]
    if not isinstance(kwargs, Mapping) or not all(isinstance(k, str) for k in kwargs):
        return [*problems, f"{where}.kwargs: expected an object of names, got {_show(kwargs)}"]
    tensors = [(f"{where}.args[{i}]", t) for i, t in enumerate(args)]
    tensors += [(f"{where}.kwargs.{k}", t) for k, t in kwargs.items()]
    for at, tensor in tensors:
        problems += [] if tensor is None else tensor_problems(tensor, at)
    if problems:
        return problems
    total = sum(_elements(t["shape"]) for _, t in tensors if t is not None)
    if total > MAX_CALL_ELEMENTS:
        return [
            f"{where}: its tensors hold {total} elements, more than the {MAX_CALL_ELEMENTS} "
            "a warm-up call may allocate; warm up with the calls themselves "
            "(warmup=[inputs, ...])"
        ]
    return []


def tensor_problems(tensor: Any, where: str) -> list[str]:
    """Every problem of one warm-up tensor ``{"shape": [D, ...], "dtype": NAME}``: at most
    :data:`MAX_DIMS` sizes >= 0 whose product is at most :data:`MAX_TENSOR_ELEMENTS`, a dtype of
    :data:`WARMUP_DTYPES`."""
    example = '{"shape": [2, 128], "dtype": "int64"}'
    if not isinstance(tensor, Mapping) or set(tensor) != set(TENSOR_KEYS):
        return [f"{where}: expected a tensor like {example} or null, got {_show(tensor)}"]
    problems = []
    dtype = tensor["dtype"]
    if not isinstance(dtype, str) or dtype not in WARMUP_DTYPES:
        problems.append(
            f"{where}.dtype: {_show(dtype)} is not a dtype a warm-up makes; use one of "
            f"{', '.join(WARMUP_DTYPES)}"
        )
    shape = tensor["shape"]
    if not (isinstance(shape, list) and len(shape) <= MAX_DIMS and all(map(_dim, shape))):
        return [
            *problems,
            f"{where}.shape: expected a list of at most {MAX_DIMS} sizes >= 0, got {_show(shape)}",
        ]
    if any(size > MAX_TENSOR_ELEMENTS for size in shape) or (
        _elements(shape) > MAX_TENSOR_ELEMENTS
    ):
        problems.append(
            f"{where}.shape: {_show(shape)} holds more than the {MAX_TENSOR_ELEMENTS} "
            "elements a warm-up tensor may have; warm up with the calls themselves "
            "(warmup=[inputs, ...])"
        )
    return problems


def bucket(length: int, plan: str) -> int:
    """The padded length of a request of ``length`` under ``plan``.

    Example:
        >>> bucket(37, "pad-pow2"), bucket(37, "pad-32"), bucket(3, "pad-pow2")
        (64, 64, 8)
    """
    if plan == "pad-pow2":
        return max(PAD_FLOOR, 1 << max(0, length - 1).bit_length())
    step = int(plan.removeprefix("pad-"))
    return -(-length // step) * step


def pads(shapes: Mapping[str, Any]) -> bool:
    """Whether the plan pads (its compiled code then sees static shapes: ``dynamic=False``)."""
    return str(shapes.get("plan", "")).startswith("pad-")


def _elements(shape: list[int]) -> int:
    return math.prod(shape)


def _dim(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _show(value: Any) -> str:
    try:
        text = repr(value)
    except ValueError:  # an integer past sys.get_int_max_str_digits()
        return f"a {type(value).__name__} too long to show"
    return text if len(text) <= 80 else text[:77] + "..."
