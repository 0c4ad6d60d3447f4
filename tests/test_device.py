"""The device check shared by search and verify: no CUDA, or a CUDA index beyond the count."""

from __future__ import annotations

import pytest
import torch

from autotune._device import default_device, require
from autotune.errors import UsageError


def test_cpu_is_always_there():
    require("cpu", "remedy")


def test_cuda_without_cuda_names_the_torch_and_the_remedy(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(UsageError) as info:
        require("cuda", "Pass --device cpu.")
    assert str(info.value) == (
        f"--device cuda needs CUDA, but this torch ({torch.__version__}) sees no CUDA device. "
        "Pass --device cpu."
    )
    assert default_device() == "cpu"


def test_a_cuda_index_beyond_the_devices_is_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    require("cuda:1", "x")
    with pytest.raises(UsageError, match=r"names CUDA device 2, but this machine has 2 \(cuda:0"):
        require("cuda:2", "x")
    with pytest.raises(UsageError, match="^The file's device cuda:5 names"):
        require("cuda:5", "x", named="The file's device cuda:5")
