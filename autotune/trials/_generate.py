"""The generate workload inside the trial process: ``generate()`` on each request of the model
file is the timed unit, eager against the config.

The config runs as the generate workload ships it (:func:`~autotune.runtime.config.
for_generate`): the decode steps compiled by the searched config, the prefill eager, on the
model itself, compiled in place as ``autotune.apply`` does. Eager runs are the same model with
its compiled entry set aside, so a trial never holds the weights twice: a model that generates
in eager fits in a trial. Transformers' own compile (a static cache on CUDA) is turned off, so
that the two never nest. The gate: every request's token ids equal eager's, greedy in fp32.
Time to first token is ``generate`` of one new token, timed like the sweep.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch

from autotune import measure
from autotune.runtime.apply import compile_module
from autotune.runtime.config import CompileConfig, for_generate
from autotune.trials._classify import TrialFailure, classify
from autotune.trials._judged import Judged
from autotune.trials._spec import TrialSpec
from autotune.workload import (
    Call,
    build_seeded,
    count_units,
    generate_function,
)

__all__ = ["GenerateWork", "compile_first", "first_token", "judge", "setup", "sweeps"]


@dataclass
class GenerateWork:
    """One generate trial's model, its requests and eager's token ids."""

    model: torch.nn.Module
    calls: list[Call]
    step: Callable[[torch.nn.Module, Call], torch.Tensor]
    reference: list[torch.Tensor]
    units: dict[str, Any] | None
    first: list[Call] | None  # each request for one new token (the model's generate() only)


def setup(spec: TrialSpec) -> GenerateWork:
    """The model (eval, transformers' own compile off), the requests, eager's token ids."""
    try:
        module, model, calls = build_seeded(spec.model_path, spec.device, spec.seed, None)
        model.eval()
        own_compile_off(model)
        step = generate_function(module)
        reference = [step(model, call).clone() for call in calls]
        units = count_units(module, calls) or _new_tokens(calls, reference)
    except Exception as exc:
        raise TrialFailure("model_error", str(exc)) from exc
    first = None
    if getattr(module, "generate", None) is None:
        one = {"max_new_tokens": 1, "min_new_tokens": 1}
        first = [Call(call.args, {**call.kwargs, **one}) for call in calls]
    return GenerateWork(model, calls, step, reference, units, first)


def own_compile_off(model: torch.nn.Module) -> None:
    """Turns transformers' own compile off (``generation_config.disable_compile``): with a
    static cache on CUDA, ``generate()`` compiles the decode step by itself otherwise, inside
    the config's compile and in eager's runs alike."""
    config = getattr(model, "generation_config", None)
    if config is not None and hasattr(config, "disable_compile"):
        config.disable_compile = True


def _new_tokens(calls: list[Call], reference: list[torch.Tensor]) -> dict[str, Any] | None:
    """The tokens one sweep generates, when each request names its ``input_ids``."""
    total = 0
    for call, ids in zip(calls, reference, strict=True):
        prompt = call.kwargs.get("input_ids", call.args[0] if call.args else None)
        if not isinstance(prompt, torch.Tensor) or prompt.dim() != 2:
            return None
        total += (ids.shape[1] - prompt.shape[1]) * ids.shape[0]
    return {"name": "tokens", "per_sweep": float(total)} if total > 0 else None


@contextlib.contextmanager
def eager(model: torch.nn.Module) -> Iterator[None]:
    """``model`` eager for the span: its compiled entry (``Module.compile``'s) set aside."""
    compiled = model.__dict__.pop("_compiled_call_impl", None)
    try:
        yield
    finally:
        if compiled is not None:
            model.__dict__["_compiled_call_impl"] = compiled


def _sweep(work: GenerateWork, calls: list[Call]) -> list[torch.Tensor]:
    return [work.step(work.model, call) for call in calls]


def _eager_sweep(work: GenerateWork, calls: list[Call]) -> list[torch.Tensor]:
    with eager(work.model):
        return _sweep(work, calls)


def compile_first(
    spec: TrialSpec, work: GenerateWork, config: CompileConfig | None
) -> tuple[list[torch.Tensor], float | None]:
    """Compiles the model in place as the config's plan says and runs each request once (the
    compile time: every part compiles on the first request that reaches it); eager's second
    run for the eager baseline."""
    if config is None:
        return _eager_sweep(work, work.calls), None
    try:
        compile_module(
            work.model, for_generate(config), allow_unsafe_knobs=spec.allow_unsafe_knobs
        )
        outputs, total = [], 0.0
        for call in work.calls:
            out, seconds = measure.time_first_call(
                partial(work.step, work.model, call), spec.device
            )
            outputs.append(out.clone())
            total += seconds
    except TrialFailure:
        raise
    except Exception as exc:
        raise classify(exc, config) from exc
    return outputs, total


def judge(reference: list[torch.Tensor], outputs: list[torch.Tensor]) -> Judged:
    """Every request's token ids equal eager's; else the first token that differs."""
    equal = total = 0
    first = ""
    for i, (want, got) in enumerate(zip(reference, outputs, strict=True)):
        if got.shape != want.shape:
            first = first or (
                f"request {i}: generated {tuple(got.shape)} token ids where eager generated "
                f"{tuple(want.shape)}"
            )
            total += want.numel()
            continue
        same = got == want
        equal += int(same.sum())
        total += same.numel()
        if not first and not bool(same.all()):
            row, position = (int(x) for x in (~same).nonzero()[0])
            first = (
                f"request {i}: token {position} of sequence {row} is {int(got[row, position])} "
                f"where eager's is {int(want[row, position])} (greedy, fp32)"
            )
    share = equal / total if total else 1.0
    accuracy = {"tokens_equal": share, "held_to": "tokens", "relaxed": False}
    return Judged(not first, first, accuracy)


def sweeps(
    work: GenerateWork, compiled: bool
) -> tuple[Callable[[], object], Callable[[], object]]:
    """Eager's sweep and the config's (eager's too for the eager baseline)."""
    eager_fn = partial(_eager_sweep, work, work.calls)
    return eager_fn, (partial(_sweep, work, work.calls) if compiled else eager_fn)


def first_token(
    spec: TrialSpec,
    work: GenerateWork,
    timing: measure.Timing,
    compiled: bool,
    deadline: float,
) -> dict[str, Any] | None:
    """Time to first token (``generate`` of one new token per request, paired with eager's
    like the sweep) and the decode rate it leaves: the tokens after each request's first over
    the time after it. None for a file's own ``generate`` or when the budget is spent."""
    if work.first is None or work.units is None:
        return None
    first = work.first
    eager_fn = partial(_eager_sweep, work, first)
    compiled_fn = partial(_sweep, work, first) if compiled else eager_fn
    try:
        t = measure.interleaved_timing(
            eager_fn, compiled_fn, spec.device, warmup=1, min_rounds=3,
            max_rounds=spec.measure.max_rounds, target_seconds=spec.measure.target_seconds / 2,
            deadline=deadline,
        )  # fmt: skip
    except TimeoutError:
        return None
    firsts = sum(int(ids.shape[0]) for ids in work.reference)  # one first token a sequence
    after = work.units["per_sweep"] - firsts

    def rate(total: float, ttft: float) -> float | None:
        return after / (total - ttft) if after > 0 and total > ttft else None

    return {
        "ttft_s": t.compiled.median,
        "eager_ttft_s": t.eager.median,
        "decode_tokens_per_s": rate(timing.compiled.median, t.compiled.median),
        "eager_decode_tokens_per_s": rate(timing.eager.median, t.eager.median),
    }
