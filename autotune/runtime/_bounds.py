"""The bounds of the numbers a config sets: every integer and float knob autotune takes from
data (``reviewed_knobs.txt``) and the OpenVINO backend's counts, each with the reason for its
bound. Torch checks none of these ranges: a best-config file's ``cpp.threads = 10**7`` would go
straight into ``#pragma omp parallel num_threads(N)``, its ``compile_threads`` would size a
pool of worker processes.

Stated once, read by the config schema (a best-config file is refused at load, and a
:class:`~autotune.runtime.config.CompileConfig` when built) and by the space validation (which
adds this machine's own rules). Standard library only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Bound:
    """``low <= value <= high``, or one of ``also`` (values outside the range that the knob
    gives a meaning of its own, each with that meaning in words)."""

    low: float
    high: float
    why: str
    also: tuple[tuple[int, str], ...] = ()

    def holds(self, value: float) -> bool:
        return self.low <= value <= self.high or any(value == v for v, _ in self.also)

    def rule(self) -> str:
        """E.g. ``-1 (all CPUs) or 1 to 1024``."""
        special = [f"{v} ({meaning})" for v, meaning in self.also]
        return " or ".join([*special, f"{_number(self.low)} to {_number(self.high)}"])


_THREADS = (
    "the OpenMP threads each generated kernel starts, and no server has more hardware threads"
)
_PROCESSES = (
    "the compile worker processes, each an interpreter with torch loaded (Inductor's own "
    "default is at most 32)"
)
_OPENVINO = (
    "the threads or streams of each compiled partition, and no server has more hardware threads"
)
_RECOMPILES = (
    "the graphs kept per function, each a compile of seconds held for the process's life (the "
    "built-in spaces search 8 and 64)"
)
_TOTAL_RECOMPILES = "the graphs compiled in all, each a compile of seconds (torch's default: 256)"
_KERNEL = (
    "the nodes, ops, reads or arguments folded into one generated kernel, whose code and "
    "compile time grow with it"
)
_FUSION = "the nodes fused into one kernel, whose code and compile time grow with it"
_UNROLL = "the reduction sizes unrolled into straight-line code, which grows with it"
_TILES = "the dimensions a Triton kernel tiles, at most 3"
_SPLITS = "the pieces a kernel's work is split into, each with a temporary buffer of its own"
_BLOCK = "the elements of a block in a generated Triton kernel, which sizes its workspace"
_PADDING = "the bytes each padded stride is rounded up to, by which every padded tensor may grow"
_UNBACKED = (
    "the size assumed for a data-dependent dimension, of which autotuning allocates tensors "
    "(torch's default: 8192)"
)
_THRESHOLD = (
    "a size, ratio or count Inductor compares with, and past 2**40 (a terabyte) nothing is larger"
)
_CHUNK = "the elements each thread takes at least, a constant in the generated C++ code"
_SIMD = "a vector width in bits (AVX-512 is 512, ARM SVE at most 2048)"
_CANDIDATES = "the candidates compiled and benchmarked while autotuning, each adding compile time"
_RUNS = "the milliseconds or runs each autotuning candidate is timed for"
_MODE = "a mode by number: 0, 1 or 2"
_SECONDS = "seconds to wait, and a day is longer than any compile"
_BANDWIDTH = "a bandwidth in GB/s the cost model assumes, 1 MB/s to 100 TB/s"
_GB = "gigabytes of memory, or megabytes of a collective's bucket buffer"
_FRACTION = "a fraction of memory"
_MULTIPLIER = "a multiplier of a cost or memory figure"
_DISTANCE = "the positions in the schedule or the graph a node may move or reach"
_SHOWN = "a count that is only logged, warned about or compared with"

_T = 2**40  # a threshold past any tensor: a terabyte of bytes, elements or ops
_DIST = "inductor.aten_distributed_optimizations."
_FSDP = "pre_bucketing_fsdp_collectives"

BOUNDS: dict[str, Bound] = {
    # threads and processes
    "inductor.cpp.threads": Bound(1, 1024, _THREADS, also=((-1, "all CPUs"),)),
    "inductor.compile_threads": Bound(1, 256, _PROCESSES),
    "openvino.INFERENCE_NUM_THREADS": Bound(1, 1024, _OPENVINO),
    "openvino.NUM_STREAMS": Bound(1, 1024, _OPENVINO),
    # recompiles
    "dynamo.recompile_limit": Bound(1, 1024, _RECOMPILES),
    "dynamo.cache_size_limit": Bound(1, 1024, _RECOMPILES),  # recompile_limit's old name
    "dynamo.accumulated_recompile_limit": Bound(1, 8192, _TOTAL_RECOMPILES),
    "inductor.triton.cudagraph_unexpected_rerecord_limit": Bound(
        0, 1024, "the CUDA graphs recorded again, each holding a memory pool of its own"
    ),
    # the size of generated code
    "inductor.max_fusion_size": Bound(1, 1024, _FUSION),
    "inductor.cpp.max_horizontal_fusion_size": Bound(0, 1024, _FUSION),
    "inductor.max_fusion_buffer_group_pairwise_attempts": Bound(0, 4096, _KERNEL),
    "inductor.max_fusion_unique_io_buffers": Bound(1, 4096, _KERNEL),
    "inductor.max_pointwise_cat_inputs": Bound(0, 1024, _KERNEL),
    "inductor.max_complex_pointwise_cat_inputs": Bound(0, 1024, _KERNEL),
    "inductor.combo_kernel_max_num_args": Bound(1, 4096, _KERNEL),
    "inductor.combo_kernel_max_num_nodes": Bound(1, 1024, _KERNEL),
    "inductor.realize_opcount_threshold": Bound(0, 4096, _KERNEL),
    "inductor.realize_cpu_opcount_threshold": Bound(0, 4096, _KERNEL),
    "inductor.realize_reads_threshold": Bound(0, 1024, _KERNEL),
    "inductor.realize_acc_reads_threshold": Bound(0, 1024, _KERNEL),
    "inductor.realize_cpu_acc_reads_threshold": Bound(0, 1024, _KERNEL),
    "inductor.triton.mix_order_reduction_max_reads": Bound(0, 1024, _KERNEL),
    "inductor.kernel_name_max_ops": Bound(1, 256, _KERNEL),
    "inductor.unroll_reductions_threshold": Bound(1, 1024, _UNROLL),
    "inductor.triton.max_tiles": Bound(1, 3, _TILES),
    "inductor.cpp.simdlen": Bound(0, 2048, _SIMD),
    "inductor.cpp.min_chunk_size": Bound(1, _T, _CHUNK),
    # splits, partitions, blocks and padding: temporary buffers
    "inductor.cpp.gemm_max_k_slices": Bound(0, 1024, _SPLITS),
    "inductor.min_num_split": Bound(0, 65536, _SPLITS),
    "inductor.partitioned_scatter_min_partitions": Bound(1, 1024, _SPLITS),
    "inductor.partitioned_scatter_max_partitions": Bound(1, 1024, _SPLITS),
    "inductor.auto_chunker.num_chunk": Bound(1, 1024, _SPLITS),
    "inductor.triton.num_decompose_k_splits": Bound(0, 1024, _SPLITS),
    "inductor.triton.mix_order_reduction_split_size": Bound(1, 2**20, _BLOCK),
    "inductor.triton.mix_order_reduction_initial_xblock": Bound(1, 4096, _BLOCK),
    "inductor.triton.min_split_scan_rblock": Bound(1, 2**20, _BLOCK),
    "inductor.padding_alignment_bytes": Bound(1, 4096, _PADDING),
    "inductor.unbacked_symint_fallback": Bound(1, 65536, _UNBACKED),
    # thresholds compared with sizes
    "inductor.cpp.use_two_step_variance_threshold": Bound(0, _T, _THRESHOLD),
    "inductor.triton.use_two_step_variance_threshold": Bound(0, _T, _THRESHOLD),
    "inductor.triton.use_two_step_variance_min_numel": Bound(0, _T, _THRESHOLD),
    "inductor.triton.decompose_k_threshold": Bound(0, _T, _THRESHOLD),
    "inductor.triton.cudagraph_min_partition_size": Bound(0, _T, _THRESHOLD),
    "inductor.triton.spill_threshold": Bound(0, _T, _THRESHOLD),
    "inductor.padding_stride_threshold": Bound(0, _T, _THRESHOLD),
    "inductor.small_memory_access_threshold": Bound(0, _T, _THRESHOLD),
    "inductor.size_threshold_for_succ_based_strategy": Bound(0, _T, _THRESHOLD),
    "inductor.score_fusion_memory_threshold": Bound(0, _T, _THRESHOLD),
    "inductor.realize_acc_reads_size_threshold": Bound(0, _T, _THRESHOLD),
    "inductor.auto_chunker.output_size_threshold": Bound(0, _T, _THRESHOLD),
    "inductor.auto_chunker.amplify_ratio_threshold": Bound(0, _T, _THRESHOLD),
    f"{_DIST}low_contention_min_bytes_per_rank": Bound(0, _T, _THRESHOLD),
    "inductor.cuda.cutlass_backend_min_gemm_size": Bound(0, _T, _THRESHOLD),
    "inductor.cutlass.cutlass_backend_min_gemm_size": Bound(0, _T, _THRESHOLD),
    "inductor.xpu.cutlass_backend_min_gemm_size": Bound(0, _T, _THRESHOLD),
    "inductor.rocm.contiguous_threshold": Bound(0, _T, _THRESHOLD),
    "inductor.rocm.split_k_threshold": Bound(0, _T, _THRESHOLD),
    # autotuning
    "inductor.max_epilogue_benchmarked_choices": Bound(0, 1024, _CANDIDATES),
    "inductor.coordinate_descent_search_radius": Bound(1, 64, _CANDIDATES),
    "inductor.nvgemm_max_profiling_configs": Bound(1, 65536, _CANDIDATES),
    "inductor.cuda.nvgemm_max_profiling_configs": Bound(1, 65536, _CANDIDATES),
    "inductor.cutlass.cutlass_max_profiling_configs": Bound(1, 65536, _CANDIDATES),
    "inductor.rocm.ck_max_profiling_configs": Bound(1, 65536, _CANDIDATES),
    "inductor.rocm.ck_tile_max_profiling_configs": Bound(1, 65536, _CANDIDATES),
    "inductor.rocm.n_max_profiling_configs": Bound(1, 65536, _CANDIDATES),
    "inductor.rocm.origami_topk": Bound(1, 1024, _CANDIDATES),
    "inductor.inductor_default_autotune_warmup": Bound(0, 10000, _RUNS),
    "inductor.inductor_default_autotune_rep": Bound(1, 10000, _RUNS),
    "inductor.collective_benchmark_nruns": Bound(1, 10000, _RUNS),
    "inductor.combo_kernels_autotune": Bound(0, 2, _MODE),
    "inductor.combo_kernel_allow_mixed_sizes": Bound(0, 2, _MODE),
    # waits
    "inductor.collective_benchmark_timeout": Bound(0, 86400, _SECONDS),
    "inductor.max_autotune_subproc_graceful_timeout_seconds": Bound(0, 86400, _SECONDS),
    "inductor.max_autotune_subproc_result_timeout_seconds": Bound(0, 86400, _SECONDS),
    "inductor.max_autotune_subproc_terminate_timeout_seconds": Bound(0, 86400, _SECONDS),
    "inductor.precompilation_timeout_seconds": Bound(0, 86400, _SECONDS),
    "inductor.compile_worker_wait_timeout": Bound(0, 86400, _SECONDS),
    "inductor.quiesce_async_compile_time": Bound(0, 86400, _SECONDS),
    "inductor.file_lock_timeout": Bound(0, 86400, _SECONDS),
    # the cost model's machine and memory figures
    "inductor.cpu_gpu_bw": Bound(0.001, 100000, _BANDWIDTH),
    "inductor.inter_node_bw": Bound(0.001, 100000, _BANDWIDTH),
    "inductor.intra_node_bw": Bound(0.001, 100000, _BANDWIDTH),
    "functorch.activation_offload_cpu_gpu_bw": Bound(0.001, 100000, _BANDWIDTH),
    f"{_DIST}max_in_flight_gb": Bound(0, 65536, _GB),
    f"{_DIST}max_memory_increase_gb": Bound(0, 65536, _GB),
    "inductor.combo_kernel_peak_memory_increase_gb": Bound(0, 65536, _GB),
    f"{_DIST}{_FSDP}_bucket_cap_mb": Bound(0, 65536, _GB),
    f"{_DIST}{_FSDP}_max_bucket_cap_mb": Bound(0, 65536, _GB),
    f"{_DIST}{_FSDP}_min_bucket_cap_mb": Bound(0, 65536, _GB),
    # The fraction of the activations the default partition saves: 0 recomputes all it can.
    "functorch.activation_memory_budget": Bound(0.0, 1.0, _FRACTION),
    "inductor.partitioned_scatter_memory_budget": Bound(0.0, 1.0, _FRACTION),
    "inductor.combo_kernel_peak_memory_pct_threshold": Bound(0.0, 1.0, _FRACTION),
    "inductor.min_overlap_ratio": Bound(0.0, 2.0, "a fraction of shared inputs (above 1: off)"),
    "inductor.triton.cudagraph_partition_memory_budget": Bound(0.0, 1024, _MULTIPLIER),
    f"{_DIST}max_memory_increase_ratio": Bound(0.0, 1024, _MULTIPLIER),
    f"{_DIST}compute_overlap_multipler": Bound(0.0, 1024, _MULTIPLIER),
    f"{_DIST}{_FSDP}_saturation_calibration_multiplier": Bound(0.0, 1024, _MULTIPLIER),
    f"{_DIST}max_coll_distance": Bound(0, 65536, _DISTANCE),
    f"{_DIST}max_compute_pre_fetch": Bound(0, 65536, _DISTANCE),
    "inductor.reorder_prefetch_limit": Bound(0, 65536, _DISTANCE),
    "inductor.combo_kernel_max_distance": Bound(0, 65536, _DISTANCE, also=((-1, "no splitting"),)),
    "functorch.max_dist_from_bw": Bound(0, 2**20, _DISTANCE),
    # counts that only say something
    "inductor.autotune_num_choices_displayed": Bound(0, 1024, _SHOWN),
    "inductor.triton.cudagraph_dynamic_shape_warn_limit": Bound(0, 65536, _SHOWN),
    "dynamo.minimum_call_count": Bound(1, 2**31, _SHOWN),
    "dynamo.max_saved_pointers_for_recursive_dict_tags_check": Bound(0, 65536, _SHOWN),
}
"""Each bounded knob as ``layer.name`` (``inductor``, ``dynamo``, ``functorch``, or a backend's
options: ``openvino``), its bound and why."""


def problem(param: str, value: Any, where: str | None = None) -> str | None:
    """Why ``param`` (``inductor.cpp.threads``) may not take ``value``, said at ``where`` (the
    key's place in a file; ``param`` when None); None when it may, the knob has no bound, or
    the value is no number (None keeps torch's own default; types are checked elsewhere)."""
    bound = BOUNDS.get(param)
    if bound is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if bound.holds(value):
        return None
    return (
        f"{where or param}: {_number(value)} is outside what the knob accepts ({bound.rule()}); "
        f"it sets {bound.why}. Set a value in that range, or remove the key for torch's default"
    )


def problems(settings: Any, layer: str, where: str) -> list[str]:
    """:func:`problem` of each ``layer`` knob that ``settings`` (a config's ``options``,
    ``dynamo`` or ``functorch``) sets; nothing when ``settings`` is no dict."""
    if not isinstance(settings, Mapping):
        return []
    found = (problem(f"{layer}.{k}", v, f"{where}.{k}") for k, v in settings.items())
    return [line for line in found if line is not None]


def _number(value: float) -> str:
    """``1024``, ``0.5``, ``2**40`` for a large power of two, or an integer's length when it
    is too long to write."""
    if not isinstance(value, int):
        return str(value)
    if value >= 2**20 and value & (value - 1) == 0:
        return f"2**{value.bit_length() - 1}"
    return str(value) if value.bit_length() <= 64 else f"an integer of {value.bit_length()} bits"
