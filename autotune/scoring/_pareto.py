"""Multi-objective studies: speed against compile time (and memory), and a rule to pick one.

With ``--pareto`` the study optimizes several axes at once with Optuna's multi-objective TPE
sampler (infeasible trials still count through constraints):

- ``latency``: the speedup over eager, paired inside each trial (maximized);
- ``compile``: the compile time in seconds (minimized);
- ``memory``: the trial's peak memory (minimized).

Eager is a point of every front: no compile, 1.0x. A configuration is on the front when no
other one is at least as good on every axis and better on one. ``--pick`` then chooses the
emitted config from the front: a goal (``fastest``, ``min-compile``, ``min-memory``) under
limits such as ``compile<=60`` (seconds), ``memory<=2GiB`` or ``speedup>=1.2``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from autotune.errors import UsageError
from autotune.records import TrialRecord
from autotune.settings.rules import size as parse_size

DIRECTIONS: dict[str, Literal["maximize", "minimize"]] = {
    "latency": "maximize",
    "compile": "minimize",
    "memory": "minimize",
}
DEFAULT_AXES = ("latency", "compile")
GOALS = {"fastest": "latency", "min-compile": "compile", "min-memory": "memory"}
_LIMIT = re.compile(r"^(compile|memory|speedup)\s*(<=|>=)\s*(\S+)$")
_LIMIT_OPS = {"compile": "<=", "memory": "<=", "speedup": ">="}


def parse_axes(text: str) -> tuple[str, ...]:
    """``"latency,compile[,memory]"`` -> its axes, checked."""
    axes = tuple(a.strip() for a in text.split(",") if a.strip())
    unknown = [a for a in axes if a not in DIRECTIONS]
    if unknown or "latency" not in axes or len(axes) < 2 or len(set(axes)) != len(axes):
        raise UsageError(
            "--pareto-axes takes two or three distinct axes out of latency, compile and "
            f"memory, latency among them (e.g. --pareto-axes latency,compile,memory); got "
            f"{text!r}."
        )
    return axes


def axis_value(r: TrialRecord, axis: str) -> float | None:
    """A record's value on one axis; eager is the reference: 1.0x, no compile."""
    eager = r.baseline == "eager"
    if axis == "latency":
        return 1.0 if eager else r.speedup_vs_eager
    if axis == "compile":
        return 0.0 if eager else r.compile_time_s
    return float(r.peak_memory_bytes) if r.peak_memory_bytes is not None else None


def optuna_values(r: TrialRecord, axes: Sequence[str]) -> list[float]:
    """What Optuna is told: the record's values, or for a failed trial the worst value on every
    axis (0x speedup, infinite compile time and memory), so that whatever reads Optuna's front
    (optuna-dashboard, ``study.best_trials``) never finds a failed trial on it; it is also
    marked infeasible, so the sampler keeps it apart from the measured ones."""
    values = []
    for axis in axes:
        value = axis_value(r, axis) if r.status == "ok" else None
        if value is None:
            value = 0.0 if DIRECTIONS[axis] == "maximize" else math.inf
        elif axis == "memory":
            value /= 2**20  # MiB keeps the axes' values within a few orders of magnitude
        values.append(value)
    return values


def front(records: Sequence[TrialRecord], axes: Sequence[str]) -> list[TrialRecord]:
    """The measured records no other record dominates, fastest first."""
    points = [(r, _oriented(r, axes)) for r in records]
    measured = [(r, p) for r, p in points if p is not None]
    kept = [r for r, p in measured if not any(_dominates(q, p) for _, q in measured)]
    return sorted(kept, key=lambda r: -(axis_value(r, "latency") or 0.0))


def _oriented(r: TrialRecord, axes: Sequence[str]) -> tuple[float, ...] | None:
    """The record's values with every axis turned into "higher is better"."""
    if r.status != "ok":
        return None
    oriented = []
    for axis in axes:
        value = axis_value(r, axis)
        if value is None:
            return None
        oriented.append(value if DIRECTIONS[axis] == "maximize" else -value)
    return tuple(oriented)


def _dominates(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    pairs = list(zip(a, b, strict=True))
    return all(x >= y for x, y in pairs) and any(x > y for x, y in pairs)


@dataclass(frozen=True)
class PickRule:
    """How ``--pick`` chooses from a front: a goal under limits."""

    goal: str = "fastest"
    max_compile_s: float | None = None
    max_memory_bytes: int | None = None
    min_speedup: float | None = None

    @classmethod
    def parse(cls, text: str) -> PickRule:
        """``"fastest,compile<=60"``, ``"min-compile,speedup>=1.2"``, ``"memory<=2GiB"``..."""
        goal, limits = "fastest", {}
        for token in (t.strip() for t in text.split(",") if t.strip()):
            if token in GOALS:
                goal = token
                continue
            match = _LIMIT.match(token)
            if match is None or _LIMIT_OPS[match[1]] != match[2]:
                raise UsageError(_pick_help(text, f"{token!r} is neither a goal nor a limit"))
            limits[match[1]] = _limit_value(match[1], match[3], text)
        return cls(goal, limits.get("compile"), limits.get("memory"), limits.get("speedup"))  # type: ignore[arg-type]

    def admits(self, r: TrialRecord) -> bool:
        speedup = axis_value(r, "latency")
        compile_s = axis_value(r, "compile")
        memory = axis_value(r, "memory")
        return (
            (self.min_speedup is None or (speedup is not None and speedup >= self.min_speedup))
            and (self.max_compile_s is None or (compile_s or 0.0) <= self.max_compile_s)
            and (self.max_memory_bytes is None or (memory or 0.0) <= self.max_memory_bytes)
        )

    def ranked(self, records: Sequence[TrialRecord]) -> list[TrialRecord]:
        """The admitted records, the goal's best first (ties go to the faster one)."""
        axis = GOALS[self.goal]
        sign = -1.0 if DIRECTIONS[axis] == "maximize" else 1.0

        def key(r: TrialRecord) -> tuple[float, float]:
            value = axis_value(r, axis)
            return (sign * value if value is not None else float("inf"),
                    -(axis_value(r, "latency") or 0.0))  # fmt: skip

        return sorted((r for r in records if self.admits(r)), key=key)

    def describe(self) -> str:
        parts = [self.goal]
        if self.max_compile_s is not None:
            parts.append(f"compile<={self.max_compile_s:g}s")
        if self.max_memory_bytes is not None:
            parts.append(f"memory<={self.max_memory_bytes / 2**20:.0f}MiB")
        if self.min_speedup is not None:
            parts.append(f"speedup>={self.min_speedup:g}x")
        return ",".join(parts)


def _limit_value(name: str, raw: str, text: str) -> float | int:
    try:
        if name == "memory":
            return parse_size(raw)
        value = float(raw.rstrip("sx"))
    except ValueError:
        raise UsageError(_pick_help(text, f"{name} takes a number, got {raw!r}")) from None
    if value <= 0:
        raise UsageError(_pick_help(text, f"{name} must be above 0, got {raw!r}"))
    return value


def _pick_help(text: str, what: str) -> str:
    return (
        f"--pick {text!r}: {what}. A rule is an optional goal ({', '.join(GOALS)}; default "
        "fastest) and limits, comma-separated: compile<=SECONDS, memory<=SIZE, speedup>=X; "
        "e.g. --pick 'fastest,compile<=60' or --pick 'min-compile,speedup>=1.2' (quoted: < and "
        "> are shell redirections)."
    )
