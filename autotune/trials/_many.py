"""A trial's figures over many calls: each input of a shape distribution timed on its own, a
traffic mix's weighted figures, the distinct shapes ``apply(..., warmup="plan")`` compiles, and
the call the gate failed on, named."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any

from autotune import measure
from autotune.measure.timing import Timing, interleaved_timing
from autotune.runtime.shapes import MAX_WARMUP_CALLS, call_spec
from autotune.trials._spec import TrialSpec
from autotune.workload import Call, describe_calls


def record_traffic(
    facts: dict[str, Any], calls: list[Call], timing: Timing, compile_s: float | None
) -> None:
    """A traffic mix's figures: each request's share and median calls (``per_shape``), and the
    traffic's weighted mean, p50/p95/p99 and start-up (``traffic``): the first call of every
    request, which compiles every shape the traffic brings."""
    facts["per_shape"] = [
        {"inputs": described, "weight": r.weight, "latency_median_s": r.compiled_s,
         "eager_latency_median_s": r.eager_s, "speedup_vs_eager": r.eager_s / r.compiled_s}
        for described, r in zip(describe_calls(calls), timing.requests, strict=False)
    ]  # fmt: skip
    facts["traffic"] = {**measure.traffic_summary(timing.requests), "startup_s": compile_s}


def warmup_specs(calls: list[Call]) -> list[dict[str, Any]]:
    """The distinct shapes of the calls, as data: what ``autotune.apply(...,
    warmup="plan")`` compiles before the first request (every shape the study measured, up
    to the :data:`MAX_WARMUP_CALLS` a best-config file holds)."""
    specs: list[dict[str, Any]] = []
    for call in calls:
        spec = call_spec(call.args, call.kwargs)
        if spec not in specs:
            specs.append(spec)
        if len(specs) == MAX_WARMUP_CALLS:
            break
    return specs


def name_call(detail: str, calls: list[Call]) -> str:
    """The gate's ``out[3]["logits"]: ...`` said of the call it is: ``request 3
    (input_ids=2x37:int64): out["logits"]: ...``."""
    found = re.match(r"out\[(\d+)\]", detail)
    if found is None or int(found.group(1)) >= len(calls):
        return detail
    index = int(found.group(1))
    what = "request" if calls[0].weight is not None else "input"
    rest = "out" + detail[found.end() :]
    return f"{what} {index} {describe_calls([calls[index]])[0]}: {rest}"


def per_shape(
    spec: TrialSpec,
    calls: list[Call],
    eager_one: Callable[[Call], Any],
    compiled_one: Callable[[Call], Any],
    deadline: float,
) -> list[dict[str, Any]]:
    """Latency of each input of a shape distribution (a call, or a training step on it),
    paired with eager like the sweep."""
    shapes = []
    each = measure.MeasureSettings(
        warmup=1, min_rounds=5, max_rounds=spec.measure.max_rounds,
        target_seconds=spec.measure.target_seconds / len(calls),
    )  # fmt: skip
    for call, described in zip(calls, describe_calls(calls), strict=True):
        try:
            t = interleaved_timing(
                partial(eager_one, call), partial(compiled_one, call), spec.device, each,
                deadline=deadline,
            )  # fmt: skip
        except TimeoutError:
            break  # the budget is spent: the sweep's figures stand, this detail does not
        shapes.append({
            "inputs": described, "latency_median_s": t.compiled.median,
            "eager_latency_median_s": t.eager.median, "speedup_vs_eager": t.ratio.median,
        })  # fmt: skip
    return shapes
