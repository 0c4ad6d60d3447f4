"""``autotune search MODEL.py``: run or resume a study, then choose the winner and write it."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from autotune import _rules as rules
from autotune._settings_table import (
    DEFAULT,
    EFFORTS,
    changeable_options,
)
from autotune.cli import _argtypes as argtypes
from autotune.cli import _options as options
from autotune.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Callable

    from autotune.decide import Decision
    from autotune.records import TrialRecord
    from autotune.study import Search
    from autotune.trials import TrialRunner

INTERRUPTED = "every finished trial is saved. Run the same command to resume the study."


def add_parser(sub: argparse._SubParsersAction) -> options.Parser:
    p = options.add_subcommand(
        sub,
        "search",
        help="search compile configs for a model file",
        description="Measure eager and default torch.compile, then search the space; every "
        "trial runs in a process of its own. Re-running with the same --study and --storage "
        "resumes the study under its stored settings: options left out keep the stored "
        f"values, and only {changeable_options()} may change.",
    )
    p.add_argument(
        "model",
        help="model file (*.py) defining get_model(device) and get_inputs(device), or a study "
        "file (*.toml) naming one and the study's options (options given here override it)",
    )
    _budgets(p)
    _where(p)
    _objectives(p)
    _how(p)
    options.add_quiet(
        p, "print only the decision: no trial lines, notes or live panel (errors still go to "
        "stderr)",
    )  # fmt: skip
    options.add_debug(p)
    return p


def _budgets(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--trials", type=argtypes.positive_int, default=DEFAULT["trials"],
        help="trial budget of the study, baselines excluded; a later run may raise it",
    )  # fmt: skip
    p.add_argument(
        "--timeout", type=argtypes.positive_float, metavar="SECONDS",
        help="wall clock of this whole command: probes, trials and finalists (these run on "
        "what time is left, or are skipped with a note)",
    )  # fmt: skip
    options.add_compile_budget(
        p, "per trial: a trial still compiling or running after it is killed (timeout)"
    )
    p.add_argument(
        "--compile-budget-factor", type=argtypes.non_negative_float, metavar="K",
        default=DEFAULT["compile_budget_factor"],
        help="once default torch.compile's compile time is known, stop a search trial still "
        "compiling after K times it (plus the default's run time; at least 60 s, at most "
        "--compile-budget); 0 keeps --compile-budget alone",
    )  # fmt: skip
    p.add_argument(
        "--warm-start-from", metavar="STUDY",
        help="start from an earlier study (the same model elsewhere, or a similar model): "
        "its best configs are measured first, and where the space and objective match, the "
        "sampler is told its results",
    )  # fmt: skip
    p.add_argument(
        "--warm-start-storage", metavar="URL",
        help="where the --warm-start-from study is (default: --storage)",
    )  # fmt: skip
    p.add_argument(
        "--warm-start-top", type=argtypes.positive_int, default=5, metavar="K",
        help="how many of its best configs --warm-start-from queues (default 5)",
    )  # fmt: skip
    p.add_argument(
        "--effort", choices=tuple(EFFORTS), default=None,
        help="set the space, trials, compile budget and finalists together: quick (the quick "
        "space, presets and a few trials: minutes), default, thorough (the full space with "
        "trials sized from it); options given explicitly win",
    )  # fmt: skip
    p.add_argument(
        "--memory-budget", type=argtypes.size, metavar="SIZE",
        help="peak memory a trial may use (e.g. 8GiB, 500MB): above it a trial is infeasible "
        "(CUDA: max allocated; CPU: peak RSS of the trial process)",
    )  # fmt: skip
    p.add_argument(
        "--finalists", type=argtypes.non_negative_int, default=DEFAULT["finalists"], metavar="N",
        help="re-measure the N best configs and default torch.compile in fresh processes, "
        "cold and warm, before choosing (0 skips)",
    )  # fmt: skip
    p.add_argument(
        "--preset-finalists", choices=rules.PRESET_FINALISTS, default=DEFAULT["preset_finalists"],
        help="which of the space's measured presets are re-measured with the finalists: the "
        "best one (default), or all of them, to see the tuned config against every preset in "
        "the same round",
    )  # fmt: skip
    p.add_argument(
        "--no-prune", dest="prune", action="store_false",
        help="time every trial for the whole --measure-seconds; by default a sampled trial "
        "whose running median speedup is clearly (95%% confidence) below the best trial's "
        "lower quartile stops timing after a few rounds",
    )  # fmt: skip
    p.add_argument(
        "--save-cache", action="store_true",
        help="after writing the file, ship what skips the cold compile beside it: the compile "
        "cache of its config (NAME.DEVICE.cache.tar.gz) and, where the winner compiles the "
        "whole model as one graph, an AOTInductor package of it (NAME.DEVICE.pt2, checked "
        "against eager first; a note says why not otherwise); autotune.apply loads them",
    )  # fmt: skip
    p.add_argument(
        "--save-aot", action="store_true",
        help="after writing the file, write the AOTInductor package alone (no cache archive)",
    )  # fmt: skip
    p.add_argument(
        "--remeasure", action="store_true",
        help="measure the finalists again even when a finished round of them is recorded",
    )  # fmt: skip


def _where(p: argparse.ArgumentParser) -> None:
    from autotune.space import builtin_names

    p.add_argument(
        "--space", metavar="NAME_OR_PATH",
        help=f"a built-in space ({', '.join(builtin_names())}) or a .toml path (default: the "
        "space named after the device)",
    )  # fmt: skip
    p.add_argument("--study", metavar="NAME", help="study name (default: MODEL-DEVICE)")
    options.add_storage(p)
    options.add_out(p)
    options.add_device(p, "where trials run (default: cuda if available, else cpu)")


def _objectives(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--objective", choices=("latency", "throughput", "amortized"),
        default=DEFAULT["objective"],
        help="latency: steady-state speedup over eager; throughput: samples per second over "
        "--batch-sizes; amortized: the compile time charged to --calls N calls",
    )  # fmt: skip
    p.add_argument(
        "--calls", type=argtypes.positive_int, metavar="N",
        help="with --objective amortized: the calls the compile must pay back",
    )  # fmt: skip
    p.add_argument(
        "--batch-sizes", type=argtypes.positive_ints, metavar="B,B,...",
        help="with --objective throughput: batch sizes to search (the model file's "
        "get_inputs(device, batch_size) builds each)",
    )  # fmt: skip
    p.add_argument(
        "--max-latency-ms", type=argtypes.positive_float, metavar="MS",
        help="with --objective throughput: a config whose call takes longer is infeasible",
    )  # fmt: skip
    p.add_argument(
        "--pareto", action="store_true",
        help="multi-objective study: latency against compile time (and, with --pareto-axes, "
        "memory); prints the Pareto front, --pick chooses from it",
    )  # fmt: skip
    p.add_argument(
        "--pareto-axes", metavar="AXES",
        help="with --pareto: latency,compile (default) or latency,compile,memory",
    )  # fmt: skip
    p.add_argument(
        "--pick", metavar="RULE",
        help="with --pareto: a goal (fastest, min-compile, min-memory; default fastest) and "
        "limits, quoted, e.g. 'fastest,compile<=60' or 'min-compile,speedup>=1.2'",
    )  # fmt: skip
    p.add_argument(
        "--warm-start", action="store_true",
        help="amortized objective and --pick: charge the warm compile (a restarted process "
        "reusing its cache) instead of the cold one (a new machine)",
    )  # fmt: skip


def _how(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--workload", choices=rules.WORKLOADS, default=DEFAULT["workload"],
        help="infer: eval() under no_grad; train: one training step (forward, loss, backward, "
        "optimizer step), see the README's model file section",
    )  # fmt: skip
    p.add_argument(
        "--scope", choices=rules.SCOPES, default=DEFAULT["scope"],
        help="search: probe the model's parts and search which to compile (whole, regional "
        "blocks, children, some kept eager); whole: compile the whole model only",
    )  # fmt: skip
    p.add_argument(
        "--allow-numerics-changes", action="store_true",
        help="also search the space's [numerics] knobs (fast math etc.), held to a 10x looser "
        "correctness tolerance",
    )  # fmt: skip
    p.add_argument(
        "--accuracy", metavar="SPEC", type=argtypes.accuracy, default=None,
        help="the accuracy contract a config that changes numerics on purpose must meet against "
        "eager fp32, e.g. 'cosine>=0.999', 'max_abs<=1e-2,cosine>=0.999', 'rtol=1e-2,atol=1e-3' "
        "or 'accuracy>=0.99' (the model file's accuracy(output, reference)); it searches the "
        "space's [precision] knobs (bf16 autocast, matmul precision), a backend's bf16 and the "
        "[numerics] knobs under it. Without it nothing that changes numerics is searched",
    )  # fmt: skip
    options.add_seed(p, "seeds the sampler, the weights and the inputs")
    p.add_argument(
        "--sampler", choices=rules.SAMPLERS, default=DEFAULT["sampler"], help="Optuna sampler"
    )
    options.add_measure_seconds(p, "interleaved eager/compiled timing per trial")
    options.add_precision(p, "finalists")
    options.add_trial_processes(p)
    options.add_joining(p)
    p.add_argument(
        "--no-worker", action="store_true",
        help="only create the study (settings, baselines queued) and run no trial: start "
        "`autotune worker` processes, then `autotune finalize` (the Slurm/Kubernetes create step)",
    )  # fmt: skip
    options.add_for_device(p)


def run(args: argparse.Namespace) -> int:
    """Runs or resumes a study, then writes its best-config file; returns the exit code."""
    from autotune._deadline import Deadline
    from autotune.pipeline import NO_CUDA, Finish, build_request, resolve_device, run_study
    from autotune.reports import terminal
    from autotune.reports.progress import Progress
    from autotune.study import Events, Search, Session

    progress = Progress(quiet=args.quiet)
    args.storage = options.storage(args)
    request = build_request(args, Deadline.after(args.timeout))
    if getattr(args, "effort_line", None):
        progress.note(args.effort_line)
    session = Session(request, Events(on_note=progress.note))
    if args.no_worker:
        return _create_only(Search(session))
    device = session.local.device
    resolve_device(device, remedy=NO_CUDA, named=f"The study's device {device}")
    search = Search(session, trial_runners(args, device))
    progress.attach(search, "search")
    finish = Finish(
        args.out, remeasure=args.remeasure, for_device=args.for_device,
        save_cache=args.save_cache, save_aot=args.save_aot,
        finalist_runner=options.trial_runner(),
    )  # fmt: skip

    def front(records: list[TrialRecord], axes: list[str]) -> None:
        progress.note(terminal.pareto_table(records, axes, "search"))

    def decided(decision: Decision) -> None:
        progress.finish()  # the panel stops before the decision is printed
        print(terminal.decision(decision, args.out), flush=True)

    with progress:
        _header(search, progress.note)
        outcome = run_study(search, finish, on_front=front, on_decision=decided)
    if outcome.decision is None:
        print(
            "No best-config file was written: the eager baseline was not measured before the "
            "run stopped. Run the same command again to continue the study.",
            flush=True,
        )
        return 1
    if outcome.not_shipped:
        print(outcome.not_shipped, flush=True)
    return 0


def _create_only(search: Search) -> int:
    from autotune.records import redact_url

    search.prepare()
    session, request = search.session, search.request
    s = session.settings
    what = "created" if session.created else "ready"
    print(
        f"study {request.study_name!r} {what} ({s.model_path} on {s.device}, space "
        f"{session.space.name!r}, {s.trials} trials); no trial ran (--no-worker). Start workers:"
        f"\n  autotune worker --study {request.study_name} --storage "
        f"{redact_url(request.storage)} --model {s.model_path}\nthen write the file with:\n"
        f"  autotune finalize --study {request.study_name} --storage "
        f"{redact_url(request.storage)} --model {s.model_path}"
    )
    return 0


def _header(search: Search, say: Callable[[str], None]) -> None:
    space = search.session.space
    for note in space.notes:
        say(f"note: {note}")
    s, done = search.session.settings, search.done()
    what = f"{s.model_path} on {s.device}, space {space.name!r} ({space.size:,} configurations)"
    if done:
        say(f"study {search.request.study_name!r} (resumed, {done} of {s.trials} trials done): "
            f"{what}")  # fmt: skip
    else:
        say(f"study {search.request.study_name!r}: {what}, {s.trials} trials")


def trial_runners(args: argparse.Namespace, device: str) -> list[TrialRunner]:
    """This process's trial runners: one per --jobs, the warm host or cold processes (or the
    runner $AUTOTUNE_TRIAL_RUNNER names)."""
    from autotune.trials import SubprocessRunner, WarmHostRunner

    cores = _core_sets(args.jobs, device)
    replaced = [options.trial_runner() for _ in cores]
    if all(replaced):
        return [r for r in replaced if r is not None]
    kind = WarmHostRunner if args.trial_host == "warm" else SubprocessRunner
    return [kind(cores=c) for c in cores]


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
    cores = sorted(os.sched_getaffinity(0))
    if jobs > len(cores):
        raise UsageError(
            f"--jobs {jobs} is more than the {len(cores)} CPU cores this process may use; "
            f"pass --jobs {len(cores)} or fewer (each job gets cores of its own)."
        )
    share = len(cores) // jobs
    return [cores[i * share : (i + 1) * share] for i in range(jobs)]
