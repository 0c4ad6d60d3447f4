"""The train workload: one step is forward, loss, backward and optimizer step, run as a user would.

Eager and compiled each step their own deep copy of the seeded model with their own optimizer,
and every step starts with ``torch.manual_seed(seed)``, so dropout draws the same numbers in
both. The correctness gate compares the first step's loss and the parameter gradients (after
its backward, before its optimizer step).

Inductor draws random numbers with generators of its own, so a step that draws any (dropout)
can never match eager bit for bit. Then the gate checks a separate copy compiled with Inductor's
``fallback_random=True`` (random ops run as in eager, as PyTorch's own accuracy benchmarks do),
while the copy that is timed is compiled with the config as it is.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from functools import partial
from types import ModuleType

import torch

from autotune import measure
from autotune.runtime.apply import compile_module
from autotune.runtime.config import CompileConfig
from autotune.trials._classify import TrialFailure, classify
from autotune.trials._spec import TrialSpec
from autotune.workload import (
    Call,
    LossFn,
    build_calls,
    build_model,
    build_optimizer,
    load_model_file,
    loss_function,
)


@dataclass(frozen=True)
class StepRecord:
    """What the gate compares after the first backward of one input, and whether it drew
    random numbers (not compared)."""

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
        loss_fn: LossFn,
        seed: int,
    ) -> None:
        self.fn, self.params, self.optimizer = fn, params, optimizer
        self.loss_fn, self.seed = loss_fn, seed

    def step(self, call: Call, *, capture: bool = False) -> StepRecord | None:
        torch.manual_seed(self.seed)
        before = _rng_states(self.params) if capture else []
        loss = self.loss_fn(self.fn(*call.args, **call.kwargs), call.inputs)
        loss.backward()
        record = self._record(loss, before) if capture else None
        self.optimizer.step()
        self.optimizer.zero_grad()
        return record

    def _record(self, loss: torch.Tensor, rng_before: list[torch.Tensor]) -> StepRecord:
        after = _rng_states(self.params)
        drew = any(not torch.equal(a, b) for a, b in zip(rng_before, after, strict=True))
        grads = {name: _clone_grad(p) for name, p in self.params.items()}
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
    loss_fn: LossFn
    seed: int
    eager: Stepper | None = None
    reference: list[StepRecord] = dataclasses.field(default_factory=list)
    allow_unsafe_knobs: list[str] = dataclasses.field(default_factory=list)

    @property
    def draws_random(self) -> bool:
        return any(r.drew_random for r in self.reference)


def setup(spec: TrialSpec) -> TrainWork:
    """Builds the model and inputs, and takes the eager reference: a ``model_error`` if any of
    it fails."""
    try:
        module = load_model_file(spec.model_path)
        torch.manual_seed(spec.seed)
        model = build_model(module, spec.device).train()
        torch.manual_seed(spec.seed)
        calls = build_calls(module, spec.device, spec.batch_size)
        work = TrainWork(module, model, calls, loss_function(module), spec.seed)
        work.allow_unsafe_knobs = list(spec.allow_unsafe_knobs)
        work.eager = stepper(work, None)
        work.reference = [_first(work.eager, call) for call in calls]
    except Exception as exc:
        raise TrialFailure("model_error", str(exc)) from exc
    return work


def stepper(work: TrainWork, config: CompileConfig | None) -> Stepper:
    """A fresh deep copy of the seeded model, with its own optimizer, compiled by ``config``
    (the ``compile_module`` of production) unless it is None."""
    model = copy.deepcopy(work.model)
    params = dict(model.named_parameters())  # names before compiling adds `_orig_mod.`
    optimizer = build_optimizer(work.module, model)
    allowed = work.allow_unsafe_knobs
    fn = compile_module(model, config, allow_unsafe_knobs=allowed) if config is not None else model
    return Stepper(fn, params, optimizer, work.loss_fn, work.seed)


def compile_first_steps(
    work: TrainWork, config: CompileConfig | None, device: str
) -> tuple[Stepper, list[StepRecord], float | None]:
    """Builds a stepper and runs its first step on every input; the wall time of those steps
    (forward and backward compile included) is the compile time."""
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
            record, seconds = measure.time_first_call(partial(_first, target, call), device)
            records.append(record)
            total += seconds
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


def compare_steps(
    expected: list[StepRecord], actual: list[StepRecord], *, relaxed: bool
) -> measure.AccuracyReport:
    """Compares losses and gradients with :func:`measure.compare_outputs`; the first failure
    names the input, and the loss or the parameter."""
    worst_abs = worst_rel = 0.0
    failure = ""
    for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
        where = f" on input {index}" if len(expected) > 1 else ""
        pairs: list[tuple[str, torch.Tensor | None, torch.Tensor | None]]
        pairs = [("the loss", want.loss, got.loss)]
        pairs += [(f"the gradient of {n!r}", g, got.grads[n]) for n, g in want.grads.items()]
        for label, left, right in pairs:
            report = measure.compare_outputs(left, right, relaxed=relaxed)
            worst_abs = max(worst_abs, report.max_abs_diff)
            worst_rel = max(worst_rel, report.max_rel_diff)
            if not report.ok and not failure:
                detail = report.detail.removeprefix("out: ")
                failure = f"{label} after the first backward{where} differs from eager: {detail}"
    return measure.AccuracyReport(not failure, worst_abs, worst_rel, failure)


def _first(target: Stepper, call: Call) -> StepRecord:
    record = target.step(call, capture=True)
    assert record is not None
    return record


def _clone_grad(param: torch.nn.Parameter) -> torch.Tensor | None:
    return None if param.grad is None else param.grad.detach().clone()


def _rng_states(params: dict[str, torch.nn.Parameter]) -> list[torch.Tensor]:
    """The states of the generators a step may draw from: the CPU one and those of the CUDA
    devices holding parameters."""
    states = [torch.get_rng_state()]
    devices = {p.device for p in params.values() if p.device.type == "cuda"}
    states += [torch.cuda.get_rng_state(d) for d in sorted(devices, key=str)]
    return states
