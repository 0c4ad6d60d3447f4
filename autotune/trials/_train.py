"""The train workload: one step is the model file's ``train_step`` (or the fixed one: forward,
loss, backward and optimizer step), run as a user would.

Eager and compiled each step their own deep copy of the seeded model with their own optimizer,
and every step starts with ``torch.manual_seed(seed)``, so dropout draws the same numbers in
both. The correctness gate compares the loss of the first steps (:data:`GATE_STEPS` at least,
one per input first) and each parameter's gradient, captured by a hook as it accumulates (the
last one before the optimizer steps: the gradient the optimizer stepped with, with a user's
own step, accumulation and clipping included, as with the fixed one). A config may compile
the optimizer step too (``train.optimizer``: :func:`autotune.runtime.optimizer.compile_step`,
what ``autotune.apply_optimizer`` does in production).

Inductor draws random numbers with generators of its own, so a step that draws any (dropout)
can never match eager bit for bit. Then the gate checks a separate copy compiled with Inductor's
``fallback_random=True`` (random ops run as in eager, as PyTorch's own accuracy benchmarks do),
while the copy that is timed is compiled with the config as it is.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from types import ModuleType
from typing import Any

import torch

from autotune import measure
from autotune.measure.accuracy import AccuracyReport, compare_outputs
from autotune.measure.timing import time_first_call
from autotune.runtime.apply import compile_module
from autotune.runtime.config import CompileConfig
from autotune.runtime.optimizer import compile_step, step_backend
from autotune.trials._classify import TrialFailure, classify
from autotune.trials._judged import Judged
from autotune.trials._spec import TrialSpec
from autotune.workload import (
    Call,
    StepFn,
    build_optimizer,
    build_seeded,
    count_units,
    train_step_function,
)

# The correctness gate compares at least this many steps (cycling through the inputs), so
# that a lower precision's drift shows over more than the first update.
GATE_STEPS = 3


@dataclass(frozen=True)
class StepRecord:
    """What the gate compares of one step: its loss, each parameter's gradient as the
    optimizer stepped with it, and whether it drew random numbers (not compared)."""

    loss: torch.Tensor
    grads: dict[str, torch.Tensor | None]
    drew_random: bool


class Stepper:
    """One copy of the model with its own optimizer, stepped as a training loop would."""

    def __init__(
        self,
        fn: torch.nn.Module,
        params: dict[str, torch.nn.Parameter],
        optimizer: torch.optim.Optimizer,
        step_fn: StepFn,
        seed: int,
    ) -> None:
        self.fn, self.params, self.optimizer = fn, params, optimizer
        self.step_fn, self.seed = step_fn, seed

    def step(self, call: Call, *, capture: bool = False) -> StepRecord | None:
        torch.manual_seed(self.seed)
        if not capture:
            self.step_fn(self.fn, self.optimizer, call)
            return None
        before = _rng_states(self.params)
        with _captured_grads(self.params) as grads:
            loss = self.step_fn(self.fn, self.optimizer, call)
        after = _rng_states(self.params)
        drew = any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))
        return StepRecord(loss.detach().clone(), grads, drew)

    def sweep(self, calls: list[Call]) -> None:
        """One step per input: the timed unit."""
        for call in calls:
            self.step(call)


@dataclass
class TrainWork:
    """The seeded model (train mode, never stepped), its inputs and the eager reference."""

    module: ModuleType
    model: torch.nn.Module
    calls: list[Call]
    step_fn: StepFn
    seed: int
    eager: Stepper | None = None
    reference: list[StepRecord] = dataclasses.field(default_factory=list)
    allow_unsafe_knobs: list[str] = dataclasses.field(default_factory=list)
    units: dict[str, Any] | None = None  # what one sweep processes (count_units)

    @property
    def draws_random(self) -> bool:
        return any(r.drew_random for r in self.reference)


def setup(spec: TrialSpec) -> TrainWork:
    """Builds the model and inputs, and takes the eager reference: a ``model_error`` if any of
    it fails."""
    try:
        module, model, calls = build_seeded(spec.model_path, spec.device, spec.seed,
                                            spec.batch_size)  # fmt: skip
        model.train()
        work = TrainWork(module, model, calls, train_step_function(module), spec.seed)
        work.allow_unsafe_knobs = list(spec.allow_unsafe_knobs)
        work.units = count_units(module, calls)
        work.eager = stepper(work, None)
        work.reference = [_first(work.eager, call) for call in gate_calls(calls)]
    except Exception as exc:
        raise TrialFailure("model_error", str(exc)) from exc
    return work


def stepper(work: TrainWork, config: CompileConfig | None) -> Stepper:
    """A fresh deep copy of the seeded model, with its own optimizer, compiled by ``config``
    (the ``compile_module`` of production, and its optimizer step as ``apply_optimizer``
    compiles it) unless it is None."""
    model = copy.deepcopy(work.model)
    params = dict(model.named_parameters())  # names before compiling adds `_orig_mod.`
    optimizer = build_optimizer(work.module, model)
    if config is None:
        return Stepper(model, params, optimizer, work.step_fn, work.seed)
    fn = compile_module(model, config, allow_unsafe_knobs=work.allow_unsafe_knobs)
    if config.train.get("optimizer") == "compiled":
        compile_step(optimizer, step_backend(config))
    return Stepper(fn, params, optimizer, work.step_fn, work.seed)


def gate_calls(calls: list[Call]) -> list[Call]:
    """The inputs of the steps the gate compares: each input once, then again in turn up to
    :data:`GATE_STEPS`."""
    return [calls[i % len(calls)] for i in range(max(len(calls), GATE_STEPS))]


def compile_first_steps(
    work: TrainWork, config: CompileConfig | None, device: str
) -> tuple[Stepper, list[StepRecord], float | None]:
    """Builds a stepper and runs the gate's steps (:func:`gate_calls`); the wall time of the
    first step on each input (forward, backward and optimizer compile included) is the compile
    time."""
    if config is not None and config.precision.get("autocast") == "float16":
        raise TrialFailure(
            "compile_error",
            "precision.autocast is 'float16', but float16 training needs a GradScaler "
            "(gradients underflow without one), which autotune's train step does not run; "
            "train under 'bfloat16', or keep float16 to inference (when = \"workload == "
            "'infer'\" in the space)",
        )
    if config is not None and config.options.get("freezing"):
        raise TrialFailure(
            "compile_error",
            "options['freezing'] is True, but Inductor's freezing turns parameters into "
            "constants and is for inference only, so a train workload cannot use it; guard "
            "the knob in the space with when = \"workload == 'infer'\" (as the built-in "
            "spaces do) or drop it.",
        )
    try:
        target = stepper(work, config)
        records, total = [], 0.0
        for call in work.calls:
            record, seconds = time_first_call(partial(_first, target, call), device)
            records.append(record)
            total += seconds
        records += [_first(target, call) for call in gate_calls(work.calls)[len(records) :]]
    except Exception as exc:
        if config is None:
            raise TrialFailure("model_error", str(exc)) from exc
        raise classify(exc, config) from exc
    return target, records, (total if config is not None else None)


def gate_config(work: TrainWork, config: CompileConfig | None) -> CompileConfig | None:
    """The config of a separate copy for the correctness gate, or None when the timed copy
    itself is compared: only Inductor on a step that draws random numbers needs one."""
    if config is None or config.backend != "inductor" or not work.draws_random:
        return None
    if config.options.get("fallback_random"):
        return None
    return dataclasses.replace(config, options={**config.options, "fallback_random": True})


def judge_steps(spec: TrialSpec, expected: list[StepRecord], actual: list[StepRecord]) -> Judged:
    """Holds the steps to the study's training contract (``loss_rel``, ``grad_cosine``) when
    the config changes numerics on purpose and the study states one; else to eager's gate
    (:func:`compare_steps`: exact, 10x looser for a ``[numerics]`` knob). The training
    metrics are recorded either way."""
    contract = measure.parse_contract(spec.accuracy) if spec.accuracy else None
    if contract is not None and spec.relaxed_numerics and contract.training:
        verdict = contract.judge_steps(expected, actual)
        to = {"held_to": "contract", "contract": str(contract), "relaxed": True}
        return Judged(verdict.ok, verdict.detail, {**verdict.errors, **to})
    report = compare_steps(expected, actual, relaxed=spec.relaxed_numerics)
    accuracy: dict[str, Any] = {
        **measure.training_errors(expected, actual),
        "max_abs": report.max_abs_diff,
        "max_rel": report.max_rel_diff,
        "held_to": "relaxed" if spec.relaxed_numerics else "eager",
        "relaxed": spec.relaxed_numerics,
    }
    if contract is not None:
        accuracy["contract"] = str(contract)
    return Judged(report.ok, report.detail, accuracy)


def compare_steps(
    expected: list[StepRecord], actual: list[StepRecord], *, relaxed: bool
) -> AccuracyReport:
    """Compares losses and gradients with :func:`compare_outputs`; the first failure
    names the step, and the loss or the parameter."""
    worst_abs = worst_rel = 0.0
    failure = ""
    for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
        where = f" of step {index + 1}" if len(expected) > 1 else ""
        pairs: list[tuple[str, torch.Tensor | None, torch.Tensor | None]]
        pairs = [("the loss", want.loss, got.loss)]
        pairs += [(f"the gradient of {n!r}", g, got.grads[n]) for n, g in want.grads.items()]
        for label, left, right in pairs:
            report = compare_outputs(left, right, relaxed=relaxed)
            worst_abs = max(worst_abs, report.max_abs_diff)
            worst_rel = max(worst_rel, report.max_rel_diff)
            if not report.ok and not failure:
                detail = report.detail.removeprefix("out: ")
                failure = f"{label}{where} differs from eager: {detail}"
    return AccuracyReport(not failure, worst_abs, worst_rel, failure)


def _first(target: Stepper, call: Call) -> StepRecord:
    record = target.step(call, capture=True)
    assert record is not None
    return record


@contextlib.contextmanager
def _captured_grads(
    params: dict[str, torch.nn.Parameter],
) -> Iterator[dict[str, torch.Tensor | None]]:
    """Each parameter's gradient as last accumulated during the block (the one an optimizer
    step inside the block stepped with); None for a parameter none reached."""
    grads: dict[str, torch.Tensor | None] = dict.fromkeys(params)

    def hook(name: str, param: torch.nn.Parameter) -> None:
        assert param.grad is not None
        grads[name] = param.grad.detach().clone()

    handles = [
        p.register_post_accumulate_grad_hook(partial(hook, name))
        for name, p in params.items()
        if p.requires_grad
    ]
    try:
        yield grads
    finally:
        for handle in handles:
            handle.remove()


def _rng_states(params: dict[str, torch.nn.Parameter]) -> list[torch.Tensor]:
    """The states of the generators a step may draw from: the CPU one and those of the CUDA
    devices holding parameters."""
    states = [torch.get_rng_state()]
    devices = {p.device for p in params.values() if p.device.type == "cuda"}
    states += [torch.cuda.get_rng_state(d) for d in sorted(devices, key=str)]
    return states
