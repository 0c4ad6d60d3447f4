"""Knobs refused from data in a search space: refused unless the user's own file opts in by
name (``[unsafe]``); a space read from a database never opts in by itself."""

from __future__ import annotations

import pytest

from autotune.space import SpaceError, load_space, space_from_dict


def _space(tmp_path, text: str) -> str:
    path = tmp_path / "space.toml"
    path.write_text(text)
    return str(path)


COMPILER = """
[inductor]
"cpp.cxx" = ["/opt/gcc/bin/g++"]
freezing = [false, true]
"""


def test_a_space_file_naming_a_compiler_is_refused_with_the_reason_and_the_remedy(tmp_path):
    with pytest.raises(SpaceError) as info:
        load_space(_space(tmp_path, COMPILER), "cpu")
    message = str(info.value)
    assert "inductor.cpp.cxx names a program or compiler that torch runs" in message
    assert "[unsafe] knobs = [...]" in message


def test_debug_output_and_paths_are_refused_too(tmp_path):
    text = '[inductor]\n"trace.enabled" = [true]\n[dynamo]\ndebug_dir_root = ["/tmp/x"]\n'
    with pytest.raises(SpaceError) as info:
        load_space(_space(tmp_path, text), "cpu")
    assert "inductor.trace.enabled turns on debug" in str(info.value)
    assert "dynamo.debug_dir_root names a file or folder" in str(info.value)


def test_the_users_own_file_opts_in_by_name(tmp_path):
    space = load_space(
        _space(tmp_path, COMPILER + '[unsafe]\nknobs = ["inductor.cpp.cxx"]\n'), "cpu"
    )

    assert space.unsafe_knobs == ("inductor.cpp.cxx",)
    assert space.to_dict()["unsafe"] == {"knobs": ["inductor.cpp.cxx"]}


def test_a_stored_space_opts_in_only_for_the_knobs_the_command_line_names(tmp_path):
    stored = load_space(
        _space(tmp_path, COMPILER + '[unsafe]\nknobs = ["inductor.cpp.cxx"]\n'), "cpu"
    ).to_dict()

    with pytest.raises(SpaceError, match="a space read from a database cannot: pass "
                       "--allow-unsafe-knob inductor.cpp.cxx"):  # fmt: skip
        space_from_dict(stored, "cpu", source="study s")
    vouched = space_from_dict(stored, "cpu", allow_unsafe_knobs=["inductor.cpp.cxx"])
    assert vouched.unsafe_knobs == ("inductor.cpp.cxx",)


def test_a_vouched_name_does_not_let_other_unsafe_knobs_in():
    raw = {
        "inductor": {"cpp.cxx": ["/x"], "trace.enabled": [True]},
        "unsafe": {"knobs": ["inductor.cpp.cxx", "inductor.trace.enabled"]},
    }
    with pytest.raises(SpaceError) as info:
        space_from_dict(raw, "cpu", allow_unsafe_knobs=["inductor.cpp.cxx"])
    problems = str(info.value).split("\n")[1:-1]
    assert len(problems) == 1 and "inductor.trace.enabled turns on debug" in problems[0]


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ('[unsafe]\nknobs = "inductor.cpp.cxx"\n', "[unsafe] holds one key"),
        ('[unsafe]\nknobs = ["cpp.cxx"]\n', "[unsafe] holds one key"),
        ('[unsafe]\nknobs = ["inductor.cpp.cxx"]\nwhy = "x"\n', "[unsafe] holds one key"),
        ('[unsafe]\nknobs = ["inductor.cpp.cxx", "inductor.debug"]\n',
         "[unsafe] names inductor.debug, which is not a knob of this space"),
    ],
)  # fmt: skip
def test_a_malformed_unsafe_table_is_a_clear_problem(tmp_path, table, problem):
    with pytest.raises(SpaceError) as info:
        load_space(_space(tmp_path, COMPILER + table), "cpu")
    assert problem in str(info.value)


def test_a_space_read_from_data_names_no_other_file(tmp_path):
    with pytest.raises(SpaceError, match="extends/remove name other space files"):
        space_from_dict({"extends": str(tmp_path / "other.toml")}, "cpu")


TESTING = "relu_accuracy_error_TESTING_ONLY"
TEST_BACKEND = f'[compile]\nbackend = ["aot_eager", "{TESTING}"]\n'


def test_a_backend_torch_keeps_for_its_tests_is_refused_unless_opted_into(tmp_path):
    """Issue 41, item 3: a stored space naming it made a worker run 9 trials with a backend
    that corrupts outputs; only "is it registered" was checked."""
    with pytest.raises(SpaceError) as info:
        load_space(_space(tmp_path, TEST_BACKEND), "cpu")
    message = str(info.value)
    assert f"compile.backend '{TESTING}' exists for torch's own tests" in message
    assert f"name backend.{TESTING} in this space file's [unsafe] knobs" in message
    opted = TEST_BACKEND + f'[unsafe]\nknobs = ["backend.{TESTING}"]\n'
    space = load_space(_space(tmp_path, opted), "cpu")
    assert space.unsafe_knobs == (f"backend.{TESTING}",)
    stored = space.to_dict()
    with pytest.raises(SpaceError, match=f"--allow-unsafe-knob backend.{TESTING} if you trust"):
        space_from_dict(stored, "cpu", source="study s")  # a database cannot opt in
    vouched = space_from_dict(stored, "cpu", allow_unsafe_knobs=[f"backend.{TESTING}"])
    assert vouched.unsafe_knobs == (f"backend.{TESTING}",)
