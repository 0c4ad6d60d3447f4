"""`extends`: a space built on a built-in space or another file, stored fully resolved."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autotune.space import SpaceError, load_space, space_from_dict

SPACES_PAGE = Path(__file__).resolve().parents[2] / "docs" / "spaces.md"


def write(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(text)
    return str(path)


def test_a_child_overrides_adds_and_removes_knobs_of_a_builtin_space(tmp_path):
    path = write(
        tmp_path,
        "mine.toml",
        """
extends = "cpu"
remove = ["inductor.aggressive_fusion", "inductor.cpp.enable_unsafe_math_opt_flag"]
[compile]
dynamic = [false]
[inductor]
"cpp.threads" = { low = 1, high = 2 }
""",
    )
    base, space = load_space("cpu", "cpu"), load_space(path, "cpu")
    knobs = {k.param: k for k in space.knobs}
    assert knobs["compile.dynamic"].choices == (False,)
    assert knobs["inductor.cpp.threads"].range is not None
    assert "inductor.aggressive_fusion" not in knobs
    assert knobs["inductor.freezing"] == {k.param: k for k in base.knobs}["inductor.freezing"]
    assert space.name == "mine" and space.description == ""


def test_the_stored_space_is_resolved_and_rebuilds_the_same_space(tmp_path):
    write(tmp_path, "base.toml", "[inductor]\nfreezing = [false, true]\nmax_fusion_size = [64]\n")
    path = write(
        tmp_path, "child.toml", 'extends = "base.toml"\n[inductor]\nmax_fusion_size = [128]\n'
    )
    space = load_space(path, "cpu")
    stored = space.to_dict()
    assert "extends" not in stored and "remove" not in stored
    assert stored["inductor"] == {"freezing": [False, True], "max_fusion_size": [128]}
    again = space_from_dict(stored, "cpu", source="study s")
    assert again == space and again.content_hash() == space.content_hash()


def test_a_knob_moved_to_the_numerics_group_replaces_the_inherited_one(tmp_path):
    path = write(
        tmp_path,
        "n.toml",
        """
extends = "cuda"
[numerics.inductor]
shape_padding = [true, false]
""",
    )
    space = load_space(path, "cuda", allow_numerics_changes=True)
    (knob,) = [k for k in space.knobs if k.name == "shape_padding"]
    assert knob.numerics


def test_extends_problems_are_listed_with_the_others(tmp_path):
    path = write(
        tmp_path,
        "bad.toml",
        """
extends = "cpu"
remove = ["inductor.freezin", "inductor.nothing"]
[inductor]
max_fusion_size = ["big"]
""",
    )
    with pytest.raises(SpaceError) as info:
        load_space(path, "cpu")
    message = str(info.value)
    assert "remove: inductor.freezin is not a knob of 'cpu'" in message
    assert "(did you mean inductor.freezing?)" in message
    assert "remove: inductor.nothing is not a knob of 'cpu'" in message
    assert "'big' is not a int" in message and "3 problems" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('extends = "nope"', "no built-in search space named 'nope'"),
        ('extends = "missing.toml"', "does not exist"),
        ("extends = 3", "extends must be a built-in space name or a .toml path, got 3"),
        ('remove = ["inductor.freezing"]', "remove = [...] applies only with extends"),
        ('extends = "loop.toml"', "extends makes a cycle (loop.toml -> loop.toml)"),
    ],
)
def test_a_bad_extends_is_refused(tmp_path, text, expected):
    path = write(tmp_path, "loop.toml", text + "\n")
    with pytest.raises(SpaceError, match=re.escape(expected)):
        load_space(path, "cpu")


def test_the_documented_example_is_a_valid_space(tmp_path):
    section = SPACES_PAGE.read_text().split("# Search spaces", 1)[1].split("\n## ", 1)[0]
    example = section.split("```toml\n", 1)[1].split("```", 1)[0]
    space = load_space(write(tmp_path, "my-space.toml", example), "cuda")
    params = {k.param for k in space.knobs}
    assert "inductor.combo_kernels" not in params and "inductor.benchmark_fusion" in params
    assert space.name == "my-space" and not space.searches_numerics
    assert (
        load_space(str(tmp_path / "my-space.toml"), "cuda", allow_numerics_changes=True).size
        > space.size
    )
