"""Issue 56: only the parse of a condition was guarded; checking and evaluating it recursed
without a bound, so ``"not " * 1500 + "x"`` or a long dotted name was a RecursionError (a
traceback on the CLI, a crashed worker on a stored space). A condition is now refused past a
stated depth and length, and reading any text ends in a Condition or a ConditionError."""

from __future__ import annotations

import operator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autotune.space import SpaceError, _condition, load_space, space_from_dict
from autotune.space._condition import ConditionError, parse

DEEP = [
    "not " * 1500 + "x",
    "not " * 1_000 + "device == 'cpu'",
    "a." * 1500 + "b == 1",
    "inductor.freezing" + ".a" * 2000,
    "-" * 1500 + "1",
    "(x and " * 150 + "y" + ")" * 150,
    "[" + "not " * 1500 + "x]",
]


@pytest.mark.parametrize("text", DEEP, ids=lambda text: f"{text[:12]}...{len(text)}")
def test_a_condition_nested_past_the_limit_is_refused_with_the_limit(text):
    with pytest.raises(ConditionError) as info:
        parse(text)
    assert f"but a condition may nest at most {_condition.MAX_DEPTH}" in str(info.value)
    assert "write it flatter" in str(info.value)


@pytest.mark.parametrize("text", DEEP[:3], ids=["not", "not-device", "dotted"])
def test_a_space_with_a_deep_condition_is_a_space_error_for_files_and_stored_rows(tmp_path, text):
    raw = {"inductor": {"freezing": {"choices": [False, True], "when": text}}}
    path = tmp_path / "deep.toml"
    path.write_text(f'[inductor]\nfreezing = {{ choices = [false, true], when = "{text}" }}\n')
    refused = "inductor.freezing: when = .* cannot be used: it nests"

    with pytest.raises(SpaceError, match=refused):
        space_from_dict(raw, "cpu")  # was RecursionError from _check or _dotted
    with pytest.raises(SpaceError, match=refused):
        load_space(str(path), "cpu")


def test_a_condition_at_the_limit_is_read_and_evaluated():
    depth = _condition.MAX_DEPTH
    nested_and = "(x and " * (depth - 1) + "y" + ")" * (depth - 1)
    for text in ("not " * (depth - 1) + "x", "a." * (depth - 2) + "b", nested_and):
        condition = parse(text)
        condition.evaluate({"x": True, "y": True})
        assert list(condition.compared_literals()) == []


def test_a_condition_longer_than_the_limit_is_refused_before_it_is_parsed():
    text = " or ".join(["compile.mode == 'default'"] * 1000)

    with pytest.raises(ConditionError) as info:
        parse(text)
    assert f"{len(text):,} characters long, but a condition may be at most " in str(info.value)


_TOKENS = ["not ", "a.", "(", ")", "[", "-", "~", "x == ", "x and ", "x or ", "f(", "lambda: "]
_COUNTS = [1, 99, 100, 101, 2_499]
_HOSTILE = st.one_of(
    st.text(max_size=64),
    st.builds(
        operator.add,
        st.builds(
            operator.mul, st.sampled_from(_TOKENS), st.sampled_from([1, 99, 100, 101, 2_499])
        ),
        st.sampled_from(["x", "1", "device == 'cpu'", "", "\x00", "\ud800", "9" * 5000, "a.b"]),
    ),
)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(_HOSTILE)
def test_reading_any_text_ends_in_a_condition_or_a_condition_error(text):
    try:
        condition = parse(text)
    except ConditionError as exc:
        assert str(exc)
    else:
        condition.evaluate({})
        list(condition.compared_literals())
