from __future__ import annotations

import json

import torch

from autotune.runtime.fingerprint import (
    environment_fingerprint,
    environment_mismatches,
    model_fingerprint,
)


def _net(hidden: int = 8) -> torch.nn.Sequential:
    return torch.nn.Sequential(
        torch.nn.Linear(4, hidden), torch.nn.BatchNorm1d(hidden), torch.nn.Linear(hidden, 2)
    )


def test_environment_fingerprint_describes_this_process() -> None:
    env = environment_fingerprint("cpu")
    assert set(env) == {
        "host",
        "python",
        "platform",
        "torch",
        "triton",
        "cuda",
        "driver",
        "device",
        "device_name",
        "capability",
        "cpu_model",
        "cpu_count",
    }
    assert env["torch"] == torch.__version__
    assert env["device"] == "cpu" and env["capability"] is None
    assert env["device_name"] == env["cpu_model"] and env["device_name"]
    assert json.loads(json.dumps(env)) == env


def test_model_fingerprint_hashes_structure_not_values() -> None:
    a, b = _net(), _net()
    with torch.no_grad():
        for parameter in b.parameters():
            parameter.add_(1.0)
    assert model_fingerprint(a) == model_fingerprint(b)
    assert model_fingerprint(a)["parameters"] == sum(p.numel() for p in a.parameters())
    assert model_fingerprint(a)["root_class"] == "Sequential"
    assert model_fingerprint(_net(16))["sha256"] != model_fingerprint(a)["sha256"]
    assert model_fingerprint(a.to(torch.float64))["sha256"] != model_fingerprint(b)["sha256"]


def test_environment_mismatches_compare_only_what_matters() -> None:
    expected = {"torch": "2.11.0", "triton": None, "cuda": None, "device_name": "X", "host": "a"}
    actual = {**expected, "torch": "2.13.0", "host": "b"}
    assert environment_mismatches(expected, actual) == [
        "torch: tuned with '2.11.0', running with '2.13.0'"
    ]
    assert environment_mismatches({}, actual) == []
