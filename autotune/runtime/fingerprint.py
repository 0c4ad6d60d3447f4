"""Fingerprints of the environment and of a model (its structure, and on request its weights),
to tell when a config travels.

An entry records the structure hash of the model it was tuned on (``model.sha256``) and, when
the operator binds it (``autotune cache export --bind-weights``), the hash of its weights
(``model.weights_sha256``); :func:`model_mismatches` says what of either the applied model
does not match.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.metadata
import os
import platform
import re
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

_COMPARED_KEYS = ("torch", "triton", "cuda", "device_name")


def environment_fingerprint(device: str) -> dict[str, Any]:
    """What the measured speed of a config depends on, besides the model.

    Args:
        device: ``"cpu"`` or a CUDA device such as ``"cuda:0"``; a CUDA device is queried
            for its name (which initializes CUDA), a CPU device is not.

    Returns:
        JSON-able dict: host, python, platform, torch, triton, cuda, driver, device,
        device_name, capability (CUDA compute capability such as ``"9.0"``, else None),
        cpu_model, cpu_count.
    """
    cpu_model = _cpu_model()
    dev = torch.device(device)
    capability = None
    if dev.type == "cuda":
        device_name = torch.cuda.get_device_name(dev.index or 0)
        capability = ".".join(map(str, torch.cuda.get_device_capability(dev.index or 0)))
    else:
        device_name = cpu_model
    return {
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "triton": _triton_version(),
        "cuda": torch.version.cuda,
        "driver": _nvidia_driver(),
        "device": str(dev),
        "device_name": device_name,
        "capability": capability,
        "cpu_model": cpu_model,
        "cpu_count": os.cpu_count(),
    }


def model_fingerprint(model: torch.nn.Module) -> dict[str, Any]:
    """Hash of a model's structure: module paths and classes, tensor names, shapes, dtypes.

    Values are not hashed, so retrained weights keep the fingerprint. Classes are hashed by
    qualified name only, so the model file may be imported under another module name.

    Returns:
        ``{"sha256": 16 hex digits, "parameters": count, "root_class": qualified name}``.
    """
    digest = hashlib.sha256()
    for path, module in model.named_modules():
        digest.update(f"M|{path}|{type(module).__qualname__}\n".encode())
    tensors = [*model.named_parameters(), *model.named_buffers()]
    for name, tensor in tensors:
        digest.update(f"T|{name}|{tuple(tensor.shape)}|{tensor.dtype}\n".encode())
    return {
        "sha256": digest.hexdigest()[:16],
        "parameters": sum(p.numel() for p in model.parameters()),
        "root_class": type(model).__qualname__,
    }


def weights_sha256(model: torch.nn.Module) -> str:
    """SHA-256 of a model's parameter and buffer values, with their names, dtypes and shapes
    (64 hex digits): what a package built with frozen weights must be applied to.

    Reads every byte of the weights (a copy to the host first where they live on a device).
    """
    digest = hashlib.sha256()
    tensors = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    for name in sorted(tensors):
        tensor = tensors[name].detach().to("cpu").contiguous()
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}\n".encode())
        if tensor.numel():
            digest.update(ctypes.string_at(tensor.data_ptr(), tensor.numel() * tensor.itemsize))
    return digest.hexdigest()


def model_mismatches(recorded: Mapping[str, Any], model: torch.nn.Module) -> list[str]:
    """Human lines for what of ``recorded`` (an entry's ``model``) ``model`` does not match:
    its structure (``sha256``, :func:`model_fingerprint`) and its weights (``weights_sha256``,
    :func:`weights_sha256`, which reads every byte of them: compared only when recorded). A
    key ``recorded`` lacks is not compared; values from the file are shown with ``repr``."""
    lines = []
    structure = recorded.get("sha256")
    if structure:
        actual = model_fingerprint(model)
        if actual["sha256"] != structure:
            lines.append(
                f"model: tuned on structure {structure!r} ({recorded.get('root_class')!r}), "
                f"applied to {actual['sha256']!r} ({actual['root_class']!r}): module paths, "
                "classes or tensor shapes differ"
            )
    weights = recorded.get("weights_sha256")
    if weights:
        actual_weights = weights_sha256(model)
        if actual_weights != weights:
            lines.append(
                f"weights: bound to weights {str(weights)[:16]!r}…, applied to "
                f"{actual_weights[:16]!r}…: the model's parameter or buffer values differ "
                "(load its weights before autotune.apply)"
            )
    return lines


def environment_mismatches(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """Human lines for the keys that matter (torch, triton, cuda, device_name) that differ.

    Keys missing from ``expected`` are not compared (an older file may lack them).
    """
    return [
        f"{key}: tuned with {expected[key]!r}, running with {actual.get(key)!r}"
        for key in _COMPARED_KEYS
        if key in expected and expected[key] != actual.get(key)
    ]


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "cpu model") and value.strip():
            return value.strip()
    return platform.processor() or platform.machine()


def _triton_version() -> str | None:
    # Read the installed metadata only: importing triton costs seconds and may touch CUDA.
    for dist in ("triton", "pytorch-triton", "triton-xpu", "pytorch-triton-rocm"):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _nvidia_driver() -> str | None:
    try:
        text = Path("/proc/driver/nvidia/version").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    # "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar ..." -> "550.54.15"
    match = re.search(r"Kernel Module.*?\s(\d+(?:\.\d+)+)\b", text)
    if match:
        return match.group(1)
    return text.splitlines()[0].strip() if text.strip() else None
