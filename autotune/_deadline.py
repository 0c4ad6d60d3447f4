"""A command's wall-clock limit (``--timeout``), shared by everything the command runs."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass


class DeadlineReached(Exception):
    """The command's timeout is spent; the message says during what."""


@dataclass(frozen=True)
class Deadline:
    """A ``time.monotonic()`` moment work must end by (``at=None``: no limit)."""

    at: float | None = None
    timeout_s: float | None = None

    @classmethod
    def after(cls, seconds: float | None) -> Deadline:
        """The deadline ``seconds`` from now (None: none)."""
        if seconds is None:
            return cls()
        return cls(time.monotonic() + seconds, seconds)

    def left(self) -> float:
        """Seconds left (inf without a deadline)."""
        return math.inf if self.at is None else max(0.0, self.at - time.monotonic())

    def passed(self) -> bool:
        return self.at is not None and time.monotonic() >= self.at

    def budget(self, seconds: float) -> float:
        """``seconds``, or what is left of the deadline when that is less."""
        return min(seconds, self.left())

    def check(self, during: str) -> None:
        """Raises :class:`DeadlineReached` once the deadline has passed."""
        if self.passed():
            raise DeadlineReached(f"the timeout of {self.timeout_s:g} s was spent {during}")
