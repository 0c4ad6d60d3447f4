"""A config that changes the model's weights: cast or quantized by torchao once, in place, before
it compiles; proven by its effect (the weights' type and bytes, the generated code, the
outputs), refused in one paragraph without torchao, applied from a file in a fresh process."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import autotune
from autotune.runtime import quantize
from autotune.runtime.config import CompileConfig, ConfigError, QuantizeError

pytest.importorskip("torchao")


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(128, 256), torch.nn.GELU(), torch.nn.Linear(256, 128), torch.nn.GELU(),
        torch.nn.Linear(128, 10),
    ).eval()  # fmt: skip


def _weight_types(model: torch.nn.Module) -> list[str]:
    return [type(m.weight).__name__ for m in model.modules() if isinstance(m, torch.nn.Linear)]


def test_int8_dynamic_quantizes_every_linear_and_stores_a_quarter_of_the_bytes() -> None:
    model, x = _model(), torch.randn(8, 128)
    before, want = quantize.weights_bytes(model), model(x)
    quantize.change_weights(model, {"quantize": "int8-dynamic"})
    assert _weight_types(model) == ["Int8Tensor"] * 3
    after = quantize.weights_bytes(model)
    assert after < before * 0.3, (before, after)  # int8 weights, fp32 scales and biases
    cosine = torch.nn.functional.cosine_similarity(model(x).flatten(), want.flatten(), dim=0)
    assert 0.999 < float(cosine) < 1.0  # moved by int8 rounding, not broken


def test_quantizing_leaves_inductors_process_wide_config_as_it_was() -> None:
    """torchao's default sets coordinate descent tuning and more for the whole process and never
    puts them back: the knobs compiled would not be the config's, nor another model's."""
    import torch._inductor.config as inductor

    before = inductor.get_config_copy()
    for scheme in ("int8-dynamic", "int8-weight-only"):
        quantize.change_weights(_model(), {"quantize": scheme})
    after = inductor.get_config_copy()
    assert {k for k in before if before[k] != after[k]} == set()


def test_except_last_keeps_the_output_head_in_full_precision() -> None:
    model = _model()
    quantize.change_weights(
        model, {"quantize": "int8-weight-only", "quantize_layers": "except-last"}
    )
    assert _weight_types(model) == ["Int8Tensor", "Int8Tensor", "Parameter"]
    assert model[4].weight.dtype == torch.float32


def test_bf16_weights_cast_the_model_and_its_float_inputs() -> None:
    model = _model()
    quantize.change_weights(model, {"weights": "bfloat16"})
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    out = model(torch.randn(2, 128))  # float32 in, cast by the model's pre-hook
    assert out.dtype == torch.bfloat16
    assert quantize.weights_bytes(model) * 2 == quantize.weights_bytes(_model())


def test_quantized_inductor_code_runs_an_int8_matmul() -> None:
    """The effect in the generated code: quantized, Inductor's kernels read int8 weights."""
    from space_tests.knob_probes import generated_code

    def probe(device: str):  # type: ignore[no-untyped-def]
        return _model().to(device), (torch.randn(8, 128, device=device),)

    plain = generated_code(probe, CompileConfig(dynamic=False))
    quantized = generated_code(
        probe, CompileConfig(dynamic=False, precision={"quantize": "int8-dynamic"})
    )
    assert plain != quantized
    assert "int8" in "".join(quantized) and "int8" not in "".join(plain)


def test_a_scheme_this_device_does_not_run_is_refused_before_anything_changes() -> None:
    model = _model()
    with pytest.raises(QuantizeError, match="'int4-weight-only' runs on cuda, not on cpu"):
        autotune.apply(model, {"backend": "eager", "precision": {"quantize": "int4-weight-only"}})
    assert _weight_types(model) == ["Parameter"] * 3


def test_without_torchao_apply_refuses_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(quantize, "torchao_version", lambda: None)
    model = _model()
    with pytest.raises(ConfigError) as raised:
        autotune.apply(model, {"backend": "eager", "precision": {"quantize": "int8-dynamic"}})
    message = str(raised.value)
    assert isinstance(raised.value, QuantizeError) and "\n" not in message
    assert "torchao, which is not installed here" in message
    assert "pip install 'autotune[quantize]'" in message
    assert _weight_types(model) == ["Parameter"] * 3  # refused before anything changed


def test_quantize_layers_without_a_scheme_is_a_config_problem() -> None:
    with pytest.raises(ConfigError, match="quantize is absent"):
        CompileConfig(precision={"quantize_layers": "except-last"})


def test_a_quantized_config_changes_precision_and_weights_and_says_so() -> None:
    config = CompileConfig(
        precision={"quantize": "int8-dynamic", "quantize_layers": "except-last"}
    )
    assert config.changes_precision and config.changes_weights
    assert "quantize=int8-dynamic-head" in config.brief()
    assert not CompileConfig(precision={"autocast": "bfloat16"}).changes_weights


def test_a_quantized_file_applies_in_a_fresh_process(tmp_path: Path) -> None:
    """What production does: a best-config file that quantizes, applied by a new process that
    imports torch and autotune only (torchao is imported by apply, for this config)."""
    config = CompileConfig(
        backend="aot_eager", dynamic=False, precision={"quantize": "int8-dynamic"}
    )
    path = tmp_path / "best_config.json"
    best = {
        "schema_version": 1, "autotune_version": autotune.__version__, "decision": "compile",
        "reason": "test", "config": config.to_dict(), "config_hash": config.config_hash(),
    }  # fmt: skip
    path.write_text(json.dumps(best))
    script = textwrap.dedent(f"""
        import sys, torch, autotune
        assert "torchao" not in sys.modules
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU()).eval()
        x = torch.randn(4, 64)
        want = model(x)
        with torch.no_grad():
            fast = autotune.apply(model, {str(path)!r}, check_environment=False)
            got = fast(x)
        print(type(model[0].weight).__name__, "torchao" in sys.modules,
              float(torch.nn.functional.cosine_similarity(got.flatten(), want.flatten(), dim=0)))
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    kind, imported, cosine = done.stdout.split()
    assert kind == "Int8Tensor" and imported == "True" and float(cosine) > 0.999


def test_a_model_apply_quantized_is_the_one_it_was_given() -> None:
    """Quantized in place, like a regional compile: the caller's model holds the int8 weights."""
    model = _model()
    copy_before = copy.deepcopy(model)
    compiled = autotune.apply(
        model, {"backend": "eager", "precision": {"quantize": "int8-dynamic"}}
    )
    assert _weight_types(model) == ["Int8Tensor"] * 3
    assert _weight_types(copy_before) == ["Parameter"] * 3
    assert compiled(torch.randn(2, 128)).shape == (2, 10)


def test_the_files_schema_takes_each_scheme_the_runtime_applies_and_no_other() -> None:
    """The schema validates a file without torch, on the runtime's own schemes."""
    from autotune.runtime._schema import precision_problems

    for scheme in quantize.SCHEMES:
        assert precision_problems({"quantize": scheme}, "config.precision") == []
    (problem,) = precision_problems({"quantize": "int3-magic"}, "config.precision")
    assert "int3-magic" in problem and "int8-dynamic" in problem
