"""A config's precision is set around each call of a compiled region, and proven by its effect:
the generated code computes in bf16, the outputs move, and nothing leaks past the call."""

from __future__ import annotations

import pytest
import torch

import autotune
from autotune.runtime.config import CompileConfig, ConfigError
from autotune.space._levers import cpu_flags, native_bf16

needs_bf16 = pytest.mark.skipif(
    not native_bf16("cpu"), reason="this CPU has neither AVX512-BF16 nor AMX-BF16"
)


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 8))


def test_autocast_wraps_each_call_and_leaves_nothing_behind() -> None:
    model = autotune.apply(
        _model().eval(), {"backend": "eager", "precision": {"autocast": "bfloat16"}}
    )
    with torch.no_grad():
        out = model(torch.randn(4, 64))
    assert out.dtype == torch.bfloat16
    assert not torch.is_autocast_enabled("cpu")


def test_matmul_precision_is_set_for_the_call_and_put_back() -> None:
    seen = []

    class Probe(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            seen.append(torch.get_float32_matmul_precision())
            return x

    model = autotune.apply(Probe(), {"backend": "eager", "precision": {"matmul": "medium"}})
    before = torch.get_float32_matmul_precision()
    model(torch.ones(2))
    assert seen == ["medium"]
    assert torch.get_float32_matmul_precision() == before


def test_a_precision_the_schema_does_not_know_is_refused() -> None:
    with pytest.raises(ConfigError, match="precision.autocast: expected 'bfloat16' or 'float16'"):
        CompileConfig.from_dict({"precision": {"autocast": "int8"}})


def test_precision_is_part_of_the_hash_only_when_set() -> None:
    plain = CompileConfig()
    assert "precision" not in plain.to_dict()
    bf16 = CompileConfig(precision={"autocast": "bfloat16"})
    assert bf16.config_hash() != plain.config_hash()
    assert bf16.changes_precision and not plain.changes_precision
    assert "autocast=bfloat16" in bf16.brief()


@pytest.mark.slow
@needs_bf16
def test_inductor_generates_bf16_code_under_autocast() -> None:
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    x = torch.randn(16, 64)
    fp32 = autotune.apply(_model().eval(), {"backend": "inductor"})
    bf16 = autotune.apply(
        _model().eval(), {"backend": "inductor", "precision": {"autocast": "bfloat16"}}
    )
    with torch.no_grad():
        _, fp32_code = run_and_get_code(fp32, x)
        out, bf16_code = run_and_get_code(bf16, x)
    assert "bfloat16" in "\n".join(bf16_code)
    assert "bfloat16" not in "\n".join(fp32_code)
    with torch.no_grad():
        reference = _model().eval()(x)
    assert out.dtype == torch.bfloat16
    assert 0 < (out.float() - reference).abs().max() < 0.1


@pytest.mark.skipif(
    "amx_bf16" not in cpu_flags(), reason="oneDNN runs float32 matmuls in bf16 on AMX only"
)
def test_medium_matmul_precision_moves_the_numbers_on_an_amx_cpu() -> None:
    model = autotune.apply(
        _model().eval(), {"backend": "eager", "precision": {"matmul": "medium"}}
    )
    x = torch.randn(16, 64)
    with torch.no_grad():
        reference = _model().eval()(x)
        out = model(x)
    assert out.dtype == torch.float32
    assert (out - reference).abs().max() > 1e-4  # bf16 matmuls through oneDNN
