from __future__ import annotations

import pytest

from autotune.space._condition import ConditionError, parse

ENV = {
    "compile.mode": "max-autotune",
    "inductor.freezing": True,
    "workload": "infer",
    "inductor.cpp.threads": 4,
    "cpu_vector_widths": [256, 512],
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("compile.mode in ['max-autotune', 'max-autotune-no-cudagraphs']", True),
        ("compile.mode not in ['max-autotune']", False),
        ("compile.mode == 'default'", False),
        ("compile.mode != 'default' and inductor.freezing", True),
        ("not inductor.freezing or workload == 'infer'", True),
        ("inductor.freezing == true", True),
        ("inductor.cpp.threads >= 2 and inductor.cpp.threads < 8", True),
        ("1 < inductor.cpp.threads <= 3", False),
        ("512 in cpu_vector_widths", True),
        ("(workload == 'train') or (inductor.cpp.threads == 4)", True),
    ],
)
def test_conditions_evaluate_like_python_over_the_knob_values(text, expected):
    assert parse(text).evaluate(ENV) is expected


def test_a_knob_that_is_not_suggested_reads_as_none():
    assert parse("inductor.max_autotune == none").evaluate({}) is True
    assert parse("not inductor.max_autotune").evaluate({}) is True
    assert parse("inductor.cpp.threads > 1").evaluate({"inductor.cpp.threads": None}) is False


def test_names_lists_what_the_condition_reads():
    cond = parse("compile.mode == 'default' and not inductor.freezing or 512 in cpu_vector_widths")
    assert cond.names == {"compile.mode", "inductor.freezing", "cpu_vector_widths"}


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('true')",
        "compile.mode.startswith('max')",
        "open('/etc/passwd')",
        "[x for x in ()]",
        "lambda: 1",
        "inductor.cpp.threads + 1 > 2",
        "cpu_vector_widths[0] == 256",
        "compile.mode is None",
        "compile.mode == f'{workload}'",
        "(freezing := True)",
        "compile.mode in [workload]",
    ],
)
def test_anything_outside_the_condition_language_is_refused(text):
    with pytest.raises(ConditionError, match="not allowed|not a literal"):
        parse(text)


def test_bad_syntax_is_refused_with_the_rules():
    with pytest.raises(ConditionError, match="not valid syntax.*conditions use knob names"):
        parse("compile.mode ==")


def test_compared_literals_are_listed_for_validation():
    cond = parse("compile.mode in ['default', 'reduce-overhead'] and 'infer' == workload")
    assert sorted(cond.compared_literals()) == [
        ("compile.mode", "default"),
        ("compile.mode", "reduce-overhead"),
        ("workload", "infer"),
    ]
