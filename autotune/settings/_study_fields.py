"""The study settings the settings table declares, as typed fields: written by
``python -m autotune.settings._generate`` from :data:`~autotune.settings.SEARCH_OPTIONS` (each
row's ``field``, ``annotation`` and default). Do not edit: change the table's row and run it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from autotune.settings._table import DEFAULT


@dataclass(frozen=True, kw_only=True)
class StudyFields:
    """Every study setting an option of ``autotune search`` sets, in the table's order; a
    study's stored settings (``autotune.storage.StudySettings``) are these and what the
    study was made with."""

    model_path: str
    trials: int = DEFAULT["trials"]
    compile_budget: float = DEFAULT["compile_budget"]
    compile_budget_factor: float = DEFAULT["compile_budget_factor"]
    memory_budget_bytes: int | None = None
    finalists: int = DEFAULT["finalists"]
    confirm: int = DEFAULT["confirm"]
    preset_finalists: str = DEFAULT["preset_finalists"]
    prune: bool = DEFAULT["prune"]
    space_hash: str
    device: str
    objective: str = DEFAULT["objective"]
    calls: int | None = None
    batch_sizes: list[int] | None = None
    traffic: list[dict[str, Any]] | None = None
    max_startup_s: float | None = None
    max_latency_s: float | None = None
    pareto: list[str] | None = None
    pick: str | None = None
    charge_warm_compile: bool = DEFAULT["charge_warm_compile"]
    workload: str = DEFAULT["workload"]
    scope: str = DEFAULT["scope"]
    accuracy: str | None = None
    seed: int = DEFAULT["seed"]
    sampler: str = DEFAULT["sampler"]
    finalist_precision: float | None = DEFAULT["precision"]
