from __future__ import annotations

import optuna
import pytest
import torch

from autotune.space import SpaceError, builtin_names, load_space, space_from_dict


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("name", ["cpu", "cuda", "quick"])
def test_builtin_spaces_validate_against_the_installed_torch(name, device):
    space = load_space(name, device)
    with_numerics = load_space(name, device, allow_numerics_changes=True)
    assert {k.param for k in space.knobs} >= {
        "compile.mode",
        "compile.dynamic",
        "inductor.freezing",
    }
    assert space.name == name and space.description
    assert with_numerics.size >= space.size >= 8
    assert space_from_dict(space.to_dict(), device) == space


def test_the_device_spaces_hold_the_knobs_that_matter_there():
    cpu = {k.param for k in load_space("cpu", "cpu", allow_numerics_changes=True).knobs}
    cuda = {k.param for k in load_space("cuda", "cuda", allow_numerics_changes=True).knobs}
    assert {
        "inductor.cpp.simdlen",
        "inductor.cpp_wrapper",
        "inductor.cpp.max_horizontal_fusion_size",
        "inductor.cpp.enable_unsafe_math_opt_flag",
    } <= cpu
    assert {
        "inductor.max_autotune_gemm_backends",
        "inductor.coordinate_descent_tuning",
        "inductor.epilogue_fusion",
        "inductor.aggressive_fusion",
        "inductor.shape_padding",
        "inductor.triton.persistent_reductions",
        "inductor.use_fast_math",
    } <= cuda
    modes = {k.param: k for k in load_space("cuda", "cuda").knobs}["compile.mode"].choices
    assert "reduce-overhead" in modes


def test_the_quick_space_is_small():
    assert load_space("quick", "cpu").size == 8
    assert load_space("quick", "cuda").size == 16


def test_builtin_names_lists_the_files():
    assert {"cpu", "cuda", "quick"} <= set(builtin_names())


def test_every_problem_is_listed_at_once(space_file):
    with pytest.raises(SpaceError) as info:
        load_space(space_file("bad"), "cpu")
    message = str(info.value)
    assert "max-autotune-fast" in message
    assert "unknown key compile.dinamic (did you mean dynamic?)" in message
    assert "unknown key inductor.freezin" in message and "did you mean freezing" in message
    assert "inductor.max_fusion_size: 'big' is not a int" in message
    assert "inductor.cpp.simdlen: 1024 is not a vector width" in message
    assert "5 problems" in message


def test_unknown_space_name_lists_the_builtin_ones():
    with pytest.raises(SpaceError, match="built-in spaces are cpu, cuda"):
        load_space("nope", "cpu")


def test_knobs_inert_on_the_device_are_flagged():
    space = space_from_dict({"inductor": {"triton.max_tiles": [1, 2]}}, "cpu")
    assert any("does nothing on cpu" in note for note in space.notes)


def test_suggested_configs_expand_the_mode_and_drop_defaults():
    raw = {
        "compile": {"mode": ["max-autotune-no-cudagraphs"], "dynamic": ["auto"]},
        "inductor": {"freezing": [True], "max_fusion_size": [64]},
    }
    space = space_from_dict(raw, "cpu")
    study = optuna.create_study()
    config = space.suggest(study.ask())
    assert config.mode == "max-autotune-no-cudagraphs"
    assert config.dynamic is None
    assert config.options == {
        "max_autotune": True,
        "coordinate_descent_tuning": True,
        "freezing": True,
    }  # max_fusion_size=64 is torch's default
    assert "mode" not in config.compile_kwargs()


def test_equal_compiles_have_equal_hashes():
    explicit = space_from_dict({"inductor": {"freezing": [False]}}, "cpu")
    implicit = space_from_dict({}, "cpu")
    trial = optuna.create_study().ask()
    assert explicit.suggest(trial).config_hash() == implicit.suggest(trial).config_hash()


def test_a_backend_other_than_inductor_takes_no_options(space_file):
    space = load_space(space_file("aot_eager"), "cpu")
    config = space.suggest(optuna.create_study().ask())
    assert config.backend == "aot_eager" and config.options == {}
    assert set(config.compile_kwargs()) == {"backend", "dynamic", "fullgraph"}
    assert torch.compile(torch.nn.Linear(2, 2), **config.compile_kwargs()) is not None
