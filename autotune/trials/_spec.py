"""What a trial is asked to do, and what it reports: plain data, one JSON object each."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from autotune.measure import MeasureSettings
from autotune.settings import DEFAULT, StudySettings, TrialFields

FAILURE_KINDS = (
    "compile_error",  # torch.compile or the first compiled call raised
    "graph_break",  # fullgraph=True on a model that breaks
    "crash",  # the trial process died (signal or exit code) without a result
    "timeout",  # still compiling or running when its compile budget ran out
    "oom",  # out of memory (CUDA or host allocator)
    "accuracy",  # outputs differ from eager beyond the dtype's tolerance
    "model_error",  # the model file broke its contract or eager itself failed
    "memory_budget",  # ran and matched eager, but its peak memory broke --memory-budget
    "latency_budget",  # ran and matched eager, but one call took longer than --max-latency-ms
    "startup_budget",  # ran and matched eager, but its start-up broke --max-startup-s
    "recompile_storm",  # hit Dynamo's recompile limit: new shapes silently ran eager
    # torch.compile compiled no graph in the config's scope: the trial would measure eager
    # under another name (it is not timed, and does not count against --trials)
    "no_graph",
    # a backend left some of the model to another (OpenVINO: ops or whole graphs run by torch
    # or Inductor): whatever it measured is not that backend's result
    "backend_fallback",
)


# Finalists and verify time until the median speedup is known within +-2% (95% confidence).
DEFAULT_PRECISION = DEFAULT["precision"]


@dataclass(frozen=True, kw_only=True)
class TrialSpec(TrialFields):
    """Everything a trial process needs; independent of who asked for the trial: the study's
    settings a trial runs with (:class:`~autotune.settings.TrialFields`: the model file, the
    device, the workload, the seed, the kernel cache, the accuracy contract a config that
    changes numerics is held to instead of the 10x looser gate, the traffic's shapes), and these.
    """

    config: dict[str, Any] | None  # CompileConfig.to_dict(); None measures eager against itself
    time_limit_s: float = DEFAULT["compile_budget"]
    measure: MeasureSettings = field(default_factory=MeasureSettings)
    relaxed_numerics: bool = False  # the config changes numerics on purpose: looser gate
    batch_size: int | None = None  # get_inputs(device, batch_size); None: get_inputs(device)
    progress_path: str | None = None  # where the trial writes its phase for a live display
    # Code identities already measured in the study, to the trial that measured them: a trial
    # that generates one of them is not timed (see autotune.trials._code).
    known_code: dict[str, int] = field(default_factory=dict)
    # Knobs refused from data that the config may set anyway (``inductor.cpp.cxx``): named by
    # the operator (a space's [unsafe] table, --allow-unsafe-knob), never by a database row.
    allow_unsafe_knobs: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrialSpec:
        return cls(**{**data, "measure": MeasureSettings(**data.get("measure", {}))})

    @classmethod
    def from_settings(
        cls,
        settings: StudySettings,
        config: dict[str, Any] | None,
        *,
        cache_dir: str | None,
        relaxed_numerics: bool,
        batch_size: int | None = None,
        measure: MeasureSettings | None = None,
        time_limit_s: float | None = None,
    ) -> TrialSpec:
        """One trial of a study: the study's settings a trial runs with (each field of
        :class:`~autotune.settings.TrialFields` the study stores; the kernel cache,
        ``cache_dir``, is this machine's and never stored), ``config`` (None: eager), held to
        the looser gate when ``relaxed_numerics``, timed by ``measure`` (default: the study's),
        killed after ``time_limit_s`` (default: the study's compile budget)."""
        stored = {f.name for f in dataclasses.fields(settings)}
        shared = {
            f.name: getattr(settings, f.name)
            for f in dataclasses.fields(TrialFields)
            if f.name in stored
        }
        return cls(
            **shared,
            cache_dir=cache_dir,
            config=config,
            time_limit_s=settings.compile_budget if time_limit_s is None else time_limit_s,
            measure=measure or settings.measure,
            relaxed_numerics=relaxed_numerics,
            batch_size=batch_size,
        )


@dataclass(kw_only=True)
class TrialFigures:
    """How a trial ended, what it measured and where it ran, each quantity under one name: a
    trial's :class:`TrialResult` and the record a study keeps of it
    (``autotune.records.TrialRecord``) both carry these fields, and every file, export and
    report names a figure as they do (``latency_median_s``, never ``latency_s``)."""

    failure_kind: str | None = None
    error: str | None = None
    error_tail: str | None = None
    compile_time_s: float | None = None
    latency_median_s: float | None = None
    latency_iqr_s: float | None = None
    eager_latency_median_s: float | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_eager_q1: float | None = None
    speedup_vs_eager_q3: float | None = None
    peak_memory_bytes: int | None = None
    graphs: int | None = None
    graph_breaks: int | None = None
    recompiles: int | None = None
    wall_time_s: float | None = None
    environment: dict[str, Any] = field(default_factory=dict)


@dataclass
class TrialResult(TrialFigures):
    """The outcome of one trial: ``status`` "ok", or "failed" with a ``failure_kind``; its
    figures are :class:`TrialFigures`', and these add what only the trial itself reports."""

    status: str
    eager_latency_iqr_s: float | None = None
    speedup_vs_eager_ci_low: float | None = None  # the median's 95% confidence interval
    speedup_vs_eager_ci_high: float | None = None
    # Every round's eager/compiled ratio, in order (5 significant digits): what pools the
    # rounds of several processes into one interval (autotune.measure.pooled)
    speedup_rounds: list[float] = field(default_factory=list)
    rounds: int | None = None
    calls_per_sample: int | None = None
    graph_break_reasons: list[str] = field(default_factory=list)
    cache: dict[str, int] = field(default_factory=dict)
    accuracy: dict[str, Any] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)
    model: dict[str, Any] = field(default_factory=dict)
    phases: dict[str, float] = field(default_factory=dict)  # setup_s, compile_s, timing_s
    threads: int | None = None  # torch intra-op threads the trial ran with
    per_shape: list[dict[str, Any]] = field(default_factory=list)  # shape distributions only
    batch_size: int | None = None  # the batch size get_inputs was asked for, if one was
    # What one sweep processes, as the model file's units(inputs) counts it: name, per_sweep
    units: dict[str, Any] | None = None
    cache_bytes_written: int | None = None  # what the trial added to the study's kernel cache
    code_hash: str | None = None  # the identity of the generated code (autotune.trials._code)
    equivalent_of: int | None = None  # the trial whose identical code was timed instead
    pruned: bool = False  # timing stopped early: clearly slower than the best so far
    # What a backend that falls back silently converted (OpenVINO: graphs, ops in it and not)
    backend_conversion: str | None = None
    # The generate workload's time to first token and decode rate, the config's and eager's:
    # ttft_s, eager_ttft_s, decode_tokens_per_s, eager_decode_tokens_per_s
    generate: dict[str, Any] | None = None
    # A traffic mix's (get_traffic) weighted figures, the config's and eager's: mean_s, p50_s,
    # p95_s, p99_s, eager_mean_s, ..., requests, and startup_s (compiling every shape it brings)
    traffic: dict[str, Any] | None = None
    # The bytes of the model's parameters and buffers as stored, the config's (cast or
    # quantized: autotune.runtime.quantize.weights_bytes) and eager's
    weights_bytes: int | None = None
    eager_weights_bytes: int | None = None
    # The distinct shapes of the inference calls (autotune.runtime.shapes.call_spec): what
    # autotune.apply(..., warmup="plan") compiles before the first request
    warmup: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def speedup_precision(self) -> float | None:
        """Half the median speedup's 95% confidence interval, relative to it (0.02: +-2%)."""
        low, high, median = (
            self.speedup_vs_eager_ci_low, self.speedup_vs_eager_ci_high, self.speedup_vs_eager
        )  # fmt: skip
        if low is None or high is None or not median:
            return None
        return (high - low) / 2 / median

    def precision_note(self) -> str:
        """``"+-1.8% in 812 rounds"``: how well the median speedup is known, or ``""``."""
        precision = self.speedup_precision
        if precision is None:
            return ""
        return f"±{precision:.1%}" + (f" in {self.rounds:,} rounds" if self.rounds else "")

    @classmethod
    def failed(cls, kind: str, error: str, **fields: Any) -> TrialResult:
        assert kind in FAILURE_KINDS, kind
        return cls(status="failed", failure_kind=kind, error=error, **fields)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrialResult:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})
