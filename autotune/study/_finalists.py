"""Finalists: the top configurations re-measured in fresh processes, cold and warm.

Search trials share the study's kernel cache, which makes a search affordable and their
compile times optimistic. Before the file is written, the best few candidates and default
``torch.compile`` run again, each twice in a fresh process with a private cache of its own:

- **cold**: the cache empty — what a new production machine pays;
- **warm**: the cache holding this config's own artifacts — what a restarted process pays.

Their steady-state timing is measured again too (the warm run, paired with eager as always).
A finalist's record is its search record with these measurements in place of the search's.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

from autotune.records import TrialRecord
from autotune.study._best import candidates
from autotune.study._objective import Objective
from autotune.study._records import measurements
from autotune.study._settings import StudySettings
from autotune.trials import SubprocessRunner, TrialResult, TrialSpec


@dataclass
class Finalist:
    """A candidate re-measured cold and warm."""

    searched: TrialRecord
    cold: TrialResult
    warm: TrialResult

    @property
    def ok(self) -> bool:
        return self.cold.ok and self.warm.ok

    def record(self, warm_start: bool = False) -> TrialRecord:
        """The search record with the fresh measurements (compile: cold, or warm)."""
        compile_s = (self.warm if warm_start else self.cold).compile_time_s
        return dataclasses.replace(
            self.searched, compile_time_s=compile_s, **measurements(self.warm)
        )


def pick_finalists(
    records: list[TrialRecord], objective: Objective, top: int
) -> list[TrialRecord]:
    """The ``top`` candidates by the objective, plus default torch.compile when it ran."""
    pool = sorted(
        (r for r in candidates(records) if r.baseline is None),
        key=lambda r: objective.score(r) or 0.0,
        reverse=True,
    )[:top]
    default = [r for r in records if r.baseline == "default" and r.status == "ok"]
    return pool + default if pool else []


def remeasure(
    finalists: list[TrialRecord],
    settings: StudySettings,
    on_note: Callable[[str], None] = lambda note: None,
    runner: SubprocessRunner | None = None,
) -> list[Finalist]:
    """Runs each finalist cold, then warm, in fresh processes with a private cache."""
    runner = runner or SubprocessRunner()
    done = []
    for r in finalists:
        with tempfile.TemporaryDirectory(prefix="autotune-finalist-") as cache:
            spec = TrialSpec(
                model_path=settings.model_path, device=settings.device, config=r.config,
                workload=settings.workload, seed=settings.seed,
                budget_s=settings.compile_budget_s, measure=settings.measure, cache_dir=cache,
            )  # fmt: skip
            cold = runner.run(spec)
            warm = runner.run(spec) if cold.ok else cold
        done.append(Finalist(r, cold, warm))
        on_note(_line(done[-1]))
    return done


def _line(f: Finalist) -> str:
    who = f"[{f.searched.baseline}]" if f.searched.baseline else f"#{f.searched.trial_number}"
    if not f.ok:
        bad = f.cold if not f.cold.ok else f.warm
        return f"finalist {who}: {bad.failure_kind}: {bad.error}"
    return (
        f"finalist {who}: cold compile {f.cold.compile_time_s:.1f}s, warm compile "
        f"{f.warm.compile_time_s:.1f}s, {f.warm.speedup_vs_eager:.2f}x eager "
        f"({f.warm.speedup_vs_eager_q1:.2f}-{f.warm.speedup_vs_eager_q3:.2f})"
    )
