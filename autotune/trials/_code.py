"""What a compile generated: the identity of a trial's code, so that two configs that generate
the same code are timed once.

Many knob combinations generate identical code (measured on the convnet on this CPU:
``cpp.min_chunk_size`` and, without ``freezing``, ``max_autotune`` change nothing), and timing
the same code twice measures only noise. Inductor hands every graph's output code (the wrapper,
with its kernels' source inline) to ``GraphLowering.save_output_code`` when it compiles a graph
and when it loads one from the FX graph cache; that hook is what ``torch._inductor.utils.
run_and_get_code`` uses.

The identity is that code plus what changes how the same code is built or runs: the backend,
``dynamic``, ``fullgraph``, the Dynamo settings, the functorch settings but the partitioner's
(AOTAutograd's runtime wrappers are not in the code), the scope, the Inductor options that set
the C++ compiler's flags (the same source built with ``-funsafe-math-optimizations`` is another
kernel), those that wrap the compiled graph at run time (CUDA graphs), the config's precision
(``torch.set_float32_matmul_precision`` changes what an extern GEMM call computes, not the code
that calls it) and the batch size. The partitioner's settings (``activation_memory_budget``)
decide what the forward graph returns for the backward and what the backward graph recomputes,
which both graphs' code shows (a training trial collects the code of its first steps, backward
included): a budget that changes neither graph changes nothing. It is conservative: code that
differs only in a comment or a kernel's name counts as different.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Iterator
from typing import Any

from autotune.runtime.config import CompileConfig

# Inductor options that change how the generated code is built or run, not the code: the C++
# compiler's flags (read by torch._inductor.cpp_builder) and CUDA graphs.
_BUILD_OPTIONS = frozenset(
    {"cpp.enable_unsafe_math_opt_flag", "cpp.enable_floating_point_contract_flag", "cpp.march"}
)
_RUNTIME_OPTION = "cudagraph"
# functorch settings of the min-cut partitioner: they choose what the forward saves and the
# backward recomputes, all of it in the two graphs' code.
_PARTITION_SETTINGS = frozenset(
    {
        "activation_memory_budget",
        "activation_memory_budget_runtime_estimator",
        "activation_memory_budget_solver",
        "aggressive_recomputation",
        "ban_recompute_long_fusible_chains",
        "ban_recompute_materialized_backward",
        "ban_recompute_not_in_allowlist",
        "ban_recompute_reductions",
        "ban_recompute_used_far_apart",
        "is_non_builtin_to_include",
        "max_dist_from_bw",
        "recompute_views",
        "treat_parameters_as_free_to_save",
    }
)
# The first line of every graph's code numbers the graph in the process ("# AOT ID:
# ['0_inference']"): a count of earlier compiles, not a property of the code.
_AOT_ID = re.compile(r"^# AOT ID: .*$", re.MULTILINE)
# A constant of the graph (a frozen weight) is declared with its address in this process
# ("_frozen_param2 = None  # device(type='cpu') torch.float32 (32, 32) (32, 1) 7fcf7dc468f0").
_ADDRESS = re.compile(r"^(\w+ = None  # device\(.*) [0-9a-f]+$", re.MULTILINE)


@contextlib.contextmanager
def output_code() -> Iterator[list[str]]:
    """Collects the output code of every graph Inductor compiles or loads inside the block
    (nothing on a torch without the hook, or for a backend other than Inductor)."""
    from torch._inductor.graph import GraphLowering

    codes: list[str] = []
    if not hasattr(GraphLowering, "save_output_code"):
        yield codes
        return
    saved = GraphLowering.save_output_code
    GraphLowering.save_output_code = codes.append
    try:
        yield codes
    finally:
        GraphLowering.save_output_code = saved


def code_identity(config: CompileConfig, batch_size: int | None, codes: list[str]) -> str | None:
    """A 32-hex-digit digest that two trials share exactly when they run the same generated
    code the same way; None when no code was collected (nothing to compare)."""
    if not codes:
        return None
    beyond: dict[str, Any] = {
        k: v for k, v in config.options.items() if k in _BUILD_OPTIONS or _RUNTIME_OPTION in k
    }
    described = config.to_dict()
    payload = {
        "backend": config.backend,
        "dynamic": config.dynamic,
        "fullgraph": config.fullgraph,
        "dynamo": described["dynamo"],
        "scope": described["scope"],
        "options_beyond_code": beyond,
        "batch_size": batch_size,
        "code": [hashlib.sha256(_normalized(code).encode()).hexdigest() for code in codes],
    }
    if config.precision:  # the matmul precision runs the same extern GEMM call differently
        payload["precision"] = described["precision"]
    functorch = {k: v for k, v in config.functorch.items() if k not in _PARTITION_SETTINGS}
    if functorch:  # only when set: the identities of earlier trials stay as they were
        payload["functorch"] = dict(sorted(functorch.items()))
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def _normalized(code: str) -> str:
    return _ADDRESS.sub(r"\1", _AOT_ID.sub("", code, count=1))
