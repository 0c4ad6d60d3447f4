"""Chooses what the best-config file says: the winning config, or "do not compile"."""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from collections.abc import Collection
from typing import Any

from autotune.decide._finalists import Finalist, finalist_records, left_behind
from autotune.records import TrialRecord, redact_url
from autotune.runtime.config import BestConfig, CompileConfig, for_generate
from autotune.scoring import Objective, break_even_calls
from autotune.settings import StudySettings
from autotune.storage import candidates, eager_baseline, eager_baselines


def best_config(
    records: list[TrialRecord],
    settings: StudySettings,
    study: str,
    storage: str,
    finalists: list[Finalist] | None = None,
) -> BestConfig:
    """The file a study emits. Never a config slower than eager or one that changed outputs:
    a winner must be faster than eager in at least three of four paired rounds (q1 > 1), and
    under the amortized objective it must also pay its compile time back within the calls;
    under throughput it must serve more samples per second than eager at its best batch size.

    With ``finalists`` (re-measured cold and warm in fresh processes), the choice is made on
    their measurements, and a winner whose gain over default torch.compile is within the noise
    gives way to the default compile."""
    objective = Objective.of(settings)
    fresh = {f.searched.trial_number: f for f in finalists or [] if f.ok}
    pool = (
        finalist_records(finalists, settings.charge_warm_compile)
        if finalists
        else candidates(records)
    )
    pool = [r for r in pool if objective.score(r) is not None]
    if not pool:
        return do_not_compile(records, settings, study, storage, why_none(records), None)
    ranked = sorted(pool, key=lambda r: objective.score(r) or 0.0, reverse=True)
    best, refused = _first_shippable(ranked, objective, records)
    if refused is not None:
        return do_not_compile(records, settings, study, storage, refused, best)
    chosen, note = against_default(best, pool, objective, records)
    if chosen is None:
        return do_not_compile(records, settings, study, storage, note, best)
    behind = left_behind(finalists or [], chosen)
    chosen, preset_note = against_preset(chosen, pool, objective, records, settings, behind)
    note += preset_note
    reason = f"trial {chosen.trial_number} was the best correct configuration "
    reason += f"({objective.describe()}): {spread(chosen, objective)}{note}"
    return emit(chosen, reason, objective, pool, records, settings, study, storage, fresh)


def emit(
    best: TrialRecord,
    reason: str,
    objective: Objective,
    pool: list[TrialRecord],
    records: list[TrialRecord],
    settings: StudySettings,
    study: str,
    storage: str,
    fresh: dict[int, Finalist],
) -> BestConfig:
    """The file that says: compile ``best`` (its reason, metrics and compile payback)."""
    config = CompileConfig.from_dict(best.config)
    made = _file(settings, study, storage, best, "compile", reason, config)
    default = next((r for r in pool if r.baseline == "default"), None)
    default = default or next((r for r in records if r.baseline == "default"), None)
    made.metrics["objective_score"] = objective.score(best) or 0.0
    made.metrics["break_even_calls_vs_eager"] = _finite(break_even_calls(best))
    if best.baseline != "default":  # the default compile does not pay back against itself
        made.metrics["break_even_calls_vs_default"] = _finite(break_even_calls(best, default))
    if best.graph_breaks is not None:
        made.metrics["graph_breaks"] = best.graph_breaks
    if best.trial_number in fresh:
        made.metrics["cold_compile_time_s"] = fresh[best.trial_number].cold.compile_time_s
        made.metrics["warm_compile_time_s"] = fresh[best.trial_number].warm.compile_time_s
    return made


def _first_shippable(
    ranked: list[TrialRecord], objective: Objective, records: list[TrialRecord]
) -> tuple[TrialRecord, str | None]:
    """The best-ranked record that may ship, or the one whose refusal says why none may.

    Under latency and amortized a lower score is a lower speedup, so when the best is refused
    every other one is too. Under throughput a config slower than eager at a large batch may
    still ship at a small one: the next is tried until one beats eager at its own batch size;
    then that one ships, or eager at its best batch size serves more than any."""
    first: tuple[TrialRecord, str | None] | None = None
    for r in ranked:
        why = refusal(r, objective, records)
        if why is None or objective.kind != "throughput":
            return r, why
        first = first or (r, why)
        if (r.speedup_vs_eager_q1 or 0.0) > 1.0:
            return r, why  # eager's best batch serves more: every later one serves fewer
    assert first is not None, "ranked is never empty"
    return first


def refusal(best: TrialRecord, objective: Objective, records: list[TrialRecord]) -> str | None:
    """Why ``best`` must not be shipped, or None: it must beat eager in three of four paired
    rounds; under the amortized objective pay its compile back within the calls; under
    throughput serve more samples per second, in three of four rounds, than eager does at the
    batch size where eager serves the most."""
    q1, q3 = best.speedup_vs_eager_q1 or 0.0, best.speedup_vs_eager_q3 or 0.0
    which = f"trial {best.trial_number}: {best.brief}{_at_batch(best)}"
    if q1 <= 1.0:
        return (
            f"the best correct compiled configuration ({which}) ran "
            f"{best.speedup_vs_eager:.3f}x eager, but its paired rounds spread {q1:.3f}x to "
            f"{q3:.3f}x: not reliably faster than eager"
        )
    if objective.kind == "amortized" and (objective.score(best) or 0.0) <= 1.0:
        return (
            f"over {objective.calls} calls no configuration pays back its compile time: the "
            f"best ({which}) runs {best.speedup_vs_eager:.3f}x eager but compiles in "
            f"{best.compile_time_s or 0:.1f} s, so it breaks even only after "
            f"{_calls(break_even_calls(best))} calls"
        )
    eager = best_eager(records, objective) if objective.kind == "throughput" else None
    if eager is not None and objective.spread(best)[0] <= (objective.score(eager) or 0.0):
        return (
            f"eager at batch size {eager.batch_size} serves {objective.score(eager):,.0f} "
            f"samples/s, and the best compiled configuration ({which}) serves "
            f"{objective.score(best):,.0f} samples/s but falls to "
            f"{objective.spread(best)[0]:,.0f} in a quarter of its rounds: not reliably more"
        )
    return None


def best_eager(records: list[TrialRecord], objective: Objective) -> TrialRecord | None:
    """The measured eager baseline that scores best (at its best batch size, for throughput)."""
    return max(eager_baselines(records), key=lambda r: objective.score(r) or 0.0, default=None)


def against_default(
    best: TrialRecord, pool: list[TrialRecord], objective: Objective, records: list[TrialRecord]
) -> tuple[TrialRecord | None, str]:
    """A tuned config must beat default torch.compile by more than the measured spread (its
    lower quartile above the default's upper one, in the objective's units). Otherwise the
    default compile is recommended when it passes on its own, and no compile when it does not."""
    defaults = [r for r in pool if r.baseline == "default"]
    default = max(defaults, key=lambda r: objective.score(r) or 0.0, default=None)
    if default is None or best is default:
        return best, ""
    if objective.spread(best)[0] > objective.spread(default)[1]:
        return best, ""
    within = (
        f"the tuned trial {best.trial_number} ({_score(best, objective)}) did not beat default "
        f"torch.compile ({_score(default, objective)}) by more than the measured spread"
    )
    if refusal(default, objective, records) is None:
        return default, f"; {within}, so the default compile is recommended"
    return None, f"{within}, and the default compile is not reliably faster than eager"


def against_preset(
    best: TrialRecord,
    pool: list[TrialRecord],
    objective: Objective,
    records: list[TrialRecord],
    settings: StudySettings,
    behind: Collection[int] = (),
) -> tuple[TrialRecord, str]:
    """A tuned config that does not beat the best preset of the space by more than the
    measured spread gives way to the preset, which sets fewer knobs (when it is shippable);
    not to one the finalist round left clearly behind it (``behind``: trial numbers, see
    :func:`~autotune.decide._finalists.left_behind`). Under the latency objective a tie goes
    first to the narrower spread (:data:`NARROWER`), then to the fewer knobs."""
    from autotune.decide._presets import preset_hashes

    names = preset_hashes(settings)
    if not names or best.baseline is not None or best.config_hash in names:
        return best, ""
    presets = [
        r for r in pool
        if r.config_hash in names and r.baseline is None and r.trial_number not in behind
    ]  # fmt: skip
    preset = max(presets, key=lambda r: objective.score(r) or 0.0, default=None)
    if preset is None or objective.spread(best)[0] > objective.spread(preset)[1]:
        return best, ""
    if refusal(preset, objective, records) is not None:
        return best, ""
    if objective.kind == "latency" and _width(best) < NARROWER * _width(preset):
        return best, (
            f"; it ties the preset {names[preset.config_hash]!r} ({_score(preset, objective)}) "
            f"within the measured spread, and under the latency objective the narrower spread "
            f"wins before the fewer-knobs rule does (a server pays a wide spread in its tail): "
            f"its rounds spread {_width(best):.1%} of its median, the preset's "
            f"{_width(preset):.1%}"
        )
    return preset, (
        f"; the tuned trial {best.trial_number} ({_score(best, objective)}) did not beat the "
        f"preset {names[preset.config_hash]!r} ({_score(preset, objective)}) by more than the "
        "measured spread, so the preset is recommended"
    )


# Between configs that tie, one whose rounds spread less than this fraction of the other's
# (interquartile range over median) is the narrower: it wins before the fewer-knobs rule.
NARROWER = 0.8


def _width(r: TrialRecord) -> float:
    """The spread of a record's rounds: its interquartile range over its median."""
    median = r.speedup_vs_eager or 0.0
    q1, q3 = r.speedup_vs_eager_q1 or median, r.speedup_vs_eager_q3 or median
    return (q3 - q1) / median if median > 0 else float("inf")


def spread(r: TrialRecord, objective: Objective | None = None) -> str:
    q1, q3 = r.speedup_vs_eager_q1 or 0.0, r.speedup_vs_eager_q3 or 0.0
    line = f"{r.speedup_vs_eager:.3f}x eager (paired rounds {q1:.3f}x to {q3:.3f}x)"
    if objective is not None and objective.kind == "throughput":
        line = f"{objective.score(r):,.0f} samples/s at batch size {r.batch_size}, {line}"
    return line


def _score(r: TrialRecord, objective: Objective) -> str:
    if objective.kind == "throughput":
        return f"{objective.score(r):,.0f} samples/s at batch size {r.batch_size}"
    return f"{r.speedup_vs_eager:.3f}x eager"


def _at_batch(r: TrialRecord) -> str:
    return f" at batch size {r.batch_size}" if r.batch_size is not None else ""


def _calls(n: float | None) -> str:
    if n is None or math.isinf(n):
        return "never"
    return f"{math.ceil(n):,}"


def _finite(n: float | None) -> float | None:
    return None if n is None or math.isinf(n) else n


def do_not_compile(
    records: list[TrialRecord],
    settings: StudySettings,
    study: str,
    storage: str,
    reason: str,
    best: TrialRecord | None,
) -> BestConfig:
    objective = Objective.of(settings)
    eager = best_eager(records, objective) or eager_baseline(records)
    made = _file(settings, study, storage, best or eager, "do_not_compile", reason, None)
    if eager is not None:
        made.metrics["eager_latency_median_s"] = eager.latency_median_s
        if objective.kind == "throughput":
            # what to run instead: eager, at the batch size where it serves the most
            made.workload["batch_size"] = eager.batch_size
            made.metrics["eager_samples_per_s"] = objective.score(eager)
    if best is not None:
        made.metrics["best_compiled_trial"] = best.trial_number
        made.metrics["best_compiled_speedup_vs_eager"] = best.speedup_vs_eager
    return made


def _file(
    settings: StudySettings,
    study: str,
    storage: str,
    record: TrialRecord | None,
    decision: str,
    reason: str,
    config: CompileConfig | None,
) -> BestConfig:
    from autotune._version import VERSION as __version__

    result: dict[str, Any] = record.result if record is not None else {}
    if config is not None and settings.workload == "generate":
        config = for_generate(config)  # the plan the trial ran: decode compiled, prefill eager
    return BestConfig(
        autotune_version=__version__,
        decision=decision,
        reason=reason,
        config=config,
        config_hash=config.config_hash() if config is not None else None,
        metrics=_metrics(record) if config is not None else {},
        environment=dict(result.get("environment") or {}),
        model={**(result.get("model") or {}), "source": settings.model_path},
        workload={
            "kind": settings.workload,
            "device": settings.device,
            "inputs": list(result.get("inputs") or []),
            "objective": settings.objective,
            "calls": settings.calls,
            "batch_size": record.batch_size if record is not None else None,
            "max_latency_s": settings.max_latency_s,
            "seed": settings.seed,  # the weights and inputs it was measured with
            # the config was held to the looser gate of --allow-numerics-changes, or to the
            # accuracy contract below
            "relaxed_numerics": record is not None and record.relaxed_numerics,
            # the accuracy contract the study stated (autotune.measure._contract): verify holds the
            # config to it again
            "accuracy": settings.accuracy,
            # what units_per_s counts (the model file's units(inputs)), if it counts any
            "units": record.units if record is not None else None,
            # the recorded traffic it was measured on (--traffic: shapes and weights), which
            # verify measures it on again; a model file's get_traffic says its own
            **({"traffic": settings.traffic} if settings.traffic else {}),
            # the distinct shapes it was measured on, which apply(..., warmup="plan") compiles
            **(
                {"warmup": result["warmup"]} if config is not None and result.get("warmup") else {}
            ),
        },
        source={
            "study": study,
            "trial": record.trial_number if record is not None and config else None,
            "storage": redact_url(storage),
        },
        created_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    )


def _metrics(r: TrialRecord | None) -> dict[str, float | int | None]:
    if r is None:
        return {}
    metrics: dict[str, float | int | None] = {
        "latency_median_s": r.latency_median_s,
        "latency_iqr_s": r.latency_iqr_s,
        "eager_latency_median_s": r.eager_latency_median_s,
        "speedup_vs_eager": r.speedup_vs_eager,
        "speedup_vs_eager_q1": r.speedup_vs_eager_q1,
        "speedup_vs_eager_q3": r.speedup_vs_eager_q3,
        # the median's 95% interval: the finalist round's (its processes pooled), or the trial's
        "speedup_vs_eager_ci_low": r.result.get("speedup_vs_eager_ci_low"),
        "speedup_vs_eager_ci_high": r.result.get("speedup_vs_eager_ci_high"),
        "speedup_vs_default": r.speedup_vs_default,
        "compile_time_s": r.compile_time_s,
        "peak_memory_bytes": r.peak_memory_bytes,
        # the weights as stored, the config's (cast or quantized) and eager's
        "weights_bytes": r.result.get("weights_bytes"),
        "eager_weights_bytes": r.result.get("eager_weights_bytes"),
    }
    if r.batch_size is not None:
        metrics["samples_per_s"] = r.samples_per_s()
    if r.units is not None:
        metrics["units_per_s"] = r.units_per_s()
        metrics["eager_units_per_s"] = r.units_per_s(1.0)
    metrics.update(error_metrics(r.result.get("accuracy")))
    # the generate workload's: time to first token and the decode rate, the config's and eager's
    generation = r.result.get("generate") or {}
    metrics.update({k: v for k, v in generation.items() if isinstance(v, (int, float))})
    # a traffic mix's: the weighted mean and tail per request, the config's and eager's, and
    # the start-up that compiles every shape it brings (traffic_mean_s, traffic_p99_s, ...)
    traffic = r.traffic or {}
    metrics.update({f"traffic_{k}": v for k, v in traffic.items() if isinstance(v, (int, float))})
    return metrics


def error_metrics(accuracy: Any) -> dict[str, float]:
    """A trial's measured error against eager fp32, as the file's ``error_*`` metrics (finite
    values only: the file holds numbers)."""
    if not isinstance(accuracy, dict):
        return {}
    found = {}
    for name in ("max_abs", "max_rel", "cosine", "accuracy", "loss_rel", "grad_cosine"):
        value = accuracy.get(name, accuracy.get(f"{name}_diff"))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if math.isfinite(value):
                found[f"error_{name}"] = float(value)
    return found


def why_none(records: list[TrialRecord]) -> str:
    kinds = Counter(r.failure_kind for r in records if r.baseline != "eager" and r.failure_kind)
    if not kinds:
        return "no compiled configuration was measured"
    listed = ", ".join(f"{n} {kind}" for kind, n in kinds.most_common())
    return f"no compiled configuration both ran and matched eager ({listed})"
