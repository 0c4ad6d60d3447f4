"""One trial's path, from the configuration it measures to its record: a result reused when the
study measured the same configuration (or generated code) before, screening for sampled trials,
the trial budget, the heartbeat while it runs, and Optuna told."""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import optuna

from autotune.errors import UsageError
from autotune.records import TrialRecord
from autotune.runtime.config import CompileConfig
from autotune.scope import ScopePlan
from autotune.search._combine import preset_of
from autotune.search._config_claim import ConfigClaims, heartbeat
from autotune.search._events import Events
from autotune.search._explore import ExploringSampler
from autotune.search._screen import known_code, reuse_timing, screen_seconds, stop_below
from autotune.search._session import Session
from autotune.settings import ADAPTIVE_FLOOR_S, StudySettings
from autotune.space import OutOfSpaceError, SearchSpace
from autotune.storage import (
    BASELINE_ATTR,
    BATCH_ATTR,
    COMBINATION_ATTR,
    KEY_ATTR,
    LEFT_ATTR,
    PRESET_ATTR,
    SCOPE_ATTR,
    START_FROM_ATTR,
    Ran,
    describe_inert,
    inert_in,
    retrying,
    sampled,
    to_record,
    trial_key,
)
from autotune.trials import TrialResult, TrialRunner, TrialSpec

BATCH_PARAM = "workload.batch_size"


class TrialPath:
    """Runs trials for one search: ``plan`` is the scope plan once settled, ``sampler`` this
    process's (told when a trial repeats a measured point), ``stopping`` set when the search
    stops; trials write their phase where ``events.phase_dir`` says."""

    def __init__(self, session: Session, events: Events, stopping: threading.Event) -> None:
        self.session = session
        self.events = events
        self.stopping = stopping
        self.plan: ScopePlan | None = None
        self.sampler: ExploringSampler | None = None
        self.told_inert: set[str] = set()  # the knobs this process said it leaves to torch
        # Trials in a row, in this process, that drew a configuration the study had measured.
        self.repeats = 0
        self.claims = ConfigClaims(session, events, stopping)

    def run(self, runner: TrialRunner, trial: optuna.Trial) -> None:
        """Measures ``trial`` with ``runner``, records it and tells Optuna (or fails it)."""
        s = self.session
        try:
            record = self._measure(trial, runner)
            if record is not None:
                s.db(lambda: s.records.add_trial(s.name, record))
        except BaseException:
            s.fail(trial)  # interrupted: nothing stays RUNNING
            raise
        finally:
            self.claims.release(trial)  # recorded (or not measured): a waiting trial goes on
        if record is None:
            s.fail(trial)
            return
        if not s.db(lambda: s.tell(trial, record)):
            # Failed as stale while this process was cut off from the database: the record
            # goes, so autotune's rows and Optuna's agree; the re-queued configuration runs.
            s.db(lambda: s.records.remove_trial(s.name, trial.number))
            self.events.on_note(
                f"trial {trial.number} was failed by another process while this one could not "
                "reach the database for longer than the grace period; its result is dropped "
                "and its configuration retried"
            )
            return
        self.repeats = self.repeats + 1 if record.duplicate_of is not None else 0
        if record.duplicate_of is not None and self.sampler is not None:
            self.sampler.explore_next()  # the sampler may be stuck on a measured point
        s.db(lambda: s.records.beat_worker(s.worker_id))
        self.events.on_record(record)
        if record.baseline == "eager" and record.failure_kind == "model_error":
            raise UsageError(
                f"The model file {s.local.model_path} does not run in eager mode on "
                f"{s.local.device}: {(record.error or '').rstrip('.')}. No trial was "
                "compiled; fix the model file and run the same command again."
            )

    def _measure(self, trial: optuna.Trial, runner: TrialRunner) -> TrialRecord | None:
        """The trial's record, or None when it must not count: the run was stopped, the
        timeout cut its compile budget short (a ``timeout`` then says nothing of the config), or
        the trial was queued (or stored) with a value the space does not offer."""
        s = self.session
        baseline = trial.user_attrs.get(BASELINE_ATTR)
        try:
            with s.timed("suggest"):  # the sampler reads the study: a restart is ridden out
                batch = retrying(lambda: batch_for(trial, s.settings), on_retry=s.note_unreachable)
                leave = retrying(lambda: self._inert(trial), on_retry=s.note_unreachable)
                config = retrying(
                    lambda: config_for(trial, baseline, s.space, self.plan, leave),
                    on_retry=s.note_unreachable,
                )
            key = trial_key(config, batch)
            s.db(lambda: trial.set_user_attr(KEY_ATTR, key))
        except optuna.exceptions.UpdateFinishedTrialError:
            # Cut off from the database past the grace period, this process's trial was failed
            # as stale by another one (and re-queued) before its configuration was drawn.
            self.events.on_note(
                f"trial {trial.number} was failed by another process while this one could not "
                "reach the database; it is left to the retry that process queued"
            )
            return None
        except OutOfSpaceError as exc:  # a queued or stored trial's value: that trial fails
            self.events.on_note(f"trial {trial.number} fails: {exc}")
            return None
        borrowed = trial.user_attrs.get(START_FROM_ATTR)
        self.events.on_phase("trial", f"#{trial.number} {_label(trial)}{_brief(config)}")
        reused = self.claims.reuse_or_claim(trial, key)
        if reused is not None:
            (result, duplicate_of), ran = reused, None
        else:
            allowed = trial_budget(self.session, baseline, batch)
            budget = s.request.deadline.budget(allowed)
            before = s.cache.keep_under(s.request.cache_limit_bytes, self.events.on_note)
            spec = self._spec(config, batch, budget, trial.number)
            if not (baseline or borrowed):  # drawn, a preset or a combination: screened
                spec = self._screened(spec, batch, sampled(trial))
            with heartbeat(s.study, trial), _phase_file(spec.progress_path):
                result = runner.run(spec)
            if result.equivalent_of is not None:
                timed = self._timing_of(result.equivalent_of, result, trial.number)
                if timed is None:
                    return None
                result = timed
            duplicate_of = None
            ran = Ran(batch, max(0, s.cache.size() - before), s.worker())
            cut = result.failure_kind == "timeout" and budget < allowed
            if self.stopping.is_set() or cut:
                return None
            result = within_budgets(result, s.settings)
        return to_record(
            trial.number, trial._trial_id, baseline, config, key, result, duplicate_of,
            default_speedup(self.session, batch), ran,
        )  # fmt: skip

    def _inert(self, trial: optuna.Trial) -> list[str]:
        """The knobs a sampled trial leaves to torch: those two earlier trials showed to change
        nothing on this model (:mod:`autotune.storage._inert`); recorded on the trial."""
        if not sampled(trial):
            return []
        s = self.session
        inert = inert_in(s.study.get_trials(deepcopy=False), s.records.trials(s.name))
        new = {k: v for k, v in inert.items() if k not in self.told_inert}
        if new:
            self.told_inert |= set(new)
            self.events.on_note(
                f"no effect on this model, left to torch from now on: {describe_inert(new)}"
            )
        if inert:
            trial.set_user_attr(LEFT_ATTR, sorted(inert))
        return sorted(inert)

    def _screened(self, spec: TrialSpec, batch: int | None, drawn: bool) -> TrialSpec:
        """A trial skips timing code the study already timed (a preset that generates default
        compile's code, say); one the sampler ``drawn`` also times a short first stage and
        goes on only within reach of the best so far, and stops timing early when clearly
        slower than it (see autotune.search._screen)."""
        s = self.session
        records = s.db(s.records.trials, s.name)
        prune = s.settings.prune and drawn
        below = stop_below(records, s.settings.objective, batch) if prune else None
        screen = screen_seconds(spec.measure) if below is not None else None
        return dataclasses.replace(
            spec,
            known_code=known_code(records, batch),
            measure=dataclasses.replace(spec.measure, stop_below=below, screen_seconds=screen),
        )

    def _timing_of(self, number: int, result: TrialResult, trial: int) -> TrialResult | None:
        """The steady state of trial ``number``, which ran the same code as ``result``; None
        when that record is gone (its result was dropped since): this trial does not count."""
        timed = self.session.db(self.session.records.trial, self.session.name, number)
        if timed is None:
            self.events.on_note(
                f"trial {trial} generated the same code as trial {number}, whose record is "
                f"gone since; trial {trial} does not count"
            )
            return None
        return reuse_timing(result, timed)  # its trial line says so

    def _spec(
        self, config: CompileConfig | None, batch: int | None, budget: float, number: int
    ) -> TrialSpec:
        spec = TrialSpec.from_settings(
            self.session.local,
            config.to_dict() if config is not None else None,
            cache_dir=self.session.cache_dir,
            relaxed_numerics=config is not None and self.session.space.relaxes_numerics(config),
            batch_size=batch,
            time_limit_s=budget,
        )
        spec = dataclasses.replace(spec, allow_unsafe_knobs=list(self.session.space.unsafe_knobs))
        if self.events.phase_dir is None:
            return spec
        path = os.path.join(self.events.phase_dir, f"trial-{number}.phase")
        return dataclasses.replace(spec, progress_path=path)


def _label(trial: optuna.Trial) -> str:
    """``[default] ``, ``[preset NAME] ``, ``[combination A & B] ``, ``[from STUDY#N] `` or
    nothing (drawn by the sampler): what a trial line says the trial is."""
    attrs = trial.user_attrs
    if attrs.get(BASELINE_ATTR):
        return f"[{attrs[BASELINE_ATTR]}] "
    if attrs.get(PRESET_ATTR):
        return f"[preset {attrs[PRESET_ATTR]}] "
    if attrs.get(COMBINATION_ATTR):
        return f"[combination {' & '.join(attrs[COMBINATION_ATTR])}] "
    return f"[from {attrs[START_FROM_ATTR]}] " if attrs.get(START_FROM_ATTR) else ""


def batch_for(trial: optuna.Trial, settings: StudySettings) -> int | None:
    """The batch size a trial measures: its baseline's, or one the sampler draws."""
    if trial.user_attrs.get(BASELINE_ATTR) is not None:
        return trial.user_attrs.get(BATCH_ATTR)
    if settings.batch_sizes:
        return int(trial.suggest_categorical(BATCH_PARAM, settings.batch_sizes))
    return None


def config_for(
    trial: optuna.Trial,
    baseline: str | None,
    space: SearchSpace,
    plan: ScopePlan | None,
    leave: list[str] | None = None,
) -> CompileConfig | None:
    """What a trial compiles: a baseline, a preset, or a config (and scope) the sampler draws,
    the knobs in ``leave`` left to torch."""
    if baseline == "eager":
        return None
    if baseline == "default":
        return CompileConfig()
    preset = preset_of(space, trial.user_attrs)
    if preset is not None:
        return space.preset_config(preset)
    if plan is None:
        return space.suggest(trial, leave or ())
    named = plan.suggest_named(trial)
    trial.set_user_attr(SCOPE_ATTR, named.name)
    config = space.suggest(trial, leave or ())
    # A scope with a part kept eager inside a compiled region cannot be one graph.
    fullgraph = config.fullgraph and named.fullgraph
    shapes = config.shapes
    if named.scope.compile != ("",) and "eager_above" in shapes:  # needs the whole model eager
        shapes = {k: v for k, v in shapes.items() if k != "eager_above"}
        shapes = {} if shapes.get("plan") == "auto" else shapes
    return dataclasses.replace(config, scope=named.scope, fullgraph=fullgraph, shapes=shapes)


def within_budgets(result: TrialResult, settings: StudySettings) -> TrialResult:
    """A trial that ran and matched eager, but broke --memory-budget, --max-latency-ms or
    --max-startup-s, is infeasible."""
    if not result.ok:
        return result
    memory, peak = settings.memory_budget_bytes, result.peak_memory_bytes
    if memory is not None and peak is not None and peak > memory:
        why = (
            f"peak memory {peak / 2**20:.0f} MiB exceeds --memory-budget {memory / 2**20:.0f} MiB"
        )
        return dataclasses.replace(
            result, status="failed", failure_kind="memory_budget", error=why
        )
    cap, latency = settings.max_latency_s, result.latency_median_s
    if cap is not None and latency is not None and latency > cap:
        why = f"latency {latency * 1e3:.3g} ms exceeds --max-latency-ms {cap * 1e3:g}"
        return dataclasses.replace(
            result, status="failed", failure_kind="latency_budget", error=why
        )
    startup = (result.traffic or {}).get("startup_s", result.compile_time_s)
    cap_s = settings.max_startup_s
    if cap_s is not None and startup is not None and startup > cap_s:
        why = (
            f"start-up {startup:.1f} s (compiling every shape it serves) exceeds "
            f"--max-startup-s {cap_s:g}"
        )
        return dataclasses.replace(
            result, status="failed", failure_kind="startup_budget", error=why
        )
    return result


def trial_budget(session: Session, baseline: str | None, batch: int | None) -> float:
    """The baselines get the whole compile budget; a search trial the adaptive one, once
    default torch.compile's compile time is known (see StudySettings.trial_time_limit_s)."""
    if baseline is not None:
        return session.settings.compile_budget
    default = next(
        (r for r in session.db(session.records.baselines, session.name)
         if r.baseline == "default" and r.status == "ok" and r.batch_size == batch),
        None,
    )  # fmt: skip
    if default is None:
        return session.settings.compile_budget
    budget = session.settings.trial_time_limit_s(default.compile_time_s, default.wall_time_s)
    factor = session.settings.compile_budget_factor
    if budget < session.settings.compile_budget:
        session.events.note_once(
            f"compile budget: {budget:.0f} s per trial, {factor:g}x "
            f"default torch.compile's {default.compile_time_s:.1f} s compile plus its run "
            f"(--compile-budget-factor; at least {ADAPTIVE_FLOOR_S:.0f} s, at most "
            f"--compile-budget {session.settings.compile_budget:.0f} s)"
        )
    return budget


def default_speedup(session: Session, batch: int | None) -> float | None:
    """Default torch.compile's speedup over eager at this batch size, once measured."""
    for record in session.db(session.records.baselines, session.name):
        if record.baseline == "default" and record.status == "ok":
            if record.batch_size == batch:
                return record.speedup_vs_eager
    return None


def _brief(config: CompileConfig | None) -> str:
    return config.brief() if config is not None else "eager (no compile)"


@contextmanager
def _phase_file(path: str | None) -> Iterator[None]:
    """Removes a trial's phase file once the trial ended: a display shows running trials."""
    try:
        yield
    finally:
        if path is not None:
            with suppress(OSError):
                os.remove(path)
