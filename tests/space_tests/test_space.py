from __future__ import annotations

import optuna
import pytest
import torch

from autotune.space import SpaceError, builtin_names, load_space, space_from_dict


@pytest.mark.parametrize("name", ["cpu", "cuda"])
def test_builtin_spaces_validate_against_the_installed_torch(name):
    space = load_space(name, "cpu" if name == "cpu" else "cuda")
    assert {k.param for k in space.knobs} >= {
        "compile.mode",
        "compile.dynamic",
        "compile.fullgraph",
        "inductor.freezing",
    }
    assert space.size > 10


def test_builtin_names_lists_the_files():
    assert {"cpu", "cuda"} <= set(builtin_names())


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
