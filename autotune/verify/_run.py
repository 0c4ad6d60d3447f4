"""``autotune verify``: re-measure a best-config file on this machine and check its claims.

Every measurement is a trial of its own (the search's protocol: correctness gate against eager,
interleaved timing against eager) in a fresh process with a private, empty kernel cache, so its
compile time is the cold one a new machine pays. The verdict rules are in :func:`judge`
(``_rules``) and docs/verify.md.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import replace
from pathlib import Path
from typing import Any

from autotune._scratch import scratch_dir
from autotune.errors import UsageError
from autotune.runtime.config import BestConfig, CompileConfig
from autotune.trials import DEFAULT_PRECISION, MeasureSettings, TrialResult, TrialRunner, TrialSpec
from autotune.verify._figures import Repeat
from autotune.verify._rules import DEFAULT_REPEATS, DEFAULT_TOLERANCE
from autotune.verify._verdict import VerifyReport, build_report

OnTrial = Callable[[int, str, TrialResult], None]


def verify(
    best: BestConfig,
    model_path: str,
    *,
    runner: TrialRunner,
    device: str | None = None,
    repeats: int = DEFAULT_REPEATS,
    compile_budget: float = 600.0,
    measure_seconds: float = 2.0,
    precision: float | None = DEFAULT_PRECISION,
    seed: int = 0,
    tolerance: float = DEFAULT_TOLERANCE,
    default: CompileConfig | None = CompileConfig(),  # noqa: B008 - frozen, never mutated
    on_trial: OnTrial | None = None,
    allow_unsafe_knobs: Collection[str] = (),
) -> VerifyReport:
    """Re-measures ``best`` on this machine and judges its claims.

    Args:
        best: The best-config file.
        model_path: The model file it was tuned for.
        runner: Runs each measurement (a ``SubprocessRunner``: a fresh process each).
        device: Default: the file's workload device.
        repeats: Each measurement runs this many times; the repeats are pooled.
        compile_budget: Compile budget of each trial.
        measure_seconds: Interleaved timing per trial.
        precision: Time on until each median speedup is known within +-this (95%
            confidence), for at most 5 times ``measure_seconds``; None: stop at
            ``measure_seconds``.
        seed: Seeds weights and inputs, as ``autotune search --seed`` did.
        tolerance: Least relative drop of a speedup that can fail a claim.
        default: The default-compile reference; ``None`` skips it (then nothing is checked
            against it, and a ``do_not_compile`` file cannot be verified).
        on_trial: Called with (repeat, measurement, result) after each trial.
        allow_unsafe_knobs: The knobs refused from data (``inductor.cpp.cxx``, ...) that the
            file's config may set: the caller vouches for them (see :func:`autotune.apply`).

    Raises:
        UsageError: Eager itself fails on this machine, nothing is left to verify, or the
            config sets knobs refused from data that ``allow_unsafe_knobs`` does not name.
    """
    _refuse_unsafe(best, allow_unsafe_knobs)
    device = device or str(best.workload.get("device") or "cpu")
    plan = plan_measurements(best, default)
    base = TrialSpec(
        model_path=str(Path(model_path).resolve()),
        device=device,
        config=None,
        workload=str(best.workload.get("kind") or "infer"),
        seed=seed,
        time_limit_s=compile_budget,
        measure=MeasureSettings(target_seconds=measure_seconds).precise(precision),
        allow_unsafe_knobs=list(allow_unsafe_knobs),
        accuracy=_contract(best),
        traffic=_traffic(best),
    )
    measured = _measure(runner, base, plan, repeats, on_trial, _relaxed(best))
    return build_report(best, device, measured, tolerance)


def plan_measurements(
    best: BestConfig, default: CompileConfig | None
) -> list[tuple[str, CompileConfig | None]]:
    """What each repeat measures, in order: (``eager`` | ``default`` | ``config``, config).

    Raises:
        UsageError: A do_not_compile file without the default compile has nothing to verify.
    """
    plan: list[tuple[str, CompileConfig | None]] = [("eager", None)]
    if default is not None:
        plan.append(("default", default))
    if best.config is not None:
        plan.append(("config", best.config))
    elif default is None:
        raise UsageError(
            "A do_not_compile file claims that default torch.compile is not reliably faster "
            "than eager, so verifying it needs the default compile: drop --skip-default."
        )
    return plan


def _measure(
    runner: TrialRunner,
    base: TrialSpec,
    plan: list[tuple[str, CompileConfig | None]],
    repeats: int,
    on_trial: OnTrial | None,
    relaxed: bool,
) -> list[Repeat]:
    """Runs the plan ``repeats`` times, every other one backwards; a failed config trial ends
    the measuring after its repeat. ``relaxed``: the config is held to the looser gate its
    search held it to."""
    done: list[Repeat] = []
    for repeat in range(1, repeats + 1):
        done.append({})
        # Every other repeat runs the plan backwards (ABBA): the pooled figures of the config
        # and of the default compile then span the same minutes of the machine's drift.
        for name, config in plan if repeat % 2 else plan[::-1]:
            loose = relaxed and name == "config"
            result = done[-1][name] = _run_cold(runner, base, config, loose)
            if on_trial is not None:
                on_trial(repeat, name, result)
            if name == "eager" and not result.ok:
                raise UsageError(
                    f"The model file {base.model_path} does not run in eager mode on "
                    f"{base.device} ({result.failure_kind}: {result.error}). Nothing can be "
                    "verified without the eager baseline; fix the model file or the options."
                )
        config_run = done[-1].get("config")
        if config_run is not None and not config_run.ok:
            return done  # the repeat is whole (its eager run read the noise), the rest moot
    return done


def _run_cold(
    runner: TrialRunner, base: TrialSpec, config: CompileConfig | None, relaxed: bool
) -> TrialResult:
    """One trial in a private, empty kernel cache: its compile time is the cold one."""
    with scratch_dir("verify-") as cache:
        spec = replace(
            base,
            config=config.to_dict() if config is not None else None,
            cache_dir=str(cache),
            relaxed_numerics=relaxed,
        )
        return runner.run(spec)


def _refuse_unsafe(best: BestConfig, allowed: Collection[str]) -> None:
    from autotune.runtime import safety as _safety

    if best.config is None:
        return
    # Another backend's options are checked against its own closed list (check_config).
    lines = _safety.config_problems(best.config, allowed)
    if lines:
        what = f"The file's config {best.config_hash}"
        raise UsageError(_safety.explain(lines, what, "pass --allow-unsafe-knob KNOB for each"))


def _traffic(best: BestConfig) -> list[dict[str, Any]] | None:
    """The recorded traffic the search measured the config on, which verify measures it on
    again (a model file's get_traffic says its own)."""
    from autotune.workload import shapes_problem

    traffic = best.workload.get("traffic")
    if traffic is None:
        return None
    problem = shapes_problem(traffic)
    if problem is not None:
        raise UsageError(
            f"The file's workload.traffic {problem}; the file was edited by hand or written "
            "by another tool. Re-run the search to write it again."
        )
    return list(traffic)


def _contract(best: BestConfig) -> str | None:
    """The accuracy contract the search held the config to, which verify holds it to again."""
    from autotune.settings import rules

    stated = best.workload.get("accuracy")
    if stated is None:
        return None
    try:
        return rules.accuracy(str(stated))
    except rules.RuleError as exc:
        raise UsageError(
            f"The file's workload.accuracy {stated!r} {exc}; the file was edited by hand or "
            "written by another tool. Re-run the search to write it again."
        ) from None


def _relaxed(best: BestConfig) -> bool:
    """Whether the search held the config to the looser gate of --allow-numerics-changes (the
    file says so; files written before it did are judged by the knobs known to relax)."""
    if "relaxed_numerics" in best.workload:
        return bool(best.workload["relaxed_numerics"])
    if best.config is None:
        return False
    if best.config.changes_precision:
        return True
    from autotune.space import sets_numerics_knob

    return sets_numerics_knob(best.config)
