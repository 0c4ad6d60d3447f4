"""Which torch.compile knobs a config may set when it comes from data: the registry of unsafe
knobs. Standard library only at import; torch is read when a knob's declared type is needed.

A config is data: a best-config file, a study's row in a shared database, a search space. A
knob whose value names a program, a compiler, flags passed to one, a file or a folder, or that
turns on debug output written to disk, makes such data run a program or write where it likes
(``inductor.cpp.cxx = ["/path/prog"]`` makes Inductor run ``/path/prog`` as its C++ compiler).
Those knobs are refused wherever a config comes from, with the reason below; a user who means
it opts in by name, in a space file of their own (``[unsafe] knobs = [...]``) or with
``autotune.apply(..., allow_unsafe_knobs=[...])``. Nothing read from a database can opt in.

A knob is safe only when it is in ``reviewed_knobs.txt`` (every option of torch's Inductor,
Dynamo and functorch configs that a person read and judged to change code generation, tracing
or the forward/backward partition only), its value fits the type torch declares, and a
free-text knob's value is one the review allows. A knob added by a newer torch is refused
until it is reviewed (tests/runtime_tests/test_safety.py and test_functorch_knobs.py walk
every option of the installed torch).
"""

from __future__ import annotations

import fnmatch
import functools
import types
import typing
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

PROGRAM = "names a program or compiler that torch runs"
FLAGS = "passes flags or a target to a compiler that torch runs"
PATH = "names a file or folder that torch reads code from or writes to"
DEBUG = "turns on debug, trace, profiling or repro output that torch writes to disk or runs"
CODE = "holds Python code (a callable, a graph pass, a class, a hook)"
REMOTE = "reads or writes compiled code through a remote cache"
TESTING = "exists for torch's own tests (it injects bugs, sleeps or fakes results)"
PRIVATE = "is private to torch (a leading underscore) or describes torch itself"
PACKAGING = "controls AOTInductor packaging, which autotune sets itself when it builds a package"
PROCESS = "changes how torch starts its compile workers"
GUARDS = "torch marks it unsafe: it skips checks that keep compiled code correct"
CACHE = "lets torch's compile cache keep or serve code that its key may not describe"
UNREVIEWED = (
    "is not among the knobs autotune has reviewed: torch {torch} may have added it after the "
    "review, or its value is free text, a list or a structure that can name anything"
)

# Patterns over "layer.name" (fnmatch), first match wins: each names why the knob is refused.
RULES: tuple[tuple[str, str], ...] = (
    ("*_dir", PATH),
    ("*_dir_root", PATH),
    ("*_path", PATH),
    ("*logpath", PATH),
    ("*_home", PATH),
    ("*_root", PATH),
    ("*file_name*", PATH),
    ("inductor.trace.*", DEBUG),
    ("inductor.test_configs.*", TESTING),
    ("*TESTING_ONLY*", TESTING),
    ("*_for_testing", TESTING),
    ("dynamo.enable_trace_unittest", TESTING),
    ("inductor.aot_inductor.*", PACKAGING),
    ("inductor.aot_inductor_mode.*", PACKAGING),
    ("inductor.cpp.cxx", PROGRAM),
    ("inductor.cuda.cuda_cxx", PROGRAM),
    ("inductor.cpp.march", FLAGS),
    ("inductor.*.arch", FLAGS),
    ("inductor.*compile_opt_level", FLAGS),
    ("inductor.*.version", FLAGS),
    ("inductor.halide.*_target", FLAGS),
    ("inductor.cpp.vec_isa_ok", FLAGS),
    ("*remote*", REMOTE),
    ("*debug*", DEBUG),
    ("*profile*", DEBUG),
    ("*proton*", DEBUG),
    ("*dump*", DEBUG),
    ("*repro*", DEBUG),
    ("*.log_*", DEBUG),
    ("*_log", DEBUG),
    ("*objgraph*", DEBUG),
    ("*history_recording*", DEBUG),
    ("*generate_test_runner", DEBUG),
    ("*ptxas_info", DEBUG),
    ("inductor.autoheuristic_collect.*", DEBUG),
    ("*print_kernel_resource_usage", DEBUG),
    ("*save_temps", DEBUG),
    ("inductor.save_args", DEBUG),
    ("inductor.enabled_metric_tables", DEBUG),
    ("inductor.generate_intermediate_hooks", DEBUG),
    ("inductor.benchmark_harness", DEBUG),
    ("inductor.benchmark_kernel", DEBUG),
    ("dynamo.cprofile", DEBUG),
    ("dynamo.replay_record_enabled", DEBUG),
    ("dynamo.generate_pycode", DEBUG),
    ("functorch.visualize_*", DEBUG),
    ("functorch.torch_compile_graph_format", DEBUG),
    ("functorch.fake_tensor_crossref", DEBUG),
    ("functorch.fake_tensor_propagate_real_tensors", TESTING),
    ("functorch.generate_fake_kernels_from_real_mismatches", TESTING),
    ("functorch.strict_autograd_cache", TESTING),
    ("functorch.bundled_autograd_cache", TESTING),
    ("functorch.force_autograd_cache", CACHE),
    ("functorch.bypass_autograd_cache_key", CACHE),
    ("functorch.autograd_cache_allow_custom_autograd_functions", CACHE),
    ("inductor.run_jit_post_compile_hook", CODE),
    ("*custom_pass*", CODE),
    ("*custom_*_pass", CODE),
    ("*_determinator", CODE),
    ("inductor.external_matmul", CODE),
    ("inductor.inductor_choices_class", CODE),
    ("inductor.custom_partitioner_fn", CODE),
    ("inductor.estimate_op_runtime", CODE),
    ("dynamo.*_functions", CODE),
    ("dynamo.*tensor_subclasses", CODE),
    ("inductor.worker_start_method", PROCESS),
    ("inductor.unsafe_*", GUARDS),
    ("functorch.unsafe_*", GUARDS),
    ("functorch.unlift_effect_tokens", GUARDS),
    ("*._unsafe_*", GUARDS),
    ("*._*", PRIVATE),
    ("*.TYPE_CHECKING", PRIVATE),
    ("*.is_nightly_or_source", PRIVATE),
    ("inductor.is_predispatch", PRIVATE),
)

GEMM_BACKENDS = ("ATEN", "TRITON", "CPP", "CUTLASS", "CUTEDSL", "NVGEMM", "CK", "CKTILE")
GEMM_BACKEND_LISTS = (
    "inductor.max_autotune_gemm_backends",
    "inductor.max_autotune_conv_backends",
    "inductor.max_autotune_conv_bwd_input_backends",
    "inductor.max_autotune_conv_bwd_weight_backends",
)
# Reviewed knobs whose declared type is free text: the values they may take.
_ONE_OF: dict[str, tuple[str, ...]] = {
    "inductor.cpp.enable_floating_point_contract_flag": ("off", "on", "fast"),
    "inductor.layout_opt_default": ("0", "1"),
    "dynamo.numpy_default_float": ("float64", "float32", "float16"),
    "dynamo.numpy_default_complex": ("complex128", "complex64"),
    "dynamo.numpy_default_int": ("int64", "int32"),
    "functorch.activation_memory_budget_solver": (
        "dp",
        "greedy",
        "ilp",
        "dp_knapsack_sliding_hirschberg",
    ),
    "functorch.activation_memory_budget_runtime_estimator": ("flops", "profile"),
}


def rule_reason(param: str) -> str | None:
    """Why ``param`` (``inductor.cpp.cxx``) is refused by name, or None when no rule says."""
    return next((why for pattern, why in RULES if fnmatch.fnmatchcase(param, pattern)), None)


@functools.cache
def reviewed() -> frozenset[str]:
    """The knobs reviewed as safe (``reviewed_knobs.txt``), as ``layer.name``."""
    text = (Path(__file__).with_name("reviewed_knobs.txt")).read_text(encoding="utf-8")
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return frozenset(line for line in lines if line)


def refusal(param: str, value: Any, declared: Any = None) -> str | None:
    """Why a config read from data may not set ``param`` to ``value``; None when it may.

    Args:
        param: ``inductor.NAME``, ``dynamo.NAME`` or ``functorch.NAME``.
        value: The value the config sets.
        declared: The type torch declares for the knob (``config.get_type``), when known.
    """
    why = rule_reason(param)
    if why is not None:
        return why
    if param not in reviewed():
        return UNREVIEWED.format(torch=_torch_version())
    if param in _ONE_OF:
        allowed = _ONE_OF[param]
        return None if value in allowed else f"takes one of {', '.join(map(repr, allowed))}"
    if param in GEMM_BACKEND_LISTS:
        return None if gemm_backends_ok(value) else _GEMM_RULE
    if declared is not None and not scalar_type(declared):
        return UNREVIEWED.format(torch=_torch_version())
    return None


_GEMM_RULE = f"takes a comma-separated list of {', '.join(GEMM_BACKENDS)}"


def gemm_backends_ok(value: Any) -> bool:
    """``"ATEN,TRITON"``: a comma-separated list of GEMM backend names."""
    if not isinstance(value, str):
        return False
    return all(part.strip().upper() in GEMM_BACKENDS for part in value.split(","))


# The torch.compile backends a config may name when it comes from data: those autotune's own
# spaces and tests use on purpose (openvino only where installed, see autotune.space._levers).
# Any other registered backend is refused unless opted into by name as ``backend.NAME``: torch
# registers backends for its own tests (relu_accuracy_error_TESTING_ONLY corrupts outputs), and
# a third-party one runs code nobody here reviewed.
BACKENDS = ("inductor", "aot_eager", "eager", "openvino")
BACKEND_OPT_IN = "backend."


def backend_refusal(backend: str) -> str | None:
    """Why data may not name ``backend``, or None."""
    if backend in BACKENDS:
        return None
    return TESTING if "TESTING_ONLY" in backend else "is a backend nobody reviewed for autotune"


def config_problems(
    config: Any, allowed: bool | Collection[str] = False, types_of: Any = None
) -> list[str]:
    """:func:`problems` of a ``CompileConfig``: its backend, its Dynamo and functorch knobs
    and, for Inductor only, its options (another backend's options are checked against its own
    closed list)."""
    options = config.options if config.backend == "inductor" else {}
    return problems(options, config.dynamo, allowed, types_of, config.backend, config.functorch)


def problems(
    options: Mapping[str, Any],
    dynamo: Mapping[str, Any],
    allowed: bool | Collection[str] = False,
    types_of: Any = None,
    backend: str = "inductor",
    functorch: Mapping[str, Any] | None = None,
) -> list[str]:
    """One line per knob of a config that data may not set: ``options.cpp.cxx: names a
    program ...``, and the backend when it is not one data may name (:data:`BACKENDS`).
    ``allowed`` opts in: True for every knob, or the ``layer.name`` params named (a backend as
    ``backend.NAME``). ``types_of(layer, name)`` gives torch's declared type (None: unknown)."""
    if allowed is True:
        return []
    opted = set(allowed or ())
    lines = []
    why_backend = backend_refusal(backend)
    if why_backend is not None and f"{BACKEND_OPT_IN}{backend}" not in opted:
        lines.append(
            f"backend {backend!r}: {why_backend}; autotune takes only {', '.join(BACKENDS)} "
            f"from data (opt in by name: {BACKEND_OPT_IN}{backend})"
        )
    layers = (
        ("inductor", "options", options),
        ("dynamo", "dynamo", dynamo),
        ("functorch", "functorch", functorch or {}),
    )
    for layer, where, knobs in layers:
        for name, value in sorted(knobs.items()):
            param = f"{layer}.{name}"
            if param in opted:
                continue
            declared = types_of(layer, name) if types_of is not None else None
            why = refusal(param, value, declared)
            if why is not None:
                lines.append(f"{where}.{name}: {why}")
    return lines


_REMEDY = (
    "autotune.apply(..., allow_unsafe_knobs=[...]), or in your own search-space file [unsafe] "
    "knobs = [...]"
)


def explain(lines: Iterable[str], what: str, remedy: str = _REMEDY) -> str:
    """The paragraph of an :class:`~autotune.runtime.config.UnsafeKnobError`; ``remedy`` says
    how the caller opts in."""
    listed = "\n".join(f"  - {line}" for line in lines)
    return (
        f"{what} sets knobs that autotune never takes from data (a file, a database row or a "
        f"space could make them run a program, load code or write files):\n{listed}\nIf you "
        f"wrote this config yourself and mean it, opt in by name: {remedy}."
    )


def scalar_type(tp: Any) -> bool:
    """bool, int, float, a Literal of those, or a Union/Optional of such: a declared type whose
    every value is a plain setting."""
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return all(isinstance(arg, (bool, int, float, str)) for arg in typing.get_args(tp))
    if origin in (typing.Union, types.UnionType):
        arms = typing.get_args(tp)
        return all(arm is type(None) or scalar_type(arm) for arm in arms)
    # A knob torch declares only by its None default can take anything: never a plain setting.
    return tp in (bool, int, float)


def accepts(tp: Any, value: Any) -> bool | None:
    """True/False when ``value`` fits the declared type ``tp``; None when the type is too rich
    to judge here (such knobs are never reviewed as safe)."""
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return any(value == arg and type(value) is type(arg) for arg in typing.get_args(tp))
    if origin in (typing.Union, types.UnionType):
        verdicts = [accepts(arm, value) for arm in typing.get_args(tp)]
        if any(v is True for v in verdicts):
            return True
        return None if any(v is None for v in verdicts) else False
    if tp is type(None) or tp is None:
        return value is None
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    return None


def describe(tp: Any) -> str:
    """A short readable name for a declared type."""
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


def _torch_version() -> str:
    import sys

    torch = sys.modules.get("torch")
    return str(getattr(torch, "__version__", "?")) if torch is not None else "?"
