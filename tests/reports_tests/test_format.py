"""The report's number formats."""

from __future__ import annotations

import pytest

from autotune.reports._format import ms


@pytest.mark.parametrize(
    ("seconds", "digits", "shown"),
    [
        (0.1308, 4, "130.8ms"),
        (0.1108, 2, "111ms"),  # was 1.1e+02ms, beside a 130.8ms median
        (0.0123456, 3, "12.3ms"),
        (12.5, 4, "12500ms"),
        (0.0004121, 3, "0.412ms"),
        (None, 4, "-"),
    ],
)
def test_milliseconds_keep_their_digits_and_never_go_exponential(seconds, digits, shown):
    assert ms(seconds, digits) == shown
