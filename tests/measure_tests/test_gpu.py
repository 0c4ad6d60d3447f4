"""The CUDA paths: event timing with L2 flushes, synchronized first calls, allocator peaks."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from autotune.measure import MeasureSettings
from autotune.measure.accuracy import clone_outputs, compare_outputs
from autotune.measure.memory import peak_memory_bytes, reset_peak_memory
from autotune.measure.timing import interleaved_timing, time_first_call

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]

_MIB = 1024 * 1024


# A fixed amount of device work: the GPU spins for this many of its clock cycles, whatever
# else the machine does, so ratios of such work test the timer, not the machine's speed.
_CYCLES = 2_000_000  # ~1 ms at 2 GHz; at least 0.2 ms on any GPU clocked under 10 GHz


def _spin(times: int) -> Callable[[], None]:
    def run() -> None:
        for _ in range(times):
            torch.cuda._sleep(_CYCLES)

    return run


def test_cuda_three_times_the_device_work_measures_three_times_longer() -> None:
    timing = interleaved_timing(_spin(3), _spin(1), "cuda", MeasureSettings(target_seconds=0.5))
    assert 10 <= timing.rounds <= 200
    assert timing.calls_per_sample * timing.compiled.median >= 1e-3
    assert timing.ratio.median == pytest.approx(3.0, rel=0.1)


def test_cuda_the_same_device_work_twice_measures_a_ratio_of_one() -> None:
    fn = _spin(1)
    timing = interleaved_timing(fn, fn, "cuda:0", MeasureSettings(target_seconds=0.5))
    assert timing.ratio.median == pytest.approx(1.0, rel=0.05)


def test_cuda_events_time_queued_work_not_the_launch() -> None:
    timing = interleaved_timing(
        _spin(10), _spin(10), "cuda", MeasureSettings(min_rounds=3, max_rounds=3)
    )
    # 2e7 cycles of device work; launching the ten kernels takes ~50 us of host time.
    assert timing.compiled.median > 2e7 / 10e9


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
