"""The trial runners of a process that searches: one per --jobs on disjoint CPU cores, forked
from a preloaded host or in fresh processes, or the runner ``$AUTOTUNE_TRIAL_RUNNER`` names;
with --builders, one job per builder plus one: trials compile on builder cores, and are measured
one at a time on cores no compile uses."""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING

from autotune import _scratch
from autotune.errors import UsageError
from autotune.trials import (
    Pipeline,
    PipelinedRunner,
    PreloadedHostRunner,
    SubprocessRunner,
    TrialRunner,
    split_cores,
    usable_cores,
)

if TYPE_CHECKING:
    from autotune._deadline import Deadline

RUNNER_ENV = "AUTOTUNE_TRIAL_RUNNER"
# The measuring cores beside builders on a GPU: a trial there launches kernels; the rest
# compile.
_GPU_RUNNER_CORES = 2


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


def trial_runners(
    jobs: int,
    trial_host: str,
    device: str,
    builders: int | None = 0,
    deadline: Deadline | None = None,
) -> list[TrialRunner]:
    """This process's trial runners: one per --jobs, the preloaded host or fresh processes (or the
    runner $AUTOTUNE_TRIAL_RUNNER names); with builders (:func:`builder_count`; ``None``:
    none), one pipelined job per builder plus one."""
    cores = usable_cores()
    count = builder_count(builders, len(cores), jobs)
    kind = PreloadedHostRunner if trial_host == "preloaded" else SubprocessRunner
    if count:
        return _pipelined(count, kind, device, cores, deadline)
    core_sets = _core_sets(jobs, device)
    replaced = [trial_runner() for _ in core_sets]
    if all(replaced):
        return [r for r in replaced if r is not None]
    return [kind(cores=c) for c in core_sets]


def builder_count(builders: int | None, cores: int, jobs: int = 1) -> int:
    """How many builders compile ahead: ``builders`` as given (--builders), checked against
    the cores and --jobs; none unless asked for (3 builders on a 16-core H200 node ran the
    same seeded search 0.93x as fast as none: benchmarks/results/builders_cuda_h200.md)."""
    if builders is None:
        return 0
    if builders and jobs > 1:
        raise UsageError(
            f"--builders {builders} goes with one measuring job, not --jobs {jobs}: builders "
            "compile ahead for trials measured one at a time. Pass --jobs 1, or "
            "--builders 0 to run parallel jobs that each compile and time."
        )
    if builders and builders + 1 > cores:
        raise UsageError(
            f"--builders {builders} needs {builders + 1} CPU cores (one each, and one to "
            f"measure on), but this process may use {cores}; pass --builders {max(0, cores - 1)}"
            " or fewer, or 0 to compile and time every trial on all of them."
        )
    return builders


def pipeline_cores(
    builders: int, device: str, cores: list[int]
) -> tuple[list[int], list[list[int]]]:
    """The measuring cores and each builder's, disjoint: on a CPU device the measurement
    keeps half (rounded up; its timings are the product's), on a GPU two; the builders share
    the rest evenly."""
    keep = (len(cores) + 1) // 2 if device.startswith("cpu") else _GPU_RUNNER_CORES
    keep = max(1, min(keep, len(cores) - builders))
    return cores[:keep], split_cores(cores[keep:], builders)


def _pipelined(
    builders: int, kind: type, device: str, cores: list[int], deadline: Deadline | None
) -> list[TrialRunner]:
    """One job per builder plus one, each running its trials in their place in one pipeline:
    compiled on a builder core set, measured on the measuring cores (each job's runner the one
    $AUTOTUNE_TRIAL_RUNNER names, where one is named; otherwise unpinned: the trial pins
    itself as it moves)."""
    measuring, building = pipeline_cores(builders, device, cores)
    slot = str(_scratch.run_root() / "measure-slot.lock")
    pipeline = Pipeline(slot, building, measuring, deadline)
    return [PipelinedRunner(trial_runner() or kind(), pipeline) for _ in range(builders + 1)]


def finalist_jobs(runners: list[TrialRunner], device: str) -> list[TrialRunner] | None:
    """The finalist round's runners after a search with builders on a GPU: one per builder
    plus one, each a fresh process per run (as finalists need) in the search's pipeline, so
    that the cold runs compile side by side while one is timed. None (one fresh process at a
    time, on every core) on a CPU device, whose finalists are timed on every core as
    production runs, and without builders."""
    pipelined = [r for r in runners if isinstance(r, PipelinedRunner)]
    if device.startswith("cpu") or not pipelined:
        return None
    pipeline = pipelined[0].pipeline
    return [PipelinedRunner(SubprocessRunner(), pipeline) for _ in range(pipeline.live + 1)]


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
