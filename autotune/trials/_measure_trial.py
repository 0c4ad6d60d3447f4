"""Inside the trial process: eager reference, compile, correctness gate, interleaved timing.

The infer workload calls the model in ``eval()`` mode under ``torch.no_grad()``; the train
workload times training steps (see autotune.trials._train), the generate workload
``generate()`` on each request (see autotune.trials._generate).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch

from autotune.measure import parse_contract, report_errors
from autotune.measure.accuracy import AccuracyReport, clone_outputs, compare_outputs
from autotune.measure.memory import peak_memory_bytes, reset_peak_memory
from autotune.measure.timing import Timing, interleaved_timing, time_first_call
from autotune.runtime.apply import compile_module
from autotune.runtime.config import CompileConfig
from autotune.runtime.fingerprint import environment_fingerprint, model_fingerprint
from autotune.runtime.quantize import weights_bytes
from autotune.settings import WORKLOADS
from autotune.trials import _generate, _train
from autotune.trials._checks import (
    dynamo_facts,
    raise_on_no_graph,
    raise_on_recompile_storm,
    reset_counters,
)
from autotune.trials._classify import TrialFailure, classify
from autotune.trials._code import code_identity, output_code
from autotune.trials._judged import Judged
from autotune.trials._many import name_call, per_shape, record_traffic, warmup_specs
from autotune.trials._phase import write_phase
from autotune.trials._spec import TrialResult, TrialSpec
from autotune.workload import (
    Call,
    accuracy_metric,
    build_seeded,
    count_units,
    describe_calls,
)

_EAGER_STEPS = "two eager training steps from the same weights and seed"


@dataclass
class Workload:
    model: torch.nn.Module
    calls: list[Call]
    reference: Any  # eager outputs of one sweep, cloned
    metric: Callable[[Any, Any], float] | None = None  # the model file's accuracy()
    units: dict[str, Any] | None = None  # what one sweep processes (count_units)


def measure_trial(spec: TrialSpec) -> TrialResult:
    """Runs one trial; a classified failure comes back as a failed TrialResult."""
    if spec.workload not in WORKLOADS:
        raise ValueError(f"TrialSpec.workload must be one of {WORKLOADS}, got {spec.workload!r}")
    config = CompileConfig.from_dict(spec.config) if spec.config is not None else None
    deadline = time.monotonic() + spec.time_limit_s
    facts: dict[str, Any] = {
        "environment": environment_fingerprint(spec.device),
        "threads": torch.get_num_threads(),
        "batch_size": spec.batch_size,
    }
    try:
        return _measure(spec, config, deadline, facts)
    except TrialFailure as failure:
        return TrialResult.failed(failure.kind, str(failure), **facts)


def _measure(
    spec: TrialSpec, config: CompileConfig | None, deadline: float, facts: dict[str, Any]
) -> TrialResult:
    """The trial of the spec's workload, holding the device slot where one is shared."""
    if spec.workload == "train":
        with torch.enable_grad():
            return _train_trial(spec, config, deadline, facts)
    if spec.workload == "generate":
        with torch.no_grad():
            return _generate_trial(spec, config, deadline, facts)
    with torch.no_grad():
        started = time.perf_counter()
        work = _setup(spec)
        _record_setup(facts, started, work.calls, work.model, work.units)
        facts["warmup"] = warmup_specs(work.calls)
        return _compile_and_time(spec, config, work, deadline, facts)


def _record_setup(
    facts: dict[str, Any],
    started: float,
    calls: list[Call],
    model: torch.nn.Module,
    units: dict[str, Any] | None,
) -> None:
    facts["phases"] = {"setup_s": time.perf_counter() - started}
    facts["inputs"] = describe_calls(calls)
    facts["model"] = model_fingerprint(model)
    facts["eager_weights_bytes"] = facts["weights_bytes"] = weights_bytes(model)
    if units is not None:
        facts["units"] = units


@contextlib.contextmanager
def _compiling(spec: TrialSpec, facts: dict[str, Any]) -> Iterator[list[str]]:
    """Every workload's compile phase: Dynamo's counters and the device's peak memory start
    afresh, the live display hears "compiling", the generated code is captured (yielded), and
    the phase's wall time is recorded as ``phases.compile_s``."""
    reset_counters()
    reset_peak_memory(spec.device)
    write_phase(spec.progress_path, "compiling")
    started = time.perf_counter()
    with output_code() as codes:
        yield codes
    facts["phases"]["compile_s"] = time.perf_counter() - started


def _setup(spec: TrialSpec) -> Workload:
    try:
        module, model, calls = build_seeded(spec.model_path, spec.device, spec.seed,
                                            spec.batch_size, spec.traffic)  # fmt: skip
        model.eval()
        reference = clone_outputs(_sweep(model, calls))
        metric = accuracy_metric(module) if spec.accuracy else None
        units = count_units(module, calls)
    except Exception as exc:
        raise TrialFailure("model_error", str(exc)) from exc
    return Workload(model, calls, reference, metric, units)


def _compile_and_time(
    spec: TrialSpec,
    config: CompileConfig | None,
    work: Workload,
    deadline: float,
    facts: dict[str, Any],
) -> TrialResult:
    with _compiling(spec, facts) as codes:
        target, compile_s = _compile(spec, config, work)
    if target.backend is not None:
        facts["backend_conversion"] = target.backend
    if isinstance(target.fn, torch.nn.Module):
        facts["weights_bytes"] = weights_bytes(target.fn)
    raise_on_no_graph(config)
    report = _judge(spec, work, target.outputs)
    if not report.ok and len(work.calls) > 1:
        report = dataclasses.replace(report, detail=name_call(report.detail, work.calls))
    _raise_unless_correct(report, config, "two eager calls")
    raise_on_recompile_storm()
    same = _equivalent(spec, config, codes, facts)
    if same is not None:
        return _equivalent_result(compile_s, report, facts, spec.relaxed_numerics, same)
    if work.calls[0].weight is not None:
        mix = [(c, c.weight or 0.0) for c in work.calls]
        timing = _time(spec, partial(_one, work.model), partial(_one, target.fn),
                       deadline - 1.0, facts, requests=mix)  # fmt: skip
        raise_on_recompile_storm()
        record_traffic(facts, work.calls, timing, compile_s)
        return _ok_result(compile_s, timing, report, facts, spec.relaxed_numerics)
    timing = _time(
        spec,
        lambda: _sweep(work.model, work.calls),
        lambda: _sweep(target.fn, work.calls),
        deadline - 1.0,
        facts,
    )
    raise_on_recompile_storm()
    if len(work.calls) > 1 and not timing.stopped_early:
        facts["per_shape"] = per_shape(
            spec, work.calls, partial(_one, work.model), partial(_one, target.fn),
            deadline - 1.0,
        )  # fmt: skip
    return _ok_result(compile_s, timing, report, facts, spec.relaxed_numerics)


def _judge(spec: TrialSpec, work: Workload, outputs: list[Any]) -> Judged:
    """Holds ``outputs`` to the study's accuracy contract when the config changes numerics on
    purpose and the study states one; else to eager's gate (10x looser for a config that
    changes numerics without a contract). Every contract metric is recorded either way."""
    contract = parse_contract(spec.accuracy) if spec.accuracy else None
    try:
        if contract is not None and spec.relaxed_numerics:
            verdict = contract.judge(work.reference, outputs, work.metric)
            to = {"held_to": "contract", "contract": str(contract), "relaxed": True}
            return Judged(verdict.ok, verdict.detail, {**verdict.errors, **to})
        report = compare_outputs(work.reference, outputs, relaxed=spec.relaxed_numerics)
        errors = report_errors(report)
        if contract is not None and contract.custom is not None and work.metric is not None:
            errors.update(contract.judge(work.reference, outputs, work.metric).errors)
    except Exception as exc:  # the model file's accuracy() broke its contract
        raise TrialFailure("model_error", str(exc)) from exc
    held = "relaxed" if spec.relaxed_numerics else "eager"
    accuracy: dict[str, Any] = {**errors, "held_to": held, "relaxed": spec.relaxed_numerics}
    if contract is not None:
        accuracy["contract"] = str(contract)
    return Judged(report.ok, report.detail, accuracy)


def _equivalent(
    spec: TrialSpec, config: CompileConfig | None, codes: list[str], facts: dict[str, Any]
) -> int | None:
    """Records the trial's code identity; the trial that already timed the same code, if any."""
    if config is None:
        return None
    facts["code_hash"] = code_identity(config, spec.batch_size, codes)
    return spec.known_code.get(facts["code_hash"] or "")


def _equivalent_result(
    compile_s: float | None,
    report: AccuracyReport | Judged,
    facts: dict[str, Any],
    relaxed: bool,
    same: int,
) -> TrialResult:
    """A trial that compiled to code already timed as trial ``same``: it passed the gate, and
    its steady state is that trial's (filled in by whoever reads the result)."""
    facts["phases"]["timing_s"] = 0.0
    facts["peak_memory_bytes"] = None
    facts.update(dynamo_facts())
    return TrialResult(
        status="ok",
        compile_time_s=compile_s,
        accuracy=_accuracy(report, relaxed),
        equivalent_of=same,
        **facts,
    )


def _train_trial(
    spec: TrialSpec, config: CompileConfig | None, deadline: float, facts: dict[str, Any]
) -> TrialResult:
    """One training step per input is the timed unit; see autotune.trials._train."""
    started = time.perf_counter()
    work = _train.setup(spec)
    _record_setup(facts, started, work.calls, work.model, work.units)
    with _compiling(spec, facts) as codes:
        target, steps, compile_s = _train.compile_first_steps(work, config, spec.device)
    gate = _train.gate_config(work, config)
    if gate is None:
        report = _train.judge_steps(spec, work.reference, steps)
        _raise_unless_correct(report, config, _EAGER_STEPS)
        # Code already timed passed this gate then: only a gate of its own (below) waits.
        same = _equivalent(spec, config, codes, facts)
        if same is not None:
            return _equivalent_result(compile_s, report, facts, spec.relaxed_numerics, same)
    eager, calls = work.eager, work.calls
    assert eager is not None
    # The gate's own compile comes after timing: leave it twice what the first one took.
    reserve = 1.0 + (2.0 * (compile_s or 0.0) if gate is not None else 0.0)
    timing = _time(
        spec, lambda: eager.sweep(calls), lambda: target.sweep(calls), deadline - reserve, facts
    )
    raise_on_recompile_storm()
    if len(calls) > 1 and not timing.stopped_early:
        one_eager, one_compiled = (lambda c: eager.sweep([c])), (lambda c: target.sweep([c]))
        facts["per_shape"] = per_shape(spec, calls, one_eager, one_compiled, deadline - reserve)
    if gate is not None:
        _, steps, _ = _train.compile_first_steps(work, gate, spec.device)
        report = _train.judge_steps(spec, work.reference, steps)
        _raise_unless_correct(report, config, _EAGER_STEPS)
    result = _ok_result(compile_s, timing, report, facts, spec.relaxed_numerics)
    result.accuracy["fallback_random_copy"] = gate is not None
    return result


def _generate_trial(
    spec: TrialSpec, config: CompileConfig | None, deadline: float, facts: dict[str, Any]
) -> TrialResult:
    """``generate()`` on each request is the timed unit; see autotune.trials._generate."""
    started = time.perf_counter()
    work = _generate.setup(spec)
    _record_setup(facts, started, work.calls, work.model, work.units)
    with _compiling(spec, facts) as codes:
        outputs, compile_s = _generate.compile_first(spec, work, config)
    facts["weights_bytes"] = weights_bytes(work.configured)
    raise_on_no_graph(config)
    contract = parse_contract(spec.accuracy) if spec.accuracy else None
    if contract is not None and config is not None and spec.relaxed_numerics:
        report = _generate.judge_contract(work, contract, outputs)
    else:
        report = _generate.judge(work.reference, outputs)
    _raise_unless_correct(report, config, "two eager generate() runs")
    raise_on_recompile_storm()
    same = _equivalent(spec, config, codes, facts)
    if same is not None:
        return _equivalent_result(compile_s, report, facts, spec.relaxed_numerics, same)
    eager_fn, compiled_fn = _generate.sweeps(work, compiled=config is not None)
    timing = _time(spec, eager_fn, compiled_fn, deadline - 1.0, facts)
    raise_on_recompile_storm()
    compiled = config is not None
    later = deadline - 1.0
    facts["generate"] = _generate.first_token(spec, work, timing, compiled, later)
    return _ok_result(compile_s, timing, report, facts, spec.relaxed_numerics)


def _raise_unless_correct(
    report: AccuracyReport | Judged, config: CompileConfig | None, eager_runs: str
) -> None:
    if report.ok:
        return
    if config is not None:
        raise TrialFailure("accuracy", report.detail)
    raise TrialFailure(
        "model_error",
        f"{eager_runs} on the same inputs differ ({report.detail}); the model is not "
        "deterministic, so no compiled output can be checked against it",
    )


def _ok_result(
    compile_s: float | None,
    timing: Timing,
    report: AccuracyReport | Judged,
    facts: dict[str, Any],
    relaxed: bool,
) -> TrialResult:
    """A trial that passed the gate (``relaxed``: the 10x looser one) and was timed."""
    return TrialResult(
        status="ok",
        compile_time_s=compile_s,
        latency_median_s=timing.compiled.median,
        latency_iqr_s=timing.compiled.iqr,
        eager_latency_median_s=timing.eager.median,
        eager_latency_iqr_s=timing.eager.iqr,
        speedup_vs_eager=timing.ratio.median,
        speedup_vs_eager_q1=timing.ratio.q1,
        speedup_vs_eager_q3=timing.ratio.q3,
        speedup_vs_eager_ci_low=timing.ratio.ci_low,
        speedup_vs_eager_ci_high=timing.ratio.ci_high,
        speedup_rounds=[float(f"{r:.5g}") for r in timing.ratios],
        rounds=timing.rounds,
        calls_per_sample=timing.calls_per_sample,
        accuracy=_accuracy(report, relaxed),
        pruned=timing.stopped_early,
        **facts,
    )


def _accuracy(report: AccuracyReport | Judged, relaxed: bool) -> dict[str, Any]:
    """What a result records of the gate: ``max_abs_diff``/``max_rel_diff`` as always, with
    every contract metric (``max_abs``, ``max_rel``, ``cosine``, ``accuracy``) and what the
    outputs were held to, when the gate was :func:`_judge`'s."""
    if isinstance(report, Judged):
        recorded = dict(report.accuracy)
        recorded["max_abs_diff"] = recorded.get("max_abs")
        recorded["max_rel_diff"] = recorded.get("max_rel")
        return recorded
    return {
        "max_abs_diff": report.max_abs_diff,
        "max_rel_diff": report.max_rel_diff,
        "relaxed": relaxed,
    }


@dataclass
class _Target:
    fn: Callable[..., Any]
    outputs: Any
    backend: str | None = None  # what the backend converted (OpenVINO's summary), if watched


def _compile(
    spec: TrialSpec, config: CompileConfig | None, work: Workload
) -> tuple[_Target, float | None]:
    """Compiles, and times the first call of every input shape (that is the compile time)."""
    if config is None:
        return _Target(work.model, clone_outputs(_sweep(work.model, work.calls))), None
    try:
        # eager's model stays eager's: a regional scope replaces children in place, and a
        # config that changes the weights (a cast, a quantization) changes them in place
        whole = config.scope.compile == ("",) and not config.scope.disable
        model = work.model if whole and not config.changes_weights else copy.deepcopy(work.model)
        with _watch_backend(config) as conversion:
            compiled = compile_module(model, config, allow_unsafe_knobs=spec.allow_unsafe_knobs)
            outputs, total = [], 0.0
            for call in work.calls:
                out, seconds = time_first_call(partial(_one, compiled, call), spec.device)
                outputs.append(clone_outputs(out))
                total += seconds
    except Exception as exc:
        raise classify(exc, config) from exc
    _raise_on_fallback(conversion)
    summary = conversion.summary() if conversion is not None else None
    return _Target(compiled, outputs, summary), total


def _watch_backend(config: CompileConfig) -> Any:
    """What the backend did with each graph, for a backend that falls back silently
    (OpenVINO); None (nothing watched) for the others."""
    import contextlib

    if config.backend != "openvino":
        return contextlib.nullcontext()
    from autotune.runtime import openvino_backend
    from autotune.trials._openvino_watch import watch

    openvino_backend.reset()
    return watch()


def _raise_on_fallback(conversion: Any) -> None:
    """A trial whose backend left ops or graphs to torch or Inductor measured a mix, not that
    backend: a ``backend_fallback`` failure naming the share it did run."""
    if conversion is None or not conversion.fallback:
        return
    first = next((g.error for g in conversion.graphs if g.error), None)
    why = f"; first cause: {first.splitlines()[0][:300]}" if first else ""
    raise TrialFailure(
        "backend_fallback",
        f"{conversion.summary()}: part of the model ran outside OpenVINO{why}",
    )


def _time(
    spec: TrialSpec,
    eager_fn: Callable[[], object],
    compiled_fn: Callable[[], object],
    deadline: float,
    facts: dict[str, Any],
    requests: list[tuple[Call, float]] | None = None,
) -> Timing:
    """Interleaved timing (of a traffic mix's ``requests``, each with its weight, when given:
    the functions then take one call); then the measurements taken after it (peak memory,
    Dynamo facts)."""
    write_phase(spec.progress_path, "measuring")
    started = time.perf_counter()
    try:
        timing = interleaved_timing(
            eager_fn, compiled_fn, spec.device, spec.measure, deadline=deadline, requests=requests
        )
    except Exception as exc:
        raise classify(exc, None) from exc
    facts["phases"]["timing_s"] = time.perf_counter() - started
    facts["peak_memory_bytes"] = peak_memory_bytes(spec.device)
    facts.update(dynamo_facts())
    return timing


def _sweep(fn: Callable[..., Any], calls: list[Call]) -> list[Any]:
    return [_one(fn, c) for c in calls]


def _one(fn: Callable[..., Any], call: Call) -> Any:
    return fn(*call.args, **call.kwargs)
