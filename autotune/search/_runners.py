"""The trial runners of a process that searches: one per --jobs on disjoint CPU cores, forked
from a preloaded host or in fresh processes, or the runner ``$AUTOTUNE_TRIAL_RUNNER`` names."""

from __future__ import annotations

import importlib
import os

from autotune.errors import UsageError
from autotune.trials import (
    PreloadedHostRunner,
    SubprocessRunner,
    TrialRunner,
    split_cores,
    usable_cores,
)

RUNNER_ENV = "AUTOTUNE_TRIAL_RUNNER"


def trial_runner() -> TrialRunner | None:
    """The trial runner ``$AUTOTUNE_TRIAL_RUNNER`` names (``module:factory``, called with no
    arguments), or None for the real one. It replaces the trial body only, for the test suite
    and the benchmarks (a sleep or a table of results in place of a compile): storage,
    sampler, budgets and records stay the real ones."""
    named = os.environ.get(RUNNER_ENV)
    if not named:
        return None
    module, _, factory = named.partition(":")
    try:
        made = getattr(importlib.import_module(module), factory)()
    except (ImportError, AttributeError, ValueError) as exc:
        raise UsageError(
            f"${RUNNER_ENV}={named!r} names no trial runner factory ({exc}); set it to "
            "MODULE:FACTORY, importable from here, or unset it to run real trials."
        ) from exc
    return made


def trial_runners(jobs: int, trial_host: str, device: str) -> list[TrialRunner]:
    """This process's trial runners: one per --jobs, the preloaded host or fresh processes (or the
    runner $AUTOTUNE_TRIAL_RUNNER names)."""
    kind = PreloadedHostRunner if trial_host == "preloaded" else SubprocessRunner
    core_sets = _core_sets(jobs, device)
    replaced = [trial_runner() for _ in core_sets]
    if all(replaced):
        return [r for r in replaced if r is not None]
    return [kind(cores=c) for c in core_sets]


def _core_sets(jobs: int, device: str) -> list[list[int] | None]:
    """Disjoint CPU cores per job, so parallel trials neither oversubscribe nor share cores."""
    if jobs == 1:
        return [None]
    if not device.startswith("cpu"):
        raise UsageError(
            f"--jobs {jobs} needs --device cpu: trials sharing one GPU would time each other. "
            "Run one worker per GPU (autotune worker --gpus 0,1,...) on one --study and "
            "--storage instead."
        )
    cores = usable_cores()
    if jobs > len(cores):
        raise UsageError(
            f"--jobs {jobs} is more than the {len(cores)} CPU cores this process may use; "
            f"pass --jobs {len(cores)} or fewer (each job gets cores of its own)."
        )
    return list(split_cores(cores, jobs))
