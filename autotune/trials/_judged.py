"""The correctness gate's verdict under an accuracy contract, as a trial records it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Judged:
    """The gate's verdict on a configuration's outputs (or training steps), and what is
    recorded of it: every metric measured, and what the outputs were held to."""

    ok: bool
    detail: str
    accuracy: dict[str, Any]
