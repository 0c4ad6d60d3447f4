"""The confirmation round: the chosen config measured apart from the choice, and what the file
may claim from it.

The finalist round chooses: among several candidates measured with noise, the one that
measured best is, on average, one that measured luckily (the winner's curse), and the more
candidates, the luckier. A claim taken from the rounds that made the choice is therefore biased
upwards. The confirmation round takes no part in the choice: once it is made, the chosen config
and default torch.compile run again, each in ``settings.confirm`` fresh processes in ABBA order
(chosen, default, default, chosen), timed against eager in every round until the median is
known to the study's precision or its time cap, and the file claims what these runs measured.

Three outcomes (:func:`settle`), in this order:

1. **compile, confirmed**: the chosen config's leads are resolved by the intervals: first its
   lead over eager (the lower end of its 95% interval above 1.0), then, for a tuned config, its
   lead over default compile (the lower end of the lead's interval above 1.0).
2. **inconclusive**: the lead is not resolved. The file ships the cheaper side (default
   compile over a tuned config, while its own lead over eager is resolved; eager otherwise),
   names the configs that tie, and says what would settle it.
3. **do not compile** decisions are left as they are: eager is already the cheaper side.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import statistics
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from autotune._deadline import Deadline
from autotune._scratch import scratch_dir
from autotune.decide._finalists import Finalist
from autotune.records import FinalistRound, TrialRecord
from autotune.runtime.config import BestConfig, CompileConfig
from autotune.scoring import break_even_calls
from autotune.settings import StudySettings
from autotune.settings.rules import MAX_CONFIRM
from autotune.trials import Spread, SubprocessRunner, TrialResult, TrialRunner, TrialSpec

RUNS = tuple(f"confirm{n}" for n in range(1, MAX_CONFIRM + 1))
_PREFIX = "confirm-"
# What settles an inconclusive outcome, said in the file's reason.
_SETTLE = (
    "to settle it, re-measure on a quiet machine (`autotune finalize --remeasure`, nothing "
    "else running), or give the timing more time (--precision, --measure-seconds)"
)

OnResult = Callable[[TrialRecord, str, TrialResult], None]


@dataclass(frozen=True)
class Confirmation:
    """The runs of the confirmation round: ``chosen``'s and ``default``'s (None when default
    compile is what was chosen, or did not reach the finalists), by record, in run order."""

    chosen: TrialRecord
    default: TrialRecord | None
    runs: dict[int, list[TrialResult]]

    def of(self, record: TrialRecord) -> list[TrialResult]:
        return self.runs.get(record.trial_number, [])

    def processes(self) -> str:
        """``2 fresh processes each, ABBA`` (``2 fresh processes`` for one config)."""
        return _processes(len(self.of(self.chosen)), self.default is not None)


def _processes(n: int, two: bool) -> str:
    return f"{n} fresh processes each, ABBA" if two else f"{n} fresh process{'es' * (n > 1)}"


def applies(settings: StudySettings) -> bool:
    """Whether a study's decisions are confirmed: ``--confirm`` above 0, under the latency
    objective (a --pareto front, throughput at a batch size and the amortized payback are
    claimed from the finalist round, as before)."""
    return settings.confirm > 0 and settings.objective == "latency" and not settings.pareto


def subjects(
    best: BestConfig, finalists: Sequence[Finalist]
) -> tuple[TrialRecord, TrialRecord | None] | None:
    """The records a confirmation round measures for ``best`` (a compile decision made on
    ``finalists``): the chosen one and default compile, or None when there is nothing to
    confirm (no compile decision, or its config is not a finalist)."""
    if best.decision != "compile":
        return None
    number = best.source.get("trial")
    chosen = next((f.searched for f in finalists if f.searched.trial_number == number), None)
    if chosen is None:
        return None
    default = next((f.searched for f in finalists if f.searched.baseline == "default"), None)
    return chosen, (default if default is not chosen else None)


def confirm(
    chosen: TrialRecord,
    default: TrialRecord | None,
    settings: StudySettings,
    *,
    runner: TrialRunner | None = None,
    on_result: OnResult = lambda record, run, result: None,
    on_note: Callable[[str], None] = lambda note: None,
    deadline: Deadline = Deadline(),  # noqa: B008 - frozen
    allow_unsafe_knobs: Collection[str] = (),
) -> Confirmation:
    """Measures ``chosen`` and ``default`` in ``settings.confirm`` processes each, ABBA (each
    config's processes share a private kernel cache: the claim is the steady state, and only
    the first compiles cold); ``on_result`` hears of each run as it ends (to record it).

    Raises:
        DeadlineReached: The deadline passed before every run ran.
    """
    job = runner or SubprocessRunner()
    measure = settings.measure.precise(settings.finalist_precision)
    names = RUNS[: settings.confirm]
    subjects_ = [chosen] + ([default] if default is not None else [])
    runs: dict[int, list[TrialResult]] = {r.trial_number: [] for r in subjects_}
    on_note(
        f"confirming the choice apart from it: {_who(chosen)}"
        + (f" and {_who(default)}" if default is not None else "")
        + f" in {_processes(len(names), default is not None)}"
    )
    with contextlib.ExitStack() as caches:
        specs = {
            r.trial_number: dataclasses.replace(
                TrialSpec.from_settings(
                    settings,
                    r.config, cache_dir=str(caches.enter_context(scratch_dir(_PREFIX))),
                    relaxed_numerics=r.relaxed_numerics, batch_size=r.batch_size,
                    measure=measure,
                ),
                allow_unsafe_knobs=list(allow_unsafe_knobs),
            )
            for r in subjects_
        }  # fmt: skip
        for i, name in enumerate(names):
            for r in subjects_ if i % 2 == 0 else subjects_[::-1]:
                deadline.check(f"before the {name} run of {_who(r)}")
                spec = specs[r.trial_number]
                result = job.run(
                    dataclasses.replace(spec, time_limit_s=deadline.budget(spec.time_limit_s))
                )
                if result.failure_kind == "timeout":
                    deadline.check(f"during the {name} run of {_who(r)}")
                runs[r.trial_number].append(result)
                on_result(r, name, result)
                on_note(f"  {name} {_who(r)}: {_figure(result)}")
    return Confirmation(chosen, default, runs)


def confirm_choice(
    choice: BestConfig,
    done: list[Finalist],
    settings: StudySettings,
    runner: TrialRunner | None,
    record: OnResult,
    deadline: Deadline,
    on_note: Callable[[str], None],
    allow_unsafe_knobs: Collection[str],
    estimate_factor: float,
) -> Confirmation | None:
    """The confirmation round of ``choice``, the decision the finalists ``done`` made, when
    the study's decisions are confirmed and the deadline leaves the time it needs (each run
    about ``estimate_factor`` times its search trial's wall time); None otherwise."""
    found = subjects(choice, done) if applies(settings) else None
    if found is None:
        return None
    chosen, default = found
    walls = [r.wall_time_s or settings.compile_budget for r in (chosen, default) if r]
    need = estimate_factor * settings.confirm * sum(walls)
    if deadline.left() < need:
        on_note(
            f"confirmation skipped: the timeout leaves {deadline.left():.0f} s and it needs "
            f"about {need:.0f} s; the file claims the finalist round that chose it"
        )
        return None
    return confirm(chosen, default, settings, runner=runner, on_result=record, on_note=on_note,
                   deadline=deadline, allow_unsafe_knobs=allow_unsafe_knobs)  # fmt: skip


def recorded_confirmation(
    found: FinalistRound, finalists: list[Finalist], choice: BestConfig, settings: StudySettings
) -> Confirmation | None:
    """The confirmation runs a recorded round holds for ``choice`` (the decision its
    ``finalists`` make), or None when it holds none, or only part of one (a round the timeout
    cut short: its configs ran unequal numbers of times, and its choice stands unconfirmed)."""
    subjects_ = subjects(choice, finalists) if applies(settings) else None
    if subjects_ is None:
        return None
    chosen, default = subjects_
    runs = {
        r.trial_number: [
            TrialResult.from_dict(found.results[k])
            for k in ((r.trial_number, n) for n in RUNS) if k in found.results
        ]
        for r in ([chosen] + ([default] if default is not None else []))
    }  # fmt: skip
    whole = runs[chosen.trial_number] and len({len(ran) for ran in runs.values()}) == 1
    return Confirmation(chosen, default, runs) if whole else None


def settle(best: BestConfig, confirmation: Confirmation) -> BestConfig:
    """The file ``best`` becomes once confirmed: its claim the confirmation round's figures,
    its decision compile (confirmed) or inconclusive (see the module's rules)."""
    chosen, default = confirmation.chosen, confirmation.default
    mine = Spread.pooled(confirmation.of(chosen))
    theirs = Spread.pooled(confirmation.of(default)) if default is not None else None
    failed = next((r for r in confirmation.of(chosen) if not r.ok), None)
    if failed is not None or mine is None:
        why = f"{failed.failure_kind}: {failed.error}" if failed is not None else "no run"
        return _inconclusive(best, confirmation, theirs, f"{_who(chosen)} failed in it ({why})")
    said = f"{mine.said()} eager"
    if mine.low <= 1.0:  # compiling over eager, first
        who = "default torch.compile" if default is None else _who(chosen)
        return _inconclusive(
            best, confirmation, theirs, f"{who} measured {said}: its lead over eager is not "
            "resolved",
        )  # fmt: skip
    if default is None:  # default compile was chosen: its lead over eager is the claim
        return _confirmed(best, confirmation, mine, None, said)
    if theirs is None:
        return _confirmed(best, confirmation, mine, None, said + " (default compile failed)")
    lead = mine.ratio(theirs)  # measured in different processes: the widest interval
    said += f", {lead.said()} default torch.compile"
    if lead.low <= 1.0:
        return _inconclusive(
            best, confirmation, theirs, f"{_who(chosen)} measured {said}: its lead over "
            "default torch.compile is not resolved",
        )  # fmt: skip
    return _confirmed(best, confirmation, mine, lead, said)


def _confirmed(
    best: BestConfig,
    confirmation: Confirmation,
    mine: Spread,
    lead: Spread | None,
    said: str,
) -> BestConfig:
    chosen = confirmation.chosen
    n = len(confirmation.of(chosen))
    reason = (
        f"{best.reason}; confirmed apart from the choice ({confirmation.processes()}): "
        f"{said}; the file claims these figures, not the round that chose it"
    )
    metrics = {**best.metrics, **_claim(confirmation.of(chosen), mine)}
    if lead is not None:
        metrics["speedup_vs_default"] = lead.median
        metrics["speedup_vs_default_ci_low"] = lead.low
        metrics["speedup_vs_default_ci_high"] = lead.high
    metrics["confirmation_runs"] = n
    return dataclasses.replace(best, reason=reason, metrics=metrics, signature=None)


def _inconclusive(
    best: BestConfig, confirmation: Confirmation, theirs: Spread | None, why: str
) -> BestConfig:
    """The cheaper side ships: default compile when it is not what failed to confirm and its
    own lead over eager is resolved, else eager."""
    default = confirmation.default
    ships = theirs if default is not None and theirs is not None and theirs.low > 1.0 else None
    tied = f"{_who(confirmation.chosen)} ({confirmation.chosen.brief})"
    tied += " and default torch.compile" if default is not None else " and eager"
    shipped = "eager"
    if ships is not None:  # what the file claims of it, from the same round
        shipped = f"default torch.compile, which it measured at {ships.said()} eager"
    reason = (
        f"inconclusive: {best.reason}; but the confirmation round, measured apart from the "
        f"choice, did not confirm it: {why}. It ties {tied}; the cheaper side ships: "
        f"{shipped}; {_SETTLE}"
    )
    metrics: dict[str, float | int | None] = {
        "eager_latency_median_s": best.metrics.get("eager_latency_median_s"),
        "confirmation_runs": len(confirmation.of(confirmation.chosen)),
        "tied_trial": confirmation.chosen.trial_number,
    }
    config = None
    if ships is not None and default is not None:
        config = CompileConfig.from_dict(default.config)
        metrics.update(_claim(confirmation.of(default), ships))
        metrics.update(_compile_figures(default, confirmation.of(default)))
        metrics["speedup_vs_default"] = 1.0
    return dataclasses.replace(
        best,
        decision="inconclusive",
        reason=reason,
        config=config,
        config_hash=config.config_hash() if config is not None else None,
        metrics=metrics,
        source={**best.source, "trial": default.trial_number if config and default else None},
        signature=None,
    )


def _claim(runs: list[TrialResult], pooled: Spread) -> dict[str, float | int | None]:
    """The figures a file claims from a config's confirmation runs: its pooled speedup with
    quartiles and interval, and latencies from the same runs (so that the latencies' ratio
    and the speedup agree)."""
    ran = [r for r in runs if r.ok]
    return {
        **pooled.figures(),
        "latency_median_s": statistics.median(
            r.latency_median_s for r in ran if r.latency_median_s is not None
        ),
        "eager_latency_median_s": statistics.median(
            r.eager_latency_median_s for r in ran if r.eager_latency_median_s is not None
        ),
    }


def _compile_figures(record: TrialRecord, runs: list[TrialResult]) -> dict[str, float | None]:
    """A shipped config's compile times from its confirmation runs (the first found its cache
    empty: cold; the next reused it: warm) and the calls after which it pays them back."""
    compiles = [r.compile_time_s for r in runs if r.ok and r.compile_time_s is not None]
    if not compiles:
        return {}
    ran = [r for r in runs if r.ok]
    paid = dataclasses.replace(
        record, compile_time_s=compiles[0],
        latency_median_s=statistics.median(r.latency_median_s or 0.0 for r in ran),
        eager_latency_median_s=statistics.median(r.eager_latency_median_s or 0.0 for r in ran),
    )  # fmt: skip
    even = break_even_calls(paid)
    return {
        "compile_time_s": compiles[0],
        "cold_compile_time_s": compiles[0],
        "warm_compile_time_s": compiles[-1] if len(compiles) > 1 else None,
        "break_even_calls_vs_eager": None if even is None or math.isinf(even) else even,
    }


def _who(r: TrialRecord) -> str:
    return f"[{r.baseline}]" if r.baseline else f"trial {r.trial_number}"


def _figure(result: TrialResult) -> str:
    if not result.ok:
        return f"{result.failure_kind}: {(result.error or '').strip()[:200]}"
    known = f" ({result.precision_note()})" if result.precision_note() else ""
    return f"{result.speedup_vs_eager:.2f}x eager{known}"
