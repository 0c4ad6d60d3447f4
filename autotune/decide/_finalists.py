"""Finalists: the top configurations re-measured in fresh processes, cold and warm.

Search trials share the study's kernel cache, which makes a search affordable and their
compile times optimistic. Before the file is written, the best few candidates and default
``torch.compile`` run again, each twice in a fresh process with a private cache of its own:

- **cold**: the cache empty — what a new production machine pays;
- **warm**: the cache holding this config's own artifacts — what a restarted process pays.

Both runs time the steady state again, paired with eager as always. A finalist's record is its
search record with these measurements in place of the search's: the two processes pooled (the
median of their speedups, the widest quartiles), because a config's speedup drifts between
timing windows more than one window's quartiles show, and the claim written to the file must
allow for that.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Collection
from dataclasses import dataclass

from autotune._deadline import Deadline
from autotune._scratch import scratch_dir
from autotune.records import TrialRecord
from autotune.scoring import Objective
from autotune.settings import StudySettings
from autotune.storage import candidates, pooled_measurements
from autotune.trials import (
    Spread,
    SubprocessRunner,
    TrialResult,
    TrialRunner,
    TrialSpec,
)

_PREFIX = "finalist-"
_NO_INTERVAL = {"speedup_vs_eager_ci_low": None, "speedup_vs_eager_ci_high": None}


@dataclass
class Finalist:
    """A candidate re-measured cold and warm."""

    searched: TrialRecord
    cold: TrialResult
    warm: TrialResult

    @property
    def ok(self) -> bool:
        return self.cold.ok and self.warm.ok

    @property
    def cold_only(self) -> bool:
        """Its warm run was not run (the cold pass left it clearly behind): the cold run
        stands for both, recorded twice."""
        return self.ok and self.warm == self.cold

    @property
    def runs(self) -> list[TrialResult]:
        """Its processes: cold and warm, or the cold one alone when it stands for both."""
        return [self.cold] if self.cold_only else [self.cold, self.warm]

    def speedup(self) -> Spread | None:
        """Its speedup over eager, its processes pooled (None: it failed)."""
        return Spread.pooled(self.runs)

    def record(self, charge_warm_compile: bool = False) -> TrialRecord:
        """The search record with the fresh measurements (compile: cold, or warm)."""
        compile_s = (self.warm if charge_warm_compile else self.cold).compile_time_s
        pooled = self.speedup()
        interval = {k: v for k, v in (pooled.figures() if pooled else {}).items()
                    if k.endswith(("_ci_low", "_ci_high"))}  # fmt: skip
        return dataclasses.replace(
            self.searched,
            compile_time_s=compile_s,
            # the interval the file carries is the round's, not the search trial's
            result={**self.searched.result, **_NO_INTERVAL, **interval},
            **pooled_measurements(self.runs),
        )


def finalist_records(
    finalists: list[Finalist], charge_warm_compile: bool = False
) -> list[TrialRecord]:
    """The measured finalists' records, their speedup over default torch.compile taken from
    the default's own fresh measurements (through eager, as in the search)."""
    done = [f.record(charge_warm_compile) for f in finalists if f.ok]
    default = next((r for r in done if r.baseline == "default"), None)
    if default is None or not default.speedup_vs_eager:
        return [dataclasses.replace(r, speedup_vs_default=None) for r in done]
    base = default.speedup_vs_eager
    return [
        dataclasses.replace(r, speedup_vs_default=(r.speedup_vs_eager or 0.0) / base) for r in done
    ]


def pick_finalists(
    records: list[TrialRecord], objective: Objective, top: int, best_exact: bool = False
) -> list[TrialRecord]:
    """The ``top`` candidates by the objective, plus default torch.compile when it ran (the
    best-scoring one, when a throughput study measured it at several batch sizes).

    ``best_exact`` (a study under an accuracy contract): the best candidate that changes no
    numerics joins them, so that the round shows what the contract buys beside it."""
    ranked = sorted(
        (r for r in candidates(records) if r.baseline is None),
        key=lambda r: objective.score(r) or 0.0,
        reverse=True,
    )
    pool = ranked[:top]
    exact = next((r for r in ranked if not r.relaxed_numerics), None)
    if best_exact and exact is not None and exact not in pool:
        pool.append(exact)
    default = best_default(records, objective)
    return pool + ([default] if default is not None else []) if pool else []


def best_default(records: list[TrialRecord], objective: Objective) -> TrialRecord | None:
    """The study's measured default torch.compile baseline that scores best."""
    defaults = [r for r in records if r.baseline == "default" and r.status == "ok"]
    return max(defaults, key=lambda r: objective.score(r) or 0.0, default=None)


OnResult = Callable[[TrialRecord, str, TrialResult], None]


def remeasure(
    finalists: list[TrialRecord],
    settings: StudySettings,
    on_note: Callable[[str], None] = lambda note: None,
    runner: TrialRunner | None = None,
    on_result: OnResult = lambda record, run, result: None,
    deadline: Deadline = Deadline(),  # noqa: B008 - frozen
    allow_unsafe_knobs: Collection[str] = (),
) -> list[Finalist]:
    """Runs every finalist cold, then every one warm in reverse order, each in a fresh process
    with a private cache; ``on_result`` hears of each run as it ends (to record it). A
    finalist's config comes from the study's records: the knobs refused from data that it may
    set are those ``allow_unsafe_knobs`` (this process's operator) names, never the records'.

    The two passes make an ABBA order over processes: a config's speedup drifts with the
    machine's state over the minutes this takes (see benchmarks/results/process_variance_cpu.md),
    and measuring one finalist's two processes back to back would hand that drift to whichever
    finalist ran during a good minute. In this order every finalist's pooled pair spans the same
    stretch of time, the default compile's included.

    Raises:
        DeadlineReached: The deadline passed before every finalist ran both times (a run the
            deadline cut short measures nothing of its config).
    """
    job = runner or SubprocessRunner()
    on_note(
        f"re-measuring {len(finalists)} finalists in fresh processes ({_who_all(finalists)}): "
        "each cold, then each warm in reverse order"
    )
    measure = settings.measure.precise(settings.finalist_precision)

    def run(r: TrialRecord, spec: TrialSpec, which: str) -> TrialResult:
        deadline.check(f"before the {which} run of finalist {_who(r)}")
        budget = deadline.budget(spec.time_limit_s)
        result = job.run(dataclasses.replace(spec, time_limit_s=budget))
        if result.failure_kind == "timeout" and budget < spec.time_limit_s:
            deadline.check(f"during the {which} run of finalist {_who(r)}")
        on_result(r, which, result)
        on_note(_progress(r, which, result))
        return result

    with contextlib.ExitStack() as caches:
        specs = [
            TrialSpec.from_settings(
                settings,
                r.config,
                cache_dir=str(caches.enter_context(scratch_dir(_PREFIX))),
                # the gate the search held this config to: a config found under
                # --allow-numerics-changes is not failed now for the drift it was allowed
                relaxed_numerics=r.relaxed_numerics,
                batch_size=r.batch_size,
                measure=measure,
            )
            for r in finalists
        ]
        allowed = list(allow_unsafe_knobs)
        specs = [dataclasses.replace(s, allow_unsafe_knobs=allowed) for s in specs]
        cold = [run(r, spec, "cold") for r, spec in zip(finalists, specs, strict=True)]
        behind = settled(finalists, cold, settings)
        warm: dict[int, TrialResult] = {}
        for i in reversed(range(len(finalists))):
            # A finalist that failed cold is not run again: its failure stands for both; nor
            # is one the cold pass left clearly behind: its cold run stands for both.
            if cold[i].ok and i not in behind:
                warm[i] = run(finalists[i], specs[i], "warm")
            else:
                warm[i] = cold[i]
                on_result(finalists[i], "warm", cold[i])
                if i in behind:
                    on_note(f"  warm {_who(finalists[i])}: not run: {behind[i]}")
    done = [Finalist(r, cold[i], warm[i]) for i, r in enumerate(finalists)]
    for f in done:
        on_note(_line(f))
    return done


# A finalist is left behind by the cold pass only when its cold run is this much slower than the
# leader's besides their quartiles not overlapping: a config's speedup drifts between processes
# by more than one process's quartiles show (the convnet's second process over its first:
# quartiles 0.937 to 1.050, benchmarks/results/search_quality_cpu.md).
SETTLED_MARGIN = 1.10


def settled(
    finalists: list[TrialRecord], cold: list[TrialResult], settings: StudySettings
) -> dict[int, str]:
    """The finalists the cold pass leaves clearly behind its leader, by index, with why: their
    warm run could not make them win, so it is not run (the round costs a process less for
    each). Only under the latency objective, where the winner is the fastest steady state
    (the amortized objective charges compile times, and a --pareto front keeps slower
    configs); never the leader, nor default torch.compile (every finalist's speedup over the
    default is read from its pooled runs)."""
    if settings.objective != "latency" or settings.pareto:
        return {}
    ran = [(i, c) for i, c in enumerate(cold) if c.ok and c.speedup_vs_eager]
    if len(ran) < 2:
        return {}
    lead, best = max(ran, key=lambda ic: ic[1].speedup_vs_eager or 0.0)
    reach = best.speedup_vs_eager_q1 or best.speedup_vs_eager or 0.0
    behind = {}
    for i, c in ran:
        speedup, top = c.speedup_vs_eager or 0.0, c.speedup_vs_eager_q3 or 0.0
        if i == lead or finalists[i].baseline == "default":
            continue
        if _clearly_behind(c, best):
            behind[i] = (
                f"its cold run ({speedup:.2f}x eager, q3 {top:.2f}x) is clearly behind "
                f"{_who(finalists[lead])}'s ({best.speedup_vs_eager:.2f}x, q1 {reach:.2f}x)"
            )
    return behind


def _clearly_behind(run: TrialResult, ahead: TrialResult) -> bool:
    """``run`` is clearly slower than ``ahead``: its upper quartile below the other's lower
    one, and its median :data:`SETTLED_MARGIN` below."""
    reach = ahead.speedup_vs_eager_q1 or ahead.speedup_vs_eager or 0.0
    return (run.speedup_vs_eager_q3 or 0.0) < reach and (
        run.speedup_vs_eager or 0.0
    ) * SETTLED_MARGIN < (ahead.speedup_vs_eager or 0.0)


def left_behind(finalists: list[Finalist], by: TrialRecord) -> set[int]:
    """The trial numbers of the finalists whose warm run was not run because the cold pass left
    them clearly behind, and that ``by``'s own cold run leaves clearly behind: the round has
    judged them slower than ``by``, so no rule of the decision hands them the win over it (a
    preset's single process narrows its quartiles, while ``by``'s pool widens with its warm
    run)."""
    mine = next(
        (f for f in finalists if f.ok and f.searched.trial_number == by.trial_number), None
    )
    if mine is None:
        return set()
    return {
        f.searched.trial_number
        for f in finalists
        if f.cold_only and f is not mine and _clearly_behind(f.cold, mine.cold)
    }


def _who_all(finalists: list[TrialRecord]) -> str:
    """``"3 configs and default torch.compile"``: what a round re-measures."""
    configs = sum(1 for r in finalists if r.baseline is None)
    default = any(r.baseline == "default" for r in finalists)
    what = f"{configs} config{'s' if configs != 1 else ''}" if configs else ""
    return " and ".join(p for p in (what, "default torch.compile" if default else "") if p)


def _who(r: TrialRecord) -> str:
    return f"[{r.baseline}]" if r.baseline else f"#{r.trial_number}"


def _progress(r: TrialRecord, run: str, result: TrialResult) -> str:
    if not result.ok:
        return f"  {run} {_who(r)}: {result.failure_kind}: {_first_line(result.error)}"
    known = f" ({result.precision_note()})" if result.precision_note() else ""
    return (
        f"  {run} {_who(r)}: compile {result.compile_time_s:.1f}s, "
        f"{result.speedup_vs_eager:.2f}x eager{known}"
    )


def _first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0][:200] if lines else "no error recorded"


def _line(f: Finalist) -> str:
    who = _who(f.searched)
    if not f.ok:
        bad = f.cold if not f.cold.ok else f.warm
        return f"finalist {who}: {bad.failure_kind}: {bad.error}"
    pooled = f.record()
    warm = (
        "not run warm (clearly behind)" if f.cold_only else
        f"warm compile {f.warm.compile_time_s:.1f}s ({f.warm.speedup_vs_eager:.2f}x)"
    )  # fmt: skip
    return (
        f"finalist {who}: cold compile {f.cold.compile_time_s:.1f}s "
        f"({f.cold.speedup_vs_eager:.2f}x eager), {warm}: {pooled.speedup_vs_eager:.2f}x eager "
        f"({pooled.speedup_vs_eager_q1:.2f}-{pooled.speedup_vs_eager_q3:.2f})"
    )


def imprecise_round(finalists: list[Finalist], target: float | None) -> str:
    """``"; the finalists' medians were known to +-5.7% to +-25.4% ..."``, for a round whose
    timing stopped (at its time cap) before a finalist's median speedup was known to
    ``target``; ``""`` for a round that reached it, or none."""
    reached = [
        p for f in finalists if f.ok for p in (f.cold.speedup_precision, f.warm.speedup_precision)
        if p is not None
    ]  # fmt: skip
    if not target or not reached or max(reached) <= target:
        return ""
    return (
        f"; mind the noise: the finalists' medians were known to ±{min(reached):.1%} to "
        f"±{max(reached):.1%}, short of the ±{target:.1%} asked for (--precision), so the "
        "machine was busy or the model's latency varies; re-measure them on a quiet machine "
        "(autotune finalize --remeasure) before relying on this choice"
    )
