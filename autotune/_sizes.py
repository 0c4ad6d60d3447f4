"""Sizes written by people (``8GiB``, ``500MB``, ``1048576``) as bytes."""

from __future__ import annotations

import re

UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
         "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}  # fmt: skip


def parse_size(text: str) -> int:
    """``"8GiB"`` -> 8589934592; raises ValueError naming the accepted forms."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in UNITS:
        raise ValueError(f"must be a size such as 8GiB, 500MB or 1048576 (bytes), got {text!r}")
    size = float(match.group(1)) * UNITS[unit]
    if size == float("inf"):  # more digits than a float holds
        raise ValueError(f"must be a size below 1.8e308 bytes, got {text!r}")
    return int(size)
