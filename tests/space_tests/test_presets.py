"""A space's presets: each mode on its own, then the [presets] table, validated like knobs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autotune.space import SpaceError, load_space, space_from_dict
from autotune.space._levers import native_bf16


def _space(tmp_path: Path, text: str, workload: str = "infer"):
    path = tmp_path / "s.toml"
    path.write_text(text)
    return load_space(str(path), "cpu", workload=workload)


SPACE = """
[compile]
mode = ["default", "max-autotune-no-cudagraphs"]
dynamic = ["auto", false]

[inductor]
freezing = { choices = [false, true], when = "workload == 'infer'" }
max_fusion_size = [64, 128]
"""


def test_each_mode_is_a_preset_then_the_declared_ones_in_order(tmp_path):
    space = _space(tmp_path, SPACE + '[presets]\nfrozen = { "inductor.freezing" = true }\n')
    assert [p.name for p in space.presets] == ["max-autotune-no-cudagraphs", "frozen"]
    configs = [space.preset_config(p) for p in space.presets]
    # exactly the knobs a preset names: the others stay as torch leaves them
    assert configs[0].mode == "max-autotune-no-cudagraphs" and "freezing" not in configs[0].options
    assert configs[1].options == {"freezing": True} and configs[1].dynamic is None
    assert "max_fusion_size" not in configs[1].options


def test_presets_are_validated_like_knobs_and_every_problem_is_listed(tmp_path):
    with pytest.raises(SpaceError) as caught:
        _space(tmp_path, SPACE + """
[presets]
a = { "inductor.freezin" = true }
b = { "inductor.max_fusion_size" = 100 }
c = { "inductor.freezing" = 1 }
d = 3
""")  # fmt: skip
    text = str(caught.value)
    assert "presets.a: 'inductor.freezin' is not a knob of this space (did you mean" in text
    assert "presets.b: inductor.max_fusion_size = 100 is not one of its choices (64, 128)" in text
    assert "presets.c: inductor.freezing = 1 is not one of its choices" in text  # 1 is no bool
    assert "presets.d must be a non-empty table" in text


def test_a_preset_switched_off_by_a_condition_is_left_out_with_a_note(tmp_path):
    space = _space(
        tmp_path, SPACE + '[presets]\nfrozen = { "inductor.freezing" = true }\n', workload="train"
    )
    assert [p.name for p in space.presets] == ["max-autotune-no-cudagraphs"]
    assert any("preset 'frozen' is not measured here: inductor.freezing" in n for n in space.notes)


def test_a_training_or_generation_preset_is_left_out_of_an_inference_study_without_a_note():
    space = load_space("cpu", "cpu", workload="infer")
    names = [p.name for p in space.presets]
    assert "compiled-optimizer" not in names and "compiled-prefill" not in names
    assert not any("compiled-optimizer" in n or "compiled-prefill" in n for n in space.notes)
    train = load_space("cpu", "cpu", workload="train")
    assert "compiled-optimizer" in [p.name for p in train.presets]


def test_presets_survive_the_stored_form_and_do_not_change_the_space_hash(tmp_path):
    plain = _space(tmp_path, SPACE)
    with_presets = _space(
        tmp_path, SPACE + '[presets]\nbig = { "inductor.max_fusion_size" = 128 }\n'
    )
    assert plain.content_hash() == with_presets.content_hash()
    again = space_from_dict(with_presets.to_dict(), "cpu")
    assert [p.name for p in again.presets] == ["max-autotune-no-cudagraphs", "big"]


def test_the_declared_order_survives_storage_that_sorts_keys(tmp_path):
    """The budget takes presets in order; records store JSON with sorted keys."""
    space = _space(tmp_path, SPACE + '[presets]\nzz = { "inductor.freezing" = true }\n'
                   'aa = { "inductor.max_fusion_size" = 128 }\n')  # fmt: skip
    stored = json.loads(json.dumps(space.to_dict(), sort_keys=True))
    again = space_from_dict(stored, "cpu")
    assert [p.name for p in again.presets] == ["max-autotune-no-cudagraphs", "zz", "aa"]


def test_a_child_space_replaces_or_adds_presets_by_name(tmp_path):
    (tmp_path / "base.toml").write_text(
        SPACE + '[presets]\nbig = { "inductor.max_fusion_size" = 128 }\n'
    )
    child = tmp_path / "child.toml"
    child.write_text('extends = "base.toml"\n[presets]\nfrozen = { "inductor.freezing" = true }\n')
    space = load_space(str(child), "cpu")
    assert [p.name for p in space.presets] == ["max-autotune-no-cudagraphs", "big", "frozen"]


def test_the_builtin_spaces_declare_what_practitioners_try_first():
    cpu = load_space("cpu", "cpu")
    backends = ["openvino"] if "openvino" in cpu.preset_table else []
    assert [p.name for p in cpu.presets] == [
        "max-autotune-no-cudagraphs", *backends, "max-autotune-no-cudagraphs+freezing",
        "freezing",
    ]  # fmt: skip
    contract = [p.name for p in load_space("cpu", "cpu", accuracy_contract=True).presets]
    if native_bf16("cpu"):
        assert "bf16-autocast" in contract
    quick = load_space("quick", "cpu")
    assert "max-autotune-no-cudagraphs+freezing" in [p.name for p in quick.presets]


def test_a_preset_waiting_on_a_study_condition_says_which(tmp_path):
    """A preset whose knobs wait on an accuracy contract, or on a model that says how its
    inputs pad, is left out with a note naming that condition, not "off here"."""
    waiting = """
[compile]
mode = ["default"]

[inductor]
freezing = { choices = [false, true], when = "accuracy_contract" }
"shape_padding" = { choices = [false, true], when = "padding" }

[presets]
frozen = { "inductor.freezing" = true }
padded = { "inductor.shape_padding" = true }
"""
    notes = _space(tmp_path, waiting).notes
    assert (
        "preset 'frozen' is measured only under an accuracy contract: it sets inductor.freezing, "
        "which changes numerics (state one with --accuracy)"
    ) in notes
    assert (
        "preset 'padded' is measured only for a model that declares how its inputs pad (a model "
        "file's PADDING): it sets inductor.shape_padding"
    ) in notes
