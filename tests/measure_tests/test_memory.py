from __future__ import annotations

import sys

import pytest
import torch

from autotune.measure.memory import peak_memory_bytes, reset_peak_memory

_MIB = 1024 * 1024


def test_cpu_peak_is_positive_and_covers_a_new_allocation() -> None:
    before = peak_memory_bytes("cpu")
    assert before is not None and before > 0
    big = torch.ones(64 * _MIB, dtype=torch.uint8)
    after = peak_memory_bytes("cpu")
    assert after is not None and after >= 64 * _MIB
    assert int(big[-1]) == 1


@pytest.mark.skipif(sys.platform != "linux", reason="the CPU peak resets on Linux only")
def test_cpu_reset_forgets_a_freed_peak() -> None:
    big = torch.ones(256 * _MIB, dtype=torch.uint8)
    with_big = peak_memory_bytes("cpu")
    del big
    reset_peak_memory("cpu")
    after_reset = peak_memory_bytes("cpu")
    assert with_big is not None and after_reset is not None
    assert after_reset < with_big - 128 * _MIB
