"""A study's request from the resolved options of a search (:class:`SearchOptions`): the model
file checked, the device resolved, the space loaded, the settings built. The policy lives here,
so that the command line and the Python API build the same request; the options are read,
never written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autotune._deadline import Deadline
from autotune._device import resolve_device
from autotune.search._session import SearchRequest
from autotune.settings import SETTINGS_OF, SearchOptions, thorough_trials

NO_CUDA = "Pass --device cpu, or install a CUDA build of torch on a GPU machine."


def build_request(args: SearchOptions, deadline: Deadline | None = None) -> SearchRequest:
    """The request of a search with these options (``args.storage`` resolved)."""
    import torch

    from autotune.scoring import Objective
    from autotune.settings import StudySettings, model_sha256, triton_version
    from autotune.space import load_space
    from autotune.trials import MeasureSettings
    from autotune.workload import (
        has_traffic,
        load_model_file,
        padding_of,
        read_trace,
        require_batch_size,
    )

    max_latency_s = args.max_latency_ms / 1e3 if args.max_latency_ms else None
    batch_sizes = list(args.batch_sizes) if args.batch_sizes else None
    Objective(args.objective, args.calls, batch_sizes, max_latency_s)  # refuses a bad mix
    pareto = _pareto_axes(args)
    model = Path(args.model).resolve()
    module = load_model_file(model)
    traffic = read_trace(args.traffic) if args.traffic else None
    if traffic is not None or has_traffic(module):
        _check_traffic(args, module)
    elif batch_sizes:
        require_batch_size(module)
    device = resolve_device(args.device, remedy=NO_CUDA)
    scope, notes = _scope(args, module)
    padding = padding_of(module) if args.workload == "infer" else None
    space = load_space(
        args.space or device.split(":")[0],
        device,
        padding=padding,
        workload=args.workload,
        allow_numerics_changes=args.allow_numerics_changes or args.accuracy is not None,
        accuracy_contract=args.accuracy is not None,
    )
    trials = thorough_trials(space.size) if args.effort_sizes_trials else args.trials
    settings = StudySettings(
        model_path=str(model),
        device=device,
        workload=args.workload,
        space=space.to_dict(),
        space_hash=space.content_hash(),
        torch_version=torch.__version__,
        seed=args.seed,
        compile_budget=args.compile_budget,
        compile_budget_factor=args.compile_budget_factor,
        measure=MeasureSettings(target_seconds=args.measure_seconds),
        sampler=args.sampler,
        scope=scope,
        objective=args.objective,
        calls=args.calls,
        memory_budget_bytes=args.memory_budget,
        pareto=pareto,
        finalist_precision=args.precision or None,
        trials=trials,
        finalists=args.finalists,
        confirm=args.confirm,
        preset_finalists=args.preset_finalists,
        prune=args.prune,
        pick=args.pick,
        charge_warm_compile=args.charge_warm_compile,
        batch_sizes=batch_sizes,
        max_latency_s=max_latency_s,
        model_sha256=model_sha256(model),
        triton_version=triton_version(),
        accuracy=args.accuracy,
        traffic=traffic,
        max_startup_s=args.max_startup_s,
    )
    study = args.study or f"{model.stem}-{device.replace(':', '')}"
    given = frozenset(SETTINGS_OF[name] for name in args.given if name in SETTINGS_OF)
    start_from = None
    if args.start_from:
        from autotune.search._start_from import StartFrom

        start_from = StartFrom(args.start_from, args.start_from_storage, args.start_from_top)
    return SearchRequest(
        study, args.storage, settings, given=given,
        deadline=deadline or Deadline(), start_from=start_from,
        cache_dir=args.cache_dir, cache_limit_bytes=args.cache_limit,
        device=args.device and device, model_path=str(model),
        trust_model_path=args.trust_model_path,
        allow_version_mismatch=args.allow_version_mismatch,
        allow_unsafe_knobs=space.unsafe_knobs, notes=notes,
    )  # fmt: skip


def _check_traffic(args: SearchOptions, module: Any) -> None:
    """A traffic mix (``get_traffic``, or a trace ``--traffic`` names) is timed request by
    request for inference: the train and generate workloads time their own loops, and the
    mix's requests say their shapes, so no batch size is searched over them."""
    from autotune.errors import UsageError
    from autotune.workload import REQUEST, TRAFFIC, has_traffic

    given = f"--traffic {args.traffic}" if args.traffic else f"{TRAFFIC} in {module.__file__}"
    if args.traffic and has_traffic(module):
        raise UsageError(
            f"Two traffic mixes: --traffic {args.traffic} and {TRAFFIC} in {module.__file__}; a "
            "study times one. Drop --traffic to time the file's, or get_traffic to time the "
            "trace's."
        )
    if args.traffic and not callable(getattr(module, REQUEST, None)):
        raise UsageError(
            f"--traffic {args.traffic} names request shapes, which the model file "
            f"{module.__file__} must build: define {REQUEST}(device, **shape) -> the inputs "
            "of one request of that shape (the trace's columns, but count, are its arguments)."
        )
    if args.workload != "infer":
        raise UsageError(
            f"A traffic mix ({given}) is timed request by request for the infer workload; got "
            f"--workload {args.workload}. Drop --workload, or time a train or generate study "
            "on get_inputs(device)."
        )
    if args.batch_sizes:
        raise UsageError(
            f"A traffic mix ({given}) says each request's batch size, so --batch-sizes "
            f"{','.join(map(str, args.batch_sizes))} has nothing to search; drop --batch-sizes."
        )


def _scope(args: SearchOptions, module: Any) -> tuple[str, tuple[str, ...]]:
    """The scope the study searches, and a note when it is not the one asked for: a train
    step of the model file's own calls the model its own way, while the scope's analysis and
    probes call it with ``get_inputs``' arguments, so such a study compiles the whole model;
    so does a generate study (its config is a plan in parts, each compiling the whole model)."""
    if args.scope != "search" or args.workload == "infer":
        return args.scope, ()
    if args.workload == "generate":
        return "whole", (
            "scope: the whole model is compiled, not searched: generate() calls the model "
            "once per token, and the config compiles its decode steps whole (--scope whole "
            "says the same without this note)",
        )
    if getattr(module, "train_step", None) is None:
        return args.scope, ()
    return "whole", (
        "scope: the whole model is compiled, not searched: the model file's train_step calls "
        "the model its own way, and the scope probes call it with get_inputs' arguments "
        "(--scope whole says the same without this note)",
    )


def _pareto_axes(args: SearchOptions) -> list[str] | None:
    """The axes of a --pareto study (None without it), its --pick rule checked (the rules
    across options were checked by :func:`autotune.settings.resolve`)."""
    from autotune.scoring import PickRule, parse_axes

    if not args.pareto:
        return None
    PickRule.parse(args.pick or "fastest")
    return list(parse_axes(args.pareto_axes or "latency,compile"))
