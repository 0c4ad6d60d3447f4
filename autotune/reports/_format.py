"""Number formats every printed report shares."""

from __future__ import annotations

import math


def ms(seconds: float | None, digits: int = 4) -> str:
    """``0.00123`` -> ``1.23ms``, ``digits`` significant digits, never in exponent form
    (``0.1108`` with 2 digits is ``111ms``, not ``1.1e+02ms``); ``-`` for nothing."""
    if seconds is None:
        return "-"
    text = f"{seconds * 1e3:.{digits}g}"
    if "e+" in text:  # more integer digits than significant ones
        text = f"{seconds * 1e3:.0f}"
    return text + "ms"


def seconds(value: float | None, suffix: str = "") -> str:
    return "-" if value is None else f"{value:.1f}s{suffix}"


def times(value: float | None, digits: int = 3) -> str:
    """A speedup: ``1.234x``; ``-`` for nothing."""
    return "-" if value is None else f"{value:.{digits}f}x"


def spread(median: float | None, q1: float | None, q3: float | None) -> str:
    """A speedup with its quartiles: ``1.234x (1.100x to 1.300x)``."""
    if median is None:
        return "-"
    if q1 is None or q3 is None:
        return times(median)
    return f"{median:.3f}x ({q1:.3f}x to {q3:.3f}x)"


def interval(low: float | None, high: float | None) -> str:
    """A median's 95% interval: ``1.180x to 1.260x``, or ``-`` when unknown."""
    if low is None or high is None:
        return "-"
    return f"{low:.3f}x to {high:.3f}x"


def calls(n: float | int | None) -> str:
    """A break-even count of calls: ``1,500``, or ``never``."""
    if n is None or n == math.inf:
        return "never"
    return f"{math.ceil(n):,}"


def clip(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
