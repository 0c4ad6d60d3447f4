"""An accuracy contract the user states: how far from eager fp32 a configuration's outputs may
be when it changes numerics on purpose (bf16 autocast, a lower matmul precision, a backend's
own precision, fast math).

A contract is clauses joined by commas, all of which must hold::

    max_abs<=1e-2               largest |actual - expected| over every float element
    max_rel<=5e-2               largest |actual - expected| / |expected|
    cosine>=0.999               lowest cosine similarity of a float output tensor (flattened)
    rtol=1e-2,atol=1e-3         every float element within atol + rtol * |expected|
    accuracy>=0.99              the model file's ``accuracy(output, reference) -> float``
                                (a task metric: top-1 agreement, a perplexity delta), the
                                worst over the calls of one sweep; ``<=`` for an error

Integer and bool outputs must match eager exactly under any contract, and the output's
structure must be eager's; a float tensor may come back in another float dtype (autocast
returns bf16 where eager returns float32), which is reported. A NaN or infinity where eager has
a finite value fails every contract. Every trial records each metric, named or not.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autotune.measure.accuracy import AccuracyReport

# Metric -> the only comparison that makes sense for it.
BOUNDS = {"max_abs": "<=", "max_rel": "<=", "cosine": ">=", "accuracy": None}
TOLERANCES = ("rtol", "atol")
CUSTOM = "accuracy"
_NAMES = (*BOUNDS, *TOLERANCES)
_INFINITE = (math.inf, math.inf)


class ContractError(ValueError):
    """An accuracy contract that cannot be read; the message says which clause and why."""


@dataclass(frozen=True)
class Clause:
    """One condition: ``metric op threshold`` (``op`` is ``<=``, ``>=``, or ``=`` for a
    tolerance)."""

    metric: str
    op: str
    threshold: float

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.threshold:g}"

    def holds(self, value: float | None) -> bool:
        if value is None or math.isnan(value):
            return False
        return value <= self.threshold if self.op == "<=" else value >= self.threshold


@dataclass(frozen=True)
class Verdict:
    """A contract judged on one trial's outputs: ``ok``, the measured ``errors`` (every
    metric, named by the contract or not) and, when not ok, one line saying what failed."""

    ok: bool
    errors: dict[str, Any]
    detail: str = ""


@dataclass(frozen=True)
class Contract:
    """A parsed accuracy contract (see the module docstring); ``str()`` is its canonical text."""

    clauses: tuple[Clause, ...]

    def __str__(self) -> str:
        return ",".join(map(str, self.clauses))

    @property
    def tolerance(self) -> tuple[float, float] | None:
        """``(rtol, atol)`` when the contract states either, else None."""
        given = {c.metric: c.threshold for c in self.clauses if c.op == "="}
        if not given:
            return None
        return given.get("rtol", 0.0), given.get("atol", 0.0)

    @property
    def custom(self) -> Clause | None:
        """The clause on the model file's ``accuracy`` function, if any."""
        return next((c for c in self.clauses if c.metric == CUSTOM), None)

    def judge(
        self,
        expected: Sequence[Any],
        actual: Sequence[Any],
        metric: Callable[[Any, Any], float] | None = None,
    ) -> Verdict:
        """Judges the outputs of one sweep (one output per call, eager's first).

        Args:
            expected: Eager fp32 outputs, one per call.
            actual: The configuration's outputs, one per call.
            metric: The model file's ``accuracy(output, reference)``; required when the
                contract names it.
        """
        from autotune.measure.accuracy import compare_outputs

        report = compare_outputs(
            expected, actual, tolerance=self.tolerance or _INFINITE, float_dtypes_may_differ=True
        )
        errors = report_errors(report)
        custom = self.custom
        if custom is not None:
            if metric is None:
                raise ContractError(
                    f"the accuracy contract {self} names {CUSTOM}, but the model file defines "
                    f"no {CUSTOM}(output, reference) function; define it, or state the "
                    "contract with max_abs, max_rel, cosine or rtol/atol"
                )
            values = [float(metric(a, e)) for a, e in zip(actual, expected, strict=True)]
            worst = min if custom.op == ">=" else max
            errors[CUSTOM] = worst(values) if values else math.nan
        if not report.ok:
            return Verdict(False, errors, report.detail)
        failed = [c for c in self.clauses if c.op != "=" and not c.holds(errors.get(c.metric))]
        if failed:
            measured = "; ".join(
                f"{c.metric} measured {_show(errors.get(c.metric))}" for c in failed
            )
            detail = f"outside the accuracy contract {self}: {measured}"
            return Verdict(False, errors, detail)
        return Verdict(True, errors)


def report_errors(report: AccuracyReport) -> dict[str, Any]:
    """The contract's metrics from one comparison, as recorded with every trial."""
    errors: dict[str, Any] = {
        "max_abs": report.max_abs_diff,
        "max_rel": report.max_rel_diff,
        "cosine": report.cosine,
    }
    if report.dtype_changes:
        errors["dtype_changes"] = list(report.dtype_changes[:5])
    return errors


def parse_contract(spec: str) -> Contract:
    """Reads ``spec`` (``"cosine>=0.999,max_abs<=1e-2"``).

    Raises:
        ContractError: Naming every clause that cannot be read, and the rule it breaks.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ContractError(
            f"an accuracy contract must be a non-empty string such as 'cosine>=0.999' or "
            f"'max_abs<=1e-2,cosine>=0.999', got {spec!r}"
        )
    clauses, problems = [], []
    for text in (part.strip() for part in spec.split(",")):
        clause, problem = _clause(text)
        if problem:
            problems.append(problem)
        elif clause is not None:
            clauses.append(clause)
    seen = [c.metric for c in clauses]
    problems += [f"{name} is stated twice" for name in sorted(set(seen)) if seen.count(name) > 1]
    if problems:
        raise ContractError(
            f"the accuracy contract {spec!r} cannot be read: {'; '.join(problems)}. Write "
            "clauses such as max_abs<=1e-2, max_rel<=5e-2, cosine>=0.999, rtol=1e-2,atol=1e-3 "
            f"or {CUSTOM}>=0.99 (the model file's {CUSTOM}(output, reference) function), "
            "joined by commas."
        )
    return Contract(tuple(clauses))


def _clause(text: str) -> tuple[Clause | None, str]:
    op = next((o for o in ("<=", ">=", "=", "<", ">") if o in text), None)
    if op is None:
        return None, f"{text!r} has no <=, >= or ="
    name, _, raw = (part.strip() for part in text.partition(op))
    if op in ("<", ">"):
        op += "?"  # strict comparisons are not offered: said below with the form to write
    if name not in _NAMES:
        near = difflib.get_close_matches(name, _NAMES, n=1)
        hint = f" (did you mean {near[0]}?)" if near else f" (known: {', '.join(_NAMES)})"
        return None, f"{name!r} is not a metric{hint}"
    try:
        value = float(raw)
    except ValueError:
        return None, f"{text!r}: {raw!r} is not a number"
    if not math.isfinite(value):
        return None, f"{text!r}: the threshold must be finite"
    wanted = "=" if name in TOLERANCES else BOUNDS[name]
    if name == CUSTOM and op in ("<=", ">="):
        wanted = op
    if op.endswith("?") and name in BOUNDS and BOUNDS[name] is None:
        return None, f"{text!r}: write {name}>=X or {name}<=X"
    if op != wanted:
        shape = f"{name}{wanted}X" if wanted else f"{name}>=X or {name}<=X"
        return None, f"{text!r}: write {shape}"
    if name in ("max_abs", "max_rel", *TOLERANCES) and value < 0:
        return None, f"{text!r}: {name} cannot be negative"
    if name == "cosine" and not -1.0 <= value <= 1.0:
        return None, f"{text!r}: a cosine similarity lies in [-1, 1]"
    return Clause(name, op, value), ""


def _show(value: Any) -> str:
    return "nothing" if value is None else f"{value:.4g}"


__all__ = ["Clause", "Contract", "ContractError", "Verdict", "parse_contract", "report_errors"]
