"""The device every subcommand resolves: the given one, a fallback (a file's), or this
machine's; CUDA refused where this torch cannot see it."""

from __future__ import annotations

import pytest
import torch

from autotune._device import default_device, resolve_device
from autotune.errors import UsageError


def test_the_given_device_wins_and_cpu_is_always_there():
    assert resolve_device("cpu", fallback="cuda", remedy="r") == "cpu"


def test_cuda_without_cuda_names_the_torch_and_the_remedy(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(UsageError) as info:
        resolve_device("cuda", remedy="Pass --device cpu.")
    assert str(info.value) == (
        f"--device cuda needs CUDA, but this torch ({torch.__version__}) sees no CUDA device. "
        "Pass --device cpu."
    )
    assert default_device() == "cpu" and resolve_device(None, remedy="r") == "cpu"


def test_a_fallback_is_named_as_such(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(UsageError, match="^The file's device cuda needs CUDA"):
        resolve_device(None, fallback="cuda", remedy="r", named="The file's device cuda")


def test_checking_a_space_for_cuda_needs_no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("cuda", remedy="", require_cuda=False) == "cuda"


def test_a_cuda_index_beyond_the_devices_is_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("cuda:1", remedy="x") == "cuda:1"
    with pytest.raises(UsageError, match=r"names CUDA device 2, but this machine has 2 \(cuda:0"):
        resolve_device("cuda:2", remedy="x")
