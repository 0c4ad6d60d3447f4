"""The CUDA paths: event timing with L2 flushes, synchronized first calls, allocator peaks."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from autotune.measure import (
    clone_outputs,
    compare_outputs,
    interleaved_timing,
    peak_memory_bytes,
    reset_peak_memory,
    time_first_call,
)

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]

_MIB = 1024 * 1024


def _matmul_loop(repeats: int) -> Callable[[], None]:
    a = torch.randn(2048, 2048, device="cuda")

    def run() -> None:
        for _ in range(repeats):
            torch.mm(a, a)

    return run


def test_cuda_three_times_the_work_measures_about_three_times_slower() -> None:
    timing = interleaved_timing(_matmul_loop(3), _matmul_loop(1), "cuda", target_seconds=0.5)
    assert 10 <= timing.rounds <= 200
    assert timing.calls_per_sample * timing.compiled.median >= 1e-3
    assert 2.0 < timing.ratio.median < 4.0


def test_cuda_same_function_twice_measures_a_ratio_near_one() -> None:
    fn = _matmul_loop(1)
    timing = interleaved_timing(fn, fn, "cuda:0", target_seconds=0.5)
    assert 0.8 < timing.ratio.median < 1.25


def test_cuda_events_time_queued_work_not_the_launch() -> None:
    a = torch.randn(4096, 4096, device="cuda")
    b = torch.randn(4096, 4096, device="cuda")
    timing = interleaved_timing(lambda: a @ a, lambda: b @ b, "cuda", min_rounds=3, max_rounds=3)
    # 2 * 4096**3 flop takes far more than launching one kernel (~10 us) on any GPU.
    assert timing.compiled.median > 50e-6


def test_cuda_first_call_waits_for_the_device() -> None:
    a = torch.randn(8192, 8192, device="cuda")
    output, seconds = time_first_call(lambda: a @ a, "cuda")
    assert output.shape == (8192, 8192)
    assert seconds > 0


def test_cuda_peak_memory_follows_the_allocator() -> None:
    torch.cuda.empty_cache()
    reset_peak_memory("cuda")
    start = peak_memory_bytes("cuda")
    block = torch.empty(256 * _MIB, dtype=torch.uint8, device="cuda")
    peak = peak_memory_bytes("cuda")
    assert start is not None and peak is not None
    assert peak - start >= 256 * _MIB
    del block
    reset_peak_memory("cuda")
    after = peak_memory_bytes("cuda")
    assert after is not None and after < peak


def test_cuda_outputs_compare_on_cpu_and_devices_must_match() -> None:
    expected = torch.randn(64, 64, device="cuda")
    assert compare_outputs(expected, clone_outputs(expected)).ok
    report = compare_outputs(expected, expected.cpu())
    assert report.detail == "out: device differs: expected cuda:0, got cpu"
