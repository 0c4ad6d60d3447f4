"""`autotune spaces`: list, show and check search spaces; `search --allow-numerics-changes`."""

from __future__ import annotations

import subprocess
import sys

import pytest
from space_tests.wide import reader_of, wide_toml

from autotune.cli import build_parser, main, parse
from autotune.cli.search import search_options
from autotune.search import build_request


def test_spaces_lists_the_builtin_spaces_with_their_descriptions(capsys):
    assert main(["spaces"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = {line.split()[0] for line in lines if line.strip()}
    assert {"cpu", "cuda", "quick"} <= names
    assert any(line.startswith("quick") and "first run" in line for line in lines)


def test_show_prints_each_knob_with_its_type_and_default_on_this_torch(capsys):
    assert main(["spaces", "--show", "cpu"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("space 'cpu' on cpu, torch ")
    assert "run it: autotune search MODEL.py --device cpu --space cpu" in out
    (row,) = [line for line in out.splitlines() if line.startswith("inductor.cpp.simdlen ")]
    assert row.split()[1:5] == ["int", "|", "None", "none"]
    assert "when 512 in cpu_vector_widths" in row
    assert "inductor.cpp.enable_unsafe_math_opt_flag [numerics]" in out
    assert "with --allow-numerics-changes" in out
    assert (
        '  max-autotune-no-cudagraphs+freezing: compile.mode = "max-autotune-no-cudagraphs", '
        "inductor.freezing = true"
    ) in out


def test_show_validates_for_the_device_the_space_is_named_after(capsys):
    assert main(["spaces", "--show", "cuda"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("space 'cuda' on cuda, torch ")
    assert "does nothing on" not in out


def test_check_prints_ok_and_the_number_of_configurations(space_file, capsys):
    assert main(["spaces", "--check", space_file("conditional"), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "ok: 15952 configurations (space 'conditional' on cpu" in out


def test_check_counts_the_numerics_group_only_when_allowed(space_file, capsys):
    assert main(["spaces", "--check", space_file("numerics"), "--device", "cpu"]) == 0
    assert "ok: 2 configurations" in capsys.readouterr().out
    args = [
        "spaces",
        "--check",
        space_file("numerics"),
        "--device",
        "cpu",
        "--allow-numerics-changes",
    ]
    assert main(args) == 0
    assert "ok: 6 configurations" in capsys.readouterr().out


def test_check_lists_every_problem_and_exits_2_without_a_traceback(space_file, capsys):
    assert main(["spaces", "--check", space_file("bad"), "--device", "cpu"]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("autotune: error: The search space ")
    assert "(5 problems)" in captured.err and "Traceback" not in captured.err
    assert "ok:" not in captured.out


def test_show_and_check_are_mutually_exclusive(capsys):
    with pytest.raises(SystemExit) as info:
        main(["spaces", "--show", "cpu", "--check", "cpu"])
    assert info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


@pytest.mark.parametrize("allow", [False, True])
def test_search_passes_allow_numerics_changes_to_the_space(model_file, space_file, allow):
    argv = ["search", model_file("tiny"), "--device", "cpu", "--space", space_file("numerics")]
    parser, commands = build_parser()
    args = search_options(parse(parser, commands, argv + ["--allow-numerics-changes"] * allow))
    stored = build_request(args).settings.space
    assert ("numerics" in stored) is allow
    assert stored.get("allow_numerics_changes", False) is allow


@pytest.mark.parametrize("path", ["search_spaces/cuda.toml", "search_spaces/cpu.toml"])
def test_a_space_file_named_after_a_device_is_checked_for_it(capsys, path):
    """`spaces --check search_spaces/cuda.toml` checked the cuda space for this machine's CPU
    unless --device cuda was added."""
    from pathlib import Path

    root = Path(__file__).parents[2]
    assert main(["spaces", "--check", str(root / path)]) == 0
    device = Path(path).stem
    assert f"(space '{device}' on {device}, torch " in capsys.readouterr().out
    assert main(["spaces", "--check", str(root / path), "--device", "cpu"]) == 0
    assert "on cpu, torch " in capsys.readouterr().out  # --device still decides


def test_check_refuses_a_space_too_costly_to_count_in_one_paragraph(tmp_path):
    """Issue 56: a condition reading 31 booleans passed --check's validation, and counting
    its configurations ran for days; run in a process of its own, so a hang is a timeout."""
    path = tmp_path / "wide.toml"
    path.write_text(wide_toml(31))
    cmd = [sys.executable, "-m", "autotune.cli", "spaces", "--check", str(path), "--device", "cpu"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)

    assert done.returncode == 2 and "ok:" not in done.stdout
    assert done.stderr.startswith("autotune: error: The search space ")
    assert "Traceback" not in done.stderr
    (problem,) = [line for line in done.stderr.splitlines() if line.startswith("  - ")]
    assert problem.startswith(f"  - {reader_of(31)}: its conditions read 31 knobs")
    assert "read fewer knobs" in problem
