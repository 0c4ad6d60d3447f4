"""Issue 56: counting a space (its size, ``spaces --check``, every worker's check that the
space is spent) kept apart every combination of the knobs that conditions read, so 30 booleans
read by one condition passed validation and counted for days, in the main process of every
worker that joined. The combinations are bounded at validation, and a count refuses a plan
that validation did not see instead of running."""

from __future__ import annotations

import itertools
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from autotune.space import SpaceError, _graph, load_space, space_from_dict
from autotune.space._graph import LEAVE, make_plan
from autotune.space._knob import Knob
from space_tests.wide import bool_knobs, reader_of, wide_space, wide_toml


@pytest.mark.parametrize("reads", [14, 31])
def test_a_condition_reading_more_combinations_than_the_bound_is_refused(reads):
    with pytest.raises(SpaceError) as info:
        space_from_dict(wide_space(reads), "cpu", source="study s")  # a worker reads it so

    (problem,) = [line for line in str(info.value).splitlines() if line.startswith("  - ")]
    assert problem.startswith(f"  - {reader_of(reads)}: its conditions read {reads} knobs (")
    assert f"combine in {2**reads:,} ways" in problem
    assert f"at most {_graph.MAX_CONDITION_COMBINATIONS:,} combinations" in problem
    assert problem.endswith("read fewer knobs, or knobs with fewer values, or split the condition "
                            "between knobs")  # fmt: skip


def test_a_space_file_whose_condition_reads_too_many_combinations_is_refused(tmp_path):
    path = tmp_path / "wide.toml"
    path.write_text(wide_toml(31))

    with pytest.raises(SpaceError, match=f"{reader_of(31)}: its conditions read 31 knobs"):
        load_space(str(path), "cpu")


def test_the_widest_condition_allowed_is_counted_exactly():
    reads = 13  # 8,192 combinations: the last power of two under the bound
    space = space_from_dict(wide_space(reads), "cpu")

    # the reader is off (one configuration) only where every knob it reads is false
    assert space.size == (2**reads - 1) * 2 + 1
    assert space.size_leaving([reader_of(reads)]) == 2**reads


def test_conditions_keeping_too_many_combinations_apart_together_are_refused():
    """Two conditions of nine knobs each are fine alone; listed after all eighteen, counting
    keeps the 2**18 combinations of both apart at once."""
    names = bool_knobs(20)
    first, second, (x, y) = names[:9], names[9:18], names[18:]
    knobs = {n: [False, True] for n in (*first, *second)}
    knobs[x] = {"choices": [False, True], "when": " or ".join(f"inductor.{n}" for n in first)}
    knobs[y] = {"choices": [False, True], "when": " or ".join(f"inductor.{n}" for n in second)}

    with pytest.raises(SpaceError) as info:
        space_from_dict({"inductor": knobs}, "cpu")
    message = str(info.value)
    assert f"inductor.{x}: counting the space's configurations would take about " in message
    assert f"more than the {_graph.MAX_COUNT_STEPS:,} allowed, most of them at this " in message
    assert "which keeps apart the 262,144 combinations of the knobs" in message
    assert "list each knob right after the knobs its condition reads" in message

    # the remedy: each condition right after what it reads
    reordered = {n: knobs[n] for n in (*first, x, *second, y)}
    space = space_from_dict({"inductor": reordered}, "cpu")
    assert space.size == (2**9 * 2 - 1) ** 2


def test_counting_a_plan_validation_never_saw_refuses_instead_of_running():
    """Plan.count guards itself: no path to it (a space built in code, one stored under an
    older rule) can hang. A subprocess with a generous timeout detects a hang."""
    code = textwrap.dedent(
        """
        from autotune.space import SpaceError
        from autotune.space._graph import make_plan
        from autotune.space._knob import Knob

        knobs = [Knob("inductor", f"k{i}", (False, True)) for i in range(30)]
        when = " or ".join(f"inductor.k{i}" for i in range(30))
        knobs.append(Knob("inductor", "x", (False, True), when=when))
        try:
            make_plan(knobs).count({})
        except SpaceError as exc:
            print(exc)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.startswith("The search space cannot be counted: inductor.x: its ")
    assert "Traceback" not in done.stderr


def _enumerated(knobs: list[Knob], leave: frozenset[str] = frozenset()) -> int:
    """The distinct configurations of ``knobs``, by trying every combination of their values."""
    plan = make_plan(knobs)
    seen = set()
    for values in itertools.product(*(k.values() for k in knobs)):
        chosen = dict(zip((k.param for k in knobs), values, strict=True))

        def pick(knob: Knob, chosen: dict[str, Any] = chosen) -> Any:
            return LEAVE if knob.param in leave else chosen[knob.param]

        seen.add(tuple(sorted(plan.assign(pick, {"device": "cpu"}).items())))
    return len(seen)


def _knob(name: str, values: tuple[Any, ...], when: str | None = None) -> Knob:
    return Knob("inductor", name, values, when=when)


@pytest.mark.parametrize(
    "leave", [frozenset(), frozenset({"inductor.b"}), frozenset({"inductor.m", "inductor.e"})]
)
def test_the_count_is_what_enumerating_every_combination_finds(leave):
    knobs = [
        _knob("a", (False, True)),
        _knob("m", (1, 2, 3)),
        _knob("b", (False, True), when="inductor.a"),
        _knob("c", ("x", "y"), when="inductor.m >= 2 or inductor.b"),
        _knob("d", (1, 2, 3, 4), when="not inductor.a and device == 'cpu'"),
        _knob("e", (False, True), when="inductor.c == 'y' or inductor.m == 1"),
        _knob("f", (5, 6), when="inductor.e and inductor.b != true"),
    ]
    assert make_plan(knobs).count({"device": "cpu"}, leave) == _enumerated(knobs, leave)
