"""The generate workload inside the trial process: ``generate()`` on each request of the model
file is the timed unit, eager against the config.

The config runs as the generate workload ships it (:func:`~autotune.runtime.config.
for_generate`): the decode steps compiled by the searched config, the prefill eager, on the
model itself, compiled in place as ``autotune.apply`` does. Eager runs are the same model with
its compiled entry set aside, so a trial never holds the weights twice: a model that generates
in eager fits in a trial. A config that changes the weights (a cast, a quantization) runs on a
copy, beside eager's. Transformers' own compile (a static cache on CUDA) is turned off, so
that the two never nest. The gate: every request's token ids equal eager's, greedy in fp32.
Time to first token is ``generate`` of one new token, timed like the sweep.
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch

from autotune import measure
from autotune.measure import Contract
from autotune.measure.timing import Timing, interleaved_timing, time_first_call
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

__all__ = [
    "GenerateWork", "compile_first", "first_token", "forced_logits", "generation_errors", "judge",
    "judge_contract", "setup", "sweeps",
]  # fmt: skip


@dataclass
class GenerateWork:
    """One generate trial's model, its requests and eager's token ids."""

    model: torch.nn.Module
    calls: list[Call]
    step: Callable[[torch.nn.Module, Call], torch.Tensor]
    reference: list[torch.Tensor]
    units: dict[str, Any] | None
    first: list[Call] | None  # each request for one new token (the model's generate() only)
    # The model the config runs: ``model`` itself compiled in place, or a copy of it when the
    # config changes the weights (a cast, a quantization), so that eager's stay eager's
    target: torch.nn.Module | None = None
    own_generate: bool = False  # the model file's generate(model, inputs), not the model's

    @property
    def configured(self) -> torch.nn.Module:
        return self.target if self.target is not None else self.model


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
    own = getattr(module, "generate", None) is not None
    return GenerateWork(model, calls, step, reference, units, first, own_generate=own)


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
    return [work.step(work.configured, call) for call in calls]


def _eager_sweep(work: GenerateWork, calls: list[Call]) -> list[torch.Tensor]:
    with eager(work.model):
        return [work.step(work.model, call) for call in calls]


def compile_first(
    spec: TrialSpec, work: GenerateWork, config: CompileConfig | None
) -> tuple[list[torch.Tensor], float | None]:
    """Compiles the model in place as the config's plan says and runs each request once (the
    compile time: every part compiles on the first request that reaches it); eager's second
    run for the eager baseline."""
    if config is None:
        return _eager_sweep(work, work.calls), None
    try:
        if config.changes_weights:  # a cast or quantized copy: eager's weights stay eager's
            work.target = copy.deepcopy(work.model)
        compile_module(
            work.configured, for_generate(config), allow_unsafe_knobs=spec.allow_unsafe_knobs
        )
        outputs, total = [], 0.0
        for call in work.calls:
            out, seconds = time_first_call(partial(work.step, work.configured, call), spec.device)
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


def judge_contract(work: GenerateWork, contract: Contract, outputs: list[torch.Tensor]) -> Judged:
    """Holds a config that changes precision to the study's generation contract: eager's
    token ids teacher-forced through the config's decode and through eager's, position by
    position (see :mod:`autotune.measure._contract`); the share of tokens it generated equal
    to eager's on its own is recorded beside."""
    if work.own_generate:
        raise TrialFailure(
            "model_error",
            f"the accuracy contract {contract} teacher-forces eager's tokens through the "
            "model's generate() (transformers' GenerationMixin), and this model file defines "
            "its own generate(model, inputs), which takes no logits processor: drop the "
            "contract, or generate with the model's generate()",
        )
    try:
        pairs = list(zip(work.calls, work.reference, strict=True))
        with eager(work.model):
            want = [forced_logits(work.model, call, ids) for call, ids in pairs]
        got = [forced_logits(work.configured, call, ids) for call, ids in pairs]
    except Exception as exc:
        raise classify(exc, None) from exc
    errors = generation_errors(want, got)
    verdict = contract.judge_generation(errors)
    tokens = judge(work.reference, outputs).accuracy["tokens_equal"]
    accuracy = {**errors, "tokens_equal": tokens, "held_to": "contract", "relaxed": True}
    return Judged(verdict.ok, verdict.detail, {**accuracy, "contract": str(contract)})


def forced_logits(model: torch.nn.Module, call: Call, reference: torch.Tensor) -> torch.Tensor:
    """``[batch, new tokens, vocab]``: the logits of each new position of ``model.generate``
    on ``call``'s prompt with every next token forced to ``reference``'s (eager's): the
    decode path the model runs (its compiled steps, its cache) on eager's prefixes."""
    from transformers import LogitsProcessor, LogitsProcessorList

    prompt = call.kwargs.get("input_ids", call.args[0] if call.args else None)
    start = int(prompt.shape[1]) if isinstance(prompt, torch.Tensor) else 0

    class Forced(LogitsProcessor):
        def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
            at = min(int(input_ids.shape[1]), reference.shape[1] - 1)
            forced = torch.full_like(scores, -math.inf)
            return forced.scatter_(1, reference[:, at : at + 1].to(scores.device), 0.0)

    kwargs = {
        **call.kwargs, "do_sample": False, "logits_processor": LogitsProcessorList([Forced()]),
        "output_logits": True, "return_dict_in_generate": True,
        "max_new_tokens": max(reference.shape[1] - start, 1),
    }  # fmt: skip
    out = getattr(model, "generate")(*call.args, **kwargs)  # noqa: B009 (Module.__getattr__)
    return torch.stack(list(out.logits), dim=1).float()


def generation_errors(want: list[torch.Tensor], got: list[torch.Tensor]) -> dict[str, Any]:
    """``top1`` (the share of positions whose argmax is eager's), ``cosine`` (the lowest
    cosine of one position's logits with eager's), ``first_divergence`` (where the argmax
    first differs, or None) and ``positions`` compared, over every request's sequences."""
    equal = positions = 0
    low = 1.0
    first = None
    for i, (w, g) in enumerate(zip(want, got, strict=True)):
        if w.shape != g.shape:
            return {"top1": 0.0, "cosine": None, "positions": positions,
                    "first_divergence": f"request {i}: logits {tuple(g.shape)} where eager's "
                                        f"are {tuple(w.shape)}"}  # fmt: skip
        same = w.argmax(-1) == g.argmax(-1)
        equal, positions = equal + int(same.sum()), positions + same.numel()
        cosine = torch.nn.functional.cosine_similarity(w, g, dim=-1).nan_to_num(-1.0)
        low = min(low, float(cosine.min())) if cosine.numel() else low
        if first is None and not bool(same.all()):
            row, at = (int(x) for x in (~same).nonzero()[0])
            first = f"request {i}, sequence {row}, new token {at}"
    top1 = equal / positions if positions else 1.0
    return {"top1": top1, "cosine": low, "first_divergence": first, "positions": positions}


def sweeps(
    work: GenerateWork, compiled: bool
) -> tuple[Callable[[], object], Callable[[], object]]:
    """Eager's sweep and the config's (eager's too for the eager baseline)."""
    eager_fn = partial(_eager_sweep, work, work.calls)
    return eager_fn, (partial(_sweep, work, work.calls) if compiled else eager_fn)


def first_token(
    spec: TrialSpec,
    work: GenerateWork,
    timing: Timing,
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
    short = measure.MeasureSettings(
        warmup=1, min_rounds=3, max_rounds=spec.measure.max_rounds,
        target_seconds=spec.measure.target_seconds / 2,
    )  # fmt: skip
    try:
        t = interleaved_timing(eager_fn, compiled_fn, spec.device, short, deadline=deadline)
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
