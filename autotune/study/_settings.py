"""The settings of a study: stored with it, so that a resumed run or a worker uses the same."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from autotune.errors import UsageError
from autotune.trials import MeasureSettings, TrialSpec
from autotune.trials._spec import DEFAULT_PRECISION

# A resumed study must agree on these; the others may change between runs.
IDENTITY = (
    "model_path", "device", "workload", "space_hash", "scope",
    "objective", "calls", "memory_budget_bytes", "pareto",
)  # fmt: skip


@dataclass(frozen=True)
class StudySettings:
    """Every setting a trial needs, independent of who runs it."""

    model_path: str
    device: str
    space: dict[str, Any]
    space_hash: str
    torch_version: str
    workload: str = "infer"
    seed: int = 0
    compile_budget_s: float = 600.0
    measure: MeasureSettings = field(default_factory=MeasureSettings)
    sampler: str = "tpe"
    scope: str = "search"  # "search": probe parts and search scopes; "whole": whole model only
    scope_plan: dict[str, Any] | None = None  # the probed ScopePlan, settled once per study
    objective: str = "latency"
    calls: int | None = None  # --objective amortized: the calls that pay back the compile
    memory_budget_bytes: int | None = None  # a trial whose peak memory exceeds it is infeasible
    pareto: list[str] | None = None  # --pareto: the axes of a multi-objective study
    finalist_precision: float | None = DEFAULT_PRECISION  # finalists time on to +-this speedup

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def trial_spec(
        self,
        config: dict[str, Any] | None,
        *,
        cache_dir: str | None,
        relaxed_numerics: bool,
        measure: MeasureSettings | None = None,
    ) -> TrialSpec:
        """One trial of this study: ``config`` (None: eager) in ``cache_dir``, held to the
        looser gate when ``relaxed_numerics``, timed by ``measure`` (default: the study's)."""
        return TrialSpec(
            model_path=self.model_path,
            device=self.device,
            config=config,
            workload=self.workload,
            seed=self.seed,
            budget_s=self.compile_budget_s,
            measure=measure or self.measure,
            cache_dir=cache_dir,
            relaxed_numerics=relaxed_numerics,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StudySettings:
        return cls(**{**data, "measure": MeasureSettings(**data["measure"])})


def check_resume(study: str, stored: StudySettings, current: StudySettings) -> list[str]:
    """Refuses to resume a study with another model, device, workload or space.

    Returns notes worth printing (e.g. a different torch than the one that began the study).
    """
    diffs = [
        f"{key}: stored {getattr(stored, key)!r}, now {getattr(current, key)!r}"
        for key in IDENTITY
        if getattr(stored, key) != getattr(current, key)
    ]
    if diffs:
        raise UsageError(
            f"The study {study!r} already exists with other settings ({'; '.join(diffs)}). "
            "A study's trials are only comparable under one model, device, workload and "
            "space: pass a new --study name, or the same settings to resume it."
        )
    if stored.torch_version != current.torch_version:
        return [
            f"note: study {study!r} began under torch {stored.torch_version}, this run has "
            f"torch {current.torch_version}; its earlier timings may not compare"
        ]
    return []
