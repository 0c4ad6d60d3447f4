"""The levers in a space: precision searched only under an accuracy contract and only where the
hardware runs bf16 natively; backends searched when installed, their options only for them."""

from __future__ import annotations

import optuna
import pytest

from autotune.space import SpaceError, _levers, load_space, space_from_dict

AMX = frozenset({"avx512f", "amx_bf16", "amx_tile", "avx512_bf16"})


@pytest.fixture
def bf16_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_levers, "cpu_flags", lambda: AMX)


@pytest.fixture
def plain_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_levers, "cpu_flags", lambda: frozenset({"avx2", "fma"}))


def _configs(space, n: int = 300):  # type: ignore[no-untyped-def]
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    return [space.suggest(study.ask()) for _ in range(n)]


def test_without_a_contract_precision_is_not_searched_and_a_note_says_how(bf16_cpu: None) -> None:
    space = load_space("cpu", "cpu")
    assert not any(k.layer == "precision" for k in space.knobs)
    assert any("[precision] knobs" in n and "--accuracy" in n for n in space.notes)
    assert "bf16-autocast" not in [p.name for p in space.presets]
    assert not any(c.precision for c in _configs(space))


def test_under_a_contract_a_bf16_cpu_searches_precision(bf16_cpu: None) -> None:
    space = load_space("cpu", "cpu", accuracy_contract=True)
    assert space.accuracy_contract and space.to_dict()["accuracy_contract"] is True
    configs = _configs(space)
    assert {c.precision.get("autocast") for c in configs} == {None, "bfloat16"}
    assert {c.precision.get("matmul") for c in configs} == {None, "medium"}
    assert "bf16-autocast" in [p.name for p in space.presets]
    preset = space.preset_config(space.preset("bf16-autocast"))  # type: ignore[arg-type]
    assert preset.precision == {"autocast": "bfloat16"} and preset.backend == "inductor"
    assert space.relaxes_numerics(preset)
    assert space_from_dict(space.to_dict(), "cpu") == space
    assert load_space("cpu", "cpu").content_hash() != space.content_hash()


def test_a_cpu_without_bf16_is_never_offered_bf16(plain_cpu: None) -> None:
    space = load_space("cpu", "cpu", accuracy_contract=True)
    for config in _configs(space):
        assert not config.changes_precision, config.brief()
    assert "bf16-autocast" not in [p.name for p in space.presets]
    assert any("'bf16-autocast' is not measured" in n for n in space.notes)


def test_a_bf16_cpu_without_amx_gets_autocast_but_not_the_matmul_precision(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """oneDNN runs float32 matmuls in bf16 on AMX only (on an AMD EPYC with AVX512-BF16,
    "medium" moved outputs by float32 rounding alone): there the knob would measure nothing."""
    monkeypatch.setattr(_levers, "cpu_flags", lambda: frozenset({"avx512f", "avx512_bf16"}))
    configs = _configs(load_space("cpu", "cpu", accuracy_contract=True))
    assert {c.precision.get("autocast") for c in configs} == {None, "bfloat16"}
    assert {c.precision.get("matmul") for c in configs} == {None}


def test_float16_autocast_is_refused_on_a_cpu() -> None:
    raw = {"precision": {"autocast": ["none", "float16"]}}
    with pytest.raises(SpaceError, match="autocast: 'float16' is for CUDA"):
        space_from_dict(raw, "cpu")


def test_an_unknown_precision_value_is_refused() -> None:
    with pytest.raises(SpaceError, match="'int8' is not one of 'none', 'bfloat16', 'float16'"):
        space_from_dict({"precision": {"autocast": ["none", "int8"]}}, "cpu")


class TestOpenVINO:
    @pytest.fixture(autouse=True)
    def _installed(self) -> None:
        pytest.importorskip("openvino")

    def test_its_options_are_suggested_only_for_it_and_its_precision_pinned(self) -> None:
        configs = _configs(load_space("cpu", "cpu"))
        openvino = [c for c in configs if c.backend == "openvino"]
        inductor = [c for c in configs if c.backend == "inductor"]
        assert openvino and inductor
        for config in openvino:
            assert config.options["INFERENCE_PRECISION_HINT"] == "f32"
            assert not config.changes_precision and config.mode == "default"
        assert not any("PERFORMANCE_HINT" in c.options for c in inductor)
        assert "openvino" in [p.name for p in load_space("cpu", "cpu").presets]

    def test_an_unknown_or_refused_option_is_a_problem(self) -> None:
        raw = {"compile": {"backend": ["openvino"]},
               "openvino": {"PERFORMANCE_HNT": ["LATENCY"], "cache_dir": ["/tmp/x"]}}  # fmt: skip
        with pytest.raises(SpaceError) as raised:
            space_from_dict(raw, "cpu")
        assert "did you mean PERFORMANCE_HINT" in str(raised.value)
        assert "openvino.cache_dir: not allowed" in str(raised.value)


def test_a_backend_not_installed_leaves_a_builtin_space_with_a_note(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_levers, "installed", lambda backend: backend != "openvino")
    space = load_space("cpu", "cpu")
    backend = next(k for k in space.knobs if k.param == "compile.backend")
    assert backend.values() == ["inductor"]
    assert any(
        "'openvino' is not searched" in n and "autotune[openvino]" in n for n in space.notes
    )
    assert "openvino" not in [p.name for p in space.presets]
    assert space_from_dict(space.to_dict(), "cpu") == space  # a worker reads it back
    with pytest.raises(SpaceError, match=r"'openvino' is not installed here \(pip install"):
        space_from_dict({"compile": {"backend": ["inductor", "openvino"]}}, "cpu")


def test_a_training_study_searches_bf16_the_compiled_optimizer_and_no_openvino(
    bf16_cpu: None,
) -> None:
    space = load_space("cpu", "cpu", workload="train", accuracy_contract=True)
    configs = _configs(space)
    assert {c.precision.get("autocast") for c in configs} == {None, "bfloat16"}
    assert {c.precision.get("matmul") for c in configs} == {None}  # a backward runs outside
    assert {c.train.get("optimizer") for c in configs} == {None, "compiled"}
    assert {c.backend for c in configs} == {"inductor"}
    assert any("backend 'openvino' is not searched" in n for n in space.notes)
    names = [p.name for p in space.presets]
    assert names.index("bf16-autocast+compiled-optimizer") < names.index("bf16-autocast")
    both = space.preset_config(space.preset("bf16-autocast+compiled-optimizer"))  # type: ignore[arg-type]
    assert both.train == {"optimizer": "compiled"} and space.relaxes_numerics(both)
    # An inference study never offers the training levers, nor measures their presets.
    inference = load_space("cpu", "cpu", accuracy_contract=True)
    assert not any(c.train for c in _configs(inference))
    assert "compiled-optimizer" not in [p.name for p in inference.presets]


PADDING = {"inputs": {"input_ids": {"dim": 1, "value": 0}}, "outputs": {"last_hidden_state": 1}}


def test_shape_plans_are_searched_only_with_a_padding_declaration() -> None:
    plain = load_space("cpu", "cpu")
    assert not any(k.param == "shapes.plan" for k in plain.knobs if k.when is None)
    assert {p.name for p in plain.presets}.isdisjoint({"marked-dims", "pad-pow2"})
    served = load_space("cpu", "cpu", padding=PADDING)
    drawn = {(c.shapes.get("plan"), c.shapes.get("eager_above")) for c in _configs(served, 300)}
    assert {plan for plan, _ in drawn} == {None, "auto", "marked", "pad-pow2", "pad-64"}
    assert {above for _, above in drawn} == {None, 8, 32}  # the compile threshold
    assert ("auto", None) not in drawn  # auto without a threshold is no plan at all
    config = served.preset_config(next(p for p in served.presets if p.name == "pad-pow2"))
    assert config.shapes == {"plan": "pad-pow2", **PADDING}  # the declaration travels with it
    assert config.compile_kwargs()["dynamic"] is False  # a graph per bucket
    again = space_from_dict(served.to_dict(), "cpu")  # as a worker reads it from the study
    assert again == served and again.padding == PADDING


def test_a_plan_offered_without_a_declaration_or_a_broken_declaration_is_refused() -> None:
    raw = {"name": "s", "shapes": {"plan": ["auto", "pad-pow2"]}}
    with pytest.raises(SpaceError, match="shapes.plan applies the model's padding declaration"):
        space_from_dict(raw, "cpu")
    broken = {"name": "s", "padding": {"inputs": {"input_ids": {"dim": -1, "value": 0}}}}
    with pytest.raises(SpaceError, match=r"padding.inputs.input_ids.dim: expected a dimension"):
        space_from_dict(broken, "cpu")


VNNI = AMX | {"avx512_vnni", "amx_int8"}


def test_under_a_contract_a_vnni_cpu_with_torchao_searches_int8(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("torchao")
    monkeypatch.setattr(_levers, "cpu_flags", lambda: VNNI)
    space = load_space("cpu", "cpu", accuracy_contract=True)
    configs = _configs(space)
    schemes = {c.precision.get("quantize") for c in configs}
    assert schemes == {None, "int8-dynamic", "int8-weight-only"}
    assert {c.precision.get("quantize_layers") for c in configs if c.changes_weights} >= {
        None, "except-last"
    }  # fmt: skip
    assert not any("quantize_layers" in c.precision and "quantize" not in c.precision
                   for c in configs)  # fmt: skip
    assert {"int8-dynamic", "int8-dynamic+freezing"} <= {p.name for p in space.presets}
    assert not any("weights" in c.precision for c in configs)  # generation only
    generate = load_space("cpu", "cpu", accuracy_contract=True, workload="generate")
    assert {c.precision.get("weights") for c in _configs(generate)} == {None, "bfloat16"}
    # half of an 8-trial decode search's budget goes to presets: int8 dynamic is among them,
    # and without a contract Hugging Face's recipe (the compiled prefill) is
    assert [p.name for p in generate.presets].index("int8-dynamic") < 8 // 2
    plain = load_space("cpu", "cpu", workload="generate")
    assert [p.name for p in plain.presets].index("compiled-prefill") < 8 // 2


def test_without_torchao_or_int8_instructions_int8_is_left_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from autotune.runtime import quantize

    monkeypatch.setattr(_levers, "cpu_flags", lambda: AMX)  # bf16, but no int8 dot products
    assert not any(
        c.changes_weights for c in _configs(load_space("cpu", "cpu", accuracy_contract=True))
    )
    monkeypatch.setattr(_levers, "cpu_flags", lambda: VNNI)
    monkeypatch.setattr(quantize, "torchao_version", lambda: None)
    space = load_space("cpu", "cpu", accuracy_contract=True)
    assert not any(c.changes_weights for c in _configs(space))
    assert "int8-dynamic" not in [p.name for p in space.presets]


def test_a_users_space_that_quantizes_needs_torchao_and_a_scheme_this_device_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from autotune.runtime import quantize

    pytest.importorskip("torchao")
    with pytest.raises(SpaceError, match="'int4-weight-only' runs on cuda, not on cpu"):
        space_from_dict({"precision": {"quantize": ["none", "int4-weight-only"]}}, "cpu")
    monkeypatch.setattr(quantize, "torchao_version", lambda: None)
    with pytest.raises(SpaceError, match=r"needs torchao.*autotune\[quantize\]"):
        space_from_dict({"precision": {"quantize": ["none", "int8-dynamic"]}}, "cpu")
    guarded = {"choices": ["none", "int8-dynamic"], "when": "torchao"}
    space_from_dict({"precision": {"quantize": guarded}}, "cpu")  # left out where missing
