"""An accuracy contract the user states: how far from eager fp32 a configuration's outputs may
be when it changes numerics on purpose (bf16 autocast, a lower matmul precision, a backend's
own precision, fast math).

A contract is clauses joined by commas, all of which must hold. An inference contract
(``--workload infer``) judges the outputs of a sweep::

    max_abs<=1e-2               largest |actual - expected| over every float element
    max_rel<=5e-2               largest |actual - expected| / |expected|
    cosine>=0.999               lowest cosine similarity of a float output tensor (flattened)
    rtol=1e-2,atol=1e-3         every float element within atol + rtol * |expected|
    accuracy>=0.99              the model file's ``accuracy(output, reference) -> float``
                                (a task metric: top-1 agreement, a perplexity delta), the
                                worst over the calls of one sweep; ``<=`` for an error

A generation contract (``--workload generate``) judges eager's generated tokens teacher-forced
through the configuration's decode, step by step (its compiled decode, its static cache): at
each new position both see the same prefix, and their next-token logits are compared::

    top1>=0.99                  the fraction of positions whose argmax is eager's
    cosine>=0.999               lowest cosine similarity of one position's logits with eager's

A training contract (``--workload train``) judges the first steps instead, and is the only
kind a training workload takes (fp32 output tolerances say nothing about a step)::

    loss_rel<=2e-2              largest |loss - eager's loss| / |eager's loss| over the steps
    grad_cosine>=0.99           lowest cosine similarity of a parameter's gradient (flattened)
                                with eager's, over every parameter and step

Integer and bool outputs must match eager exactly under any inference contract, and the output's
structure must be eager's; a float tensor may come back in another float dtype (autocast
returns bf16 where eager returns float32), which is reported. A NaN or infinity where eager has
a finite value fails every contract. Every trial records each metric, named or not.
"""

from __future__ import annotations

import difflib
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autotune.measure.accuracy import AccuracyReport

# Metric -> the only comparison that makes sense for it.
BOUNDS = {
    "max_abs": "<=", "max_rel": "<=", "cosine": ">=", "accuracy": None,
    "loss_rel": "<=", "grad_cosine": ">=", "top1": ">=",
}  # fmt: skip
TOLERANCES = ("rtol", "atol")
CUSTOM = "accuracy"
INFERENCE_METRICS = ("max_abs", "max_rel", "cosine", CUSTOM, *TOLERANCES)
TRAINING_METRICS = ("loss_rel", "grad_cosine")
TRAINING_EXAMPLE = "loss_rel<=0.02,grad_cosine>=0.99"
GENERATE_METRICS = ("top1", "cosine")
GENERATE_EXAMPLE = "top1>=0.99"
_NAMES = (*INFERENCE_METRICS, *TRAINING_METRICS, "top1")
_INFINITE = (math.inf, math.inf)
_TINY = sys.float_info.min


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
    def training(self) -> bool:
        """Whether every clause judges a training step (``loss_rel``, ``grad_cosine``)."""
        return bool(self.clauses) and all(c.metric in TRAINING_METRICS for c in self.clauses)

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
        return self._verdict(errors, failed)

    def judge_steps(self, expected: Sequence[Any], actual: Sequence[Any]) -> Verdict:
        """Judges the first training steps by the contract's training clauses (the others are
        judged on outputs by :meth:`judge`).

        Args:
            expected: Eager fp32's step records (``.loss``, ``.grads``), one per step.
            actual: The configuration's step records, as many.

        Raises:
            ContractError: When the contract states no training clause.
        """
        clauses = [c for c in self.clauses if c.metric in TRAINING_METRICS]
        if not clauses:
            raise ContractError(
                f"the accuracy contract {self} states no training clause, so it cannot judge a "
                f"training step; state loss_rel<=X and grad_cosine>=X, e.g. {TRAINING_EXAMPLE!r}"
            )
        errors = training_errors(expected, actual)
        return self._verdict(errors, [c for c in clauses if not c.holds(errors.get(c.metric))])

    def judge_generation(self, errors: dict[str, Any]) -> Verdict:
        """Judges a generation's teacher-forced metrics (``top1``, ``cosine``: see the
        module's docs, measured by the generate workload) by the contract's clauses."""
        return self._verdict(
            errors, [c for c in self.clauses if not c.holds(errors.get(c.metric))]
        )

    def _verdict(self, errors: dict[str, Any], failed: list[Clause]) -> Verdict:
        if not failed:
            return Verdict(True, errors)
        measured = "; ".join(f"{c.metric} measured {_measured(c, errors)}" for c in failed)
        return Verdict(False, errors, f"outside the accuracy contract {self}: {measured}")


def workload_problems(
    contract: Contract, workload: str, *, shown: Callable[[str], str] = repr
) -> list[str]:
    """What keeps ``contract`` from judging ``workload`` (``"infer"``, ``"train"`` or
    ``"generate"``): a training workload is judged by ``loss_rel`` and ``grad_cosine`` only, a
    generation by ``top1`` and ``cosine`` (teacher-forced), an inference one by the rest.
    Empty when it fits; one message however many clauses do not.

    Args:
        contract: The contract stated.
        workload: ``"infer"``, ``"train"`` or ``"generate"``.
        shown: How the remedy shows a contract to state (``--accuracy 'cosine>=0.999'`` on
            the command line); quoted by default.
    """
    if workload == "generate":
        wrong = [c for c in contract.clauses if c.metric not in GENERATE_METRICS]
        if not wrong:
            return []
        return [
            f"{', '.join(map(str, wrong))} in the accuracy contract {contract} cannot judge a "
            "generation, which is judged by eager's tokens teacher-forced through the config's "
            "decode (top1>=X: the share of positions whose argmax is eager's; cosine>=X: the "
            f"lowest cosine of one position's logits with eager's); state e.g. "
            f"{shown(GENERATE_EXAMPLE)}"
        ]
    training = workload == "train"
    wrong = [
        c for c in contract.clauses
        if (c.metric in TRAINING_METRICS) != training or c.metric == "top1"
    ]  # fmt: skip
    if not wrong:
        return []
    if len(wrong) == len(contract.clauses):
        what, verb = f"the accuracy contract {contract}", "judges"
    else:
        named = ", ".join(map(str, wrong))
        what = f"{named} in the accuracy contract {contract}"
        verb = "judges" if len(wrong) == 1 else "judge"
    if training:
        return [
            f"{what} {verb} an inference workload's outputs, but a training workload is judged "
            "by its first steps' loss and gradients against eager fp32 (loss_rel<=X, "
            "grad_cosine>=X), never by fp32 output tolerances; state e.g. "
            f"{shown(TRAINING_EXAMPLE)}"
        ]
    return [
        f"{what} {verb} a training step, but an inference workload is judged by its outputs "
        "against eager fp32 (max_abs<=X, max_rel<=X, cosine>=X, rtol=R,atol=A or "
        f"accuracy>=X); state e.g. {shown('cosine>=0.999')}"
    ]


def training_errors(expected: Sequence[Any], actual: Sequence[Any]) -> dict[str, Any]:
    """The training metrics of steps compared with eager fp32's, as recorded with the trial.

    Args:
        expected: Eager's step records, each with ``.loss`` (a one-element tensor) and
            ``.grads`` (parameter name -> its gradient, or None).
        actual: The configuration's step records, as many, with the same parameters.

    Returns:
        ``loss_rel``: the largest ``|loss - expected| / max(|expected|, tiny)`` over the steps
        (inf for a NaN or infinity where eager's is finite); ``grad_cosine``: the lowest cosine
        similarity of a gradient with eager's (1.0 both all-zero, 0.0 one missing or all-zero,
        -1.0 a NaN or infinity where eager's is finite) and ``grad_worst``, its parameter;
        ``grad_zero``, the parameters left out of it as zero but for rounding (eager's RMS
        below 1e-5 of the step's median gradient RMS, the configuration's below 1e-2 of it:
        a key projection's bias, which softmax makes exactly zero). A metric nothing
        measured (no steps, no gradient on either side) is None, which no clause holds.

    Raises:
        ValueError: When the step counts differ.
    """
    if len(expected) != len(actual):
        raise ValueError(
            f"training steps are compared one for one, got {len(expected)} eager steps and "
            f"{len(actual)} of the configuration; record as many of each"
        )
    loss_rel: float | None = None
    cosine: float | None = None
    worst = ""
    zero: set[str] = set()
    for want, got in zip(expected, actual, strict=True):
        rel = _loss_rel(want.loss, got.loss)
        loss_rel = rel if loss_rel is None else max(loss_rel, rel)
        names = sorted(want.grads.keys() | got.grads.keys())
        scale = _median_rms([want.grads.get(name) for name in names])
        for name in names:
            left, right = want.grads.get(name), got.grads.get(name)
            if _numerically_zero(left, right, scale):
                zero.add(name)
                continue
            value = _grad_cosine(left, right)
            if value is not None and (cosine is None or value < cosine):
                cosine, worst = value, name
    errors: dict[str, Any] = {"loss_rel": loss_rel, "grad_cosine": cosine}
    if cosine is not None:
        errors["grad_worst"] = worst
    if zero:
        errors["grad_zero"] = len(zero)
    return errors


# A gradient whose per-element RMS in eager is below this fraction of the step's median is
# fp32 rounding of an exact zero (a key projection's bias under softmax: 1e-8 of the median
# in a ViT): its direction is noise. The configuration's may then be noise of its own
# precision (bf16: 1e-4 to 1e-3 of the median there), but not a gradient (above 1e-2).
_ZERO_IN_EAGER = 1e-5
_NOISE_IN_CONFIG = 1e-2


def _rms(grad: Any) -> float:
    return float(grad.detach().double().norm()) / max(grad.numel(), 1) ** 0.5


def _median_rms(grads: list[Any]) -> float:
    values = sorted(_rms(g) for g in grads if g is not None and g.numel())
    return values[len(values) // 2] if values else 0.0


def _numerically_zero(expected: Any, actual: Any, scale: float) -> bool:
    """Whether a parameter's gradient is zero but for rounding, in eager and in the
    configuration alike (relative to the step's median gradient RMS ``scale``): its direction
    says nothing, and it is left out of ``grad_cosine``."""
    if expected is None or actual is None or not scale or not math.isfinite(scale):
        return False
    if expected.shape != actual.shape or not bool(actual.detach().isfinite().all()):
        return False
    return _rms(expected) < _ZERO_IN_EAGER * scale and _rms(actual) < _NOISE_IN_CONFIG * scale


def _loss_rel(expected: Any, actual: Any) -> float:
    want, got = _scalar(expected), _scalar(actual)
    if not math.isfinite(want):
        same = want == got or (math.isnan(want) and math.isnan(got))
        return 0.0 if same else math.inf
    if not math.isfinite(got):
        return math.inf
    return abs(got - want) / max(abs(want), _TINY)


def _scalar(loss: Any) -> float:
    flat = loss.detach().reshape(-1)
    if flat.numel() != 1:
        raise ValueError(f"a step's loss must have one element, got shape {tuple(loss.shape)}")
    return float(flat.double().item())


def _grad_cosine(expected: Any, actual: Any) -> float | None:
    import torch

    if expected is None or actual is None:
        return None if expected is None and actual is None else 0.0
    if expected.shape != actual.shape:
        return 0.0
    want = expected.detach().reshape(-1).to(torch.float64)
    got = actual.detach().reshape(-1).to(torch.float64)
    bad = ~torch.isfinite(want)
    if not torch.equal(bad, ~torch.isfinite(got)):
        return -1.0  # a NaN or infinity on one side only
    if not torch.equal(want[bad].nan_to_num(0.0), got[bad].nan_to_num(0.0)):
        return -1.0  # both non-finite, but not the same value
    want, got = want[~bad], got[~bad]
    norms = float(want.norm()), float(got.norm())
    if norms == (0.0, 0.0):
        return 1.0
    if 0.0 in norms:
        return 0.0
    return max(-1.0, min(1.0, float(want @ got) / (norms[0] * norms[1])))


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
            f"joined by commas; for --workload train, loss_rel<=X and grad_cosine>=X "
            f"(e.g. {TRAINING_EXAMPLE}); for --workload generate, top1>=X and cosine>=X."
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
    if name in ("max_abs", "max_rel", "loss_rel", *TOLERANCES) and value < 0:
        return None, f"{text!r}: {name} cannot be negative"
    if name in ("cosine", "grad_cosine") and not -1.0 <= value <= 1.0:
        return None, f"{text!r}: a cosine similarity lies in [-1, 1]"
    if name == "top1" and not 0.0 <= value <= 1.0:
        return None, f"{text!r}: top1 is a fraction of positions, in [0, 1]"
    return Clause(name, op, value), ""


def _show(value: Any) -> str:
    return "nothing" if value is None else f"{value:.4g}"


def _measured(clause: Clause, errors: dict[str, Any]) -> str:
    shown = _show(errors.get(clause.metric))
    if clause.metric == "grad_cosine" and errors.get("grad_worst"):
        return f"{shown} (parameter {errors['grad_worst']!r})"
    if clause.metric in GENERATE_METRICS and errors.get("first_divergence"):
        return f"{shown} (first different argmax: {errors['first_divergence']})"
    return shown


__all__ = [
    "GENERATE_METRICS", "INFERENCE_METRICS", "TRAINING_METRICS", "Clause", "Contract",
    "ContractError", "Verdict", "parse_contract", "report_errors", "training_errors",
    "workload_problems",
]  # fmt: skip
