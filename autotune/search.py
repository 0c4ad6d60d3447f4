"""``autotune search``: from command-line arguments to a study and a best-config file."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from autotune.errors import UsageError

if TYPE_CHECKING:
    from autotune.records import TrialRecord
    from autotune.runtime.config import BestConfig
    from autotune.study import Objective, Search, SearchRequest
    from autotune.trials import TrialRunner


def run_search(args: argparse.Namespace) -> int:
    """Runs or resumes a study and writes the best-config file; returns the exit code."""
    from autotune.trials import SubprocessRunner, WarmHostRunner

    request = _request(args)
    request.cache_dir = args.cache_dir  # None: the study's own folder (Search decides)
    kind = WarmHostRunner if args.trial_host == "warm" else SubprocessRunner
    runners = [kind(cores=cores) for cores in _core_sets(args.jobs, request.settings.device)]
    try:
        return _search(args, request, runners)
    finally:
        for runner in runners:
            runner.close()


def _core_sets(jobs: int, device: str) -> list[list[int] | None]:
    """Disjoint CPU cores per job, so parallel trials neither oversubscribe nor share cores."""
    if jobs == 1:
        return [None]
    if not device.startswith("cpu"):
        raise UsageError(
            f"--jobs {jobs} needs --device cpu: trials sharing one GPU would time each other. "
            "Run one search per GPU (e.g. --device cuda:0, --device cuda:1) on one --study "
            "and --storage instead."
        )
    cores = sorted(os.sched_getaffinity(0))
    if jobs > len(cores):
        raise UsageError(
            f"--jobs {jobs} is more than the {len(cores)} CPU cores this process may use; "
            f"pass --jobs {len(cores)} or fewer (each job gets cores of its own)."
        )
    share = len(cores) // jobs
    return [cores[i * share : (i + 1) * share] for i in range(jobs)]


def _search(
    args: argparse.Namespace, request: SearchRequest, runners: Sequence[TrialRunner]
) -> int:
    from autotune import report
    from autotune.study import Objective, Search

    objective = Objective(request.settings.objective, request.settings.calls)

    search = Search(
        request,
        runners,
        on_record=lambda r: print(report.trial_line(r, objective), flush=True),
        on_note=lambda note: print(note, flush=True),
    )
    for note in search.space.notes:
        print(f"note: {note}")
    print(
        f"study {request.study_name!r}: {search.settings.model_path} on "
        f"{search.settings.device}, space {search.space.name!r} "
        f"({search.space.size} configurations), {request.trials} trials",
        flush=True,
    )
    records = search.run()
    if search.settings.pareto:
        best = _pick(args, search, records)
    else:
        best = _best(args, search, records, objective)
    best.dump(args.out)
    print(report.summary(best, args.out, records))
    return 0


def _best(
    args: argparse.Namespace, search: Search, records: list[TrialRecord], objective: Objective
) -> BestConfig:
    from autotune.study import best_config
    from autotune.study._finalists import pick_finalists, remeasure

    finalists = None
    if args.finalists:
        picked = pick_finalists(records, objective, args.finalists)
        if picked:
            finalists = remeasure(picked, search.settings, on_note=lambda n: print(n, flush=True))
    request = search.request
    return best_config(
        records, search.settings, request.study_name, request.storage,
        finalists=finalists, warm_start=args.warm_start,
    )  # fmt: skip


def _pick(args: argparse.Namespace, search: Search, records: list[TrialRecord]) -> BestConfig:
    """A --pareto study: prints the search's front, re-measures the configs the rule admits,
    and picks from the front of their fresh measurements."""
    from autotune import report
    from autotune.study import PickRule, candidates, pareto_finalists, pick_from_front
    from autotune.study._finalists import remeasure
    from autotune.study._pick import study_front

    axes, rule = search.settings.pareto or [], PickRule.parse(args.pick or "fastest")
    chosen = pareto_finalists(records, axes, rule, args.finalists) if args.finalists else []
    finalists = None
    if chosen:
        print(report.pareto_table(study_front(candidates(records), records, axes), axes, "search"))
        finalists = remeasure(chosen, search.settings, on_note=lambda n: print(n, flush=True))
    request = search.request
    picked = pick_from_front(
        records, search.settings, request.study_name, request.storage, rule,
        finalists=finalists, warm_start=args.warm_start,
    )  # fmt: skip
    title = "finalists" if finalists else "search"
    print(report.pareto_table(picked.front, axes, title, picked.chosen))
    return picked.best


def _request(args: argparse.Namespace) -> SearchRequest:
    import torch

    from autotune._device import default_device, require
    from autotune.space import load_space
    from autotune.study import Objective, SearchRequest, StudySettings
    from autotune.trials import MeasureSettings
    from autotune.workload import load_model_file

    Objective(args.objective, args.calls)  # refuses --calls without amortized, and back
    pareto = _pareto_axes(args)
    model = Path(args.model).resolve()
    load_model_file(model)
    device = args.device or default_device()
    require(device, "Pass --device cpu, or install a CUDA build of torch on a GPU machine.")
    space = load_space(
        args.space or device.split(":")[0],
        device,
        workload=args.workload,
        allow_numerics_changes=args.allow_numerics_changes,
    )
    settings = StudySettings(
        model_path=str(model),
        device=device,
        workload=args.workload,
        space=space.to_dict(),
        space_hash=space.content_hash(),
        torch_version=torch.__version__,
        seed=args.seed,
        compile_budget_s=args.compile_budget,
        measure=MeasureSettings(target_seconds=args.measure_seconds),
        sampler=args.sampler,
        scope=args.scope,
        objective=args.objective,
        calls=args.calls,
        memory_budget_bytes=args.memory_budget,
        pareto=pareto,
        finalist_precision=args.precision or None,
    )
    study = args.study or f"{model.stem}-{device.replace(':', '')}"
    return SearchRequest(study, args.storage, settings, args.trials, args.timeout)


def _pareto_axes(args: argparse.Namespace) -> list[str] | None:
    """The axes of a --pareto study (None without it); checks --pick and --objective too."""
    from autotune.study import PickRule, parse_axes

    if not args.pareto:
        for name, value in (("--pick", args.pick), ("--pareto-axes", args.pareto_axes)):
            if value is not None:
                raise UsageError(
                    f"{name} {value!r} goes with a Pareto front, which only a --pareto study "
                    "has: add --pareto (latency against compile time; --pareto-axes "
                    "latency,compile,memory adds peak memory)."
                )
        return None
    if args.objective != "latency":
        raise UsageError(
            f"--pareto replaces the single objective, got --objective {args.objective}: the "
            "front already trades latency against compile time. Drop --objective, or drop "
            "--pareto to optimize one objective."
        )
    PickRule.parse(args.pick or "fastest")
    return list(parse_axes(args.pareto_axes or "latency,compile"))
