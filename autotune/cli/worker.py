"""``autotune worker --study NAME``: run trials of a study stored in a shared database.

Start one per GPU, on as many machines as you have, before or after the study is created
(``autotune search MODEL.py --storage URL --study NAME [--no-worker]``): each asks the study
for its next trial until the study's budget is met or --timeout passes. The study holds every
setting; a worker only says where it runs.
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from autotune import _process
from autotune._device import resolve_device
from autotune._printable import say
from autotune.cli import _options as options

if TYPE_CHECKING:
    from autotune.decide import Decision
    from autotune.reports.progress import Progress
    from autotune.search import Search

INTERRUPTED = (
    "the running trial was failed in the study (another worker retries it); every finished "
    "trial is saved."
)
TERMINATED_EXIT = 0  # SIGTERM is how Slurm and Kubernetes stop a worker: a clean stop


def add_parser(sub: argparse._SubParsersAction) -> options.Parser:
    p = options.add_subcommand(
        sub,
        "worker",
        help="run trials of a study shared in a database (one worker per GPU)",
        description="Join a study (created by `autotune search ... --storage URL`) and run its "
        "trials until its budget is met or --timeout passes. Everything the trials need comes "
        "from the study but the model file, which the worker's own --model names (a database "
        "never names code to run); the worker checks that its torch, triton and model file "
        "are the study's. SIGTERM fails the running trial (another worker retries it) and "
        "exits 0. With --out, the worker whose search ends the study also writes its "
        "best-config file, as `autotune finalize` would.",
    )
    options.add_study(p, "the study to join")
    options.add_storage(p)
    options.add_model(p, "this worker's trials run")
    options.add_device(
        p, "where this worker runs trials (default: the study's kind of device; with CUDA, "
        "CUDA_VISIBLE_DEVICES says which GPU)",
    )  # fmt: skip
    p.add_argument(
        "--gpus", type=options.argtype("gpu_list"), metavar="I,J,...",
        help="start one worker process per listed GPU (each sees only its GPU, through "
        "CUDA_VISIBLE_DEVICES) and wait for them",
    )  # fmt: skip
    options.add(
        p, "--timeout",
        help="wall clock of this worker: no trial starts after it, none runs past it",
    )  # fmt: skip
    options.add(
        p, "--out", default=None,
        help="when this worker's search ends the study (its budget met), wait for the trials "
        "other workers still run, choose the winner and write the best-config file here "
        "(finalists included), unless another worker is writing it; without --out, run "
        "`autotune finalize` once the workers are done",
    )  # fmt: skip
    options.add_trial_processes(p)
    options.add_joining(p)
    options.add_allow_unsafe(p, "the study's space")
    options.add_quiet(
        p, "print only the closing \"worker done\" line: no trial lines, notes or live panel "
        "(errors still go to stderr)",
    )  # fmt: skip
    options.add_debug(p)
    return p


def run(args: argparse.Namespace) -> int:
    if args.gpus:
        return _per_gpu(args)
    from autotune._deadline import Deadline
    from autotune.reports.progress import Progress
    from autotune.search import SearchRequest, join_search

    if args.out:
        options.require_folder("--out", args.out)  # before any trial, not after the last
    device = None
    if args.device:
        device = resolve_device(args.device, remedy="Pass --device of this machine.")
    request = SearchRequest(
        args.study, options.storage(args), None, deadline=Deadline.after(args.timeout),
        cache_dir=args.cache_dir, cache_limit_bytes=args.cache_limit, device=device,
        model_path=args.model,
        trust_model_path=args.trust_model_path,
        allow_version_mismatch=args.allow_version_mismatch,
        allow_unsafe_knobs=tuple(args.allow_unsafe_knobs),
    )  # fmt: skip
    progress = Progress(quiet=args.quiet)
    search = join_search(request, args.jobs, args.trial_host, progress.note)
    local, runners = search.session.local, search.runners
    search.show_in(progress, "worker")
    s = search.session.settings
    with progress:
        progress.note(
            f"worker for study {args.study!r} ({search.done()} of {s.trials} trials done): "
            f"{local.model_path} on {local.device}, space {search.session.space.name!r}"
        )
        if args.out:
            return _run_and_write(args, search, progress)
        try:
            search.run()
        finally:
            for runner in runners:
                runner.close()
    _say(f"worker done: {search.ended_text}")
    return 0


def _run_and_write(args: argparse.Namespace, search: Search, progress: Progress) -> int:
    """The worker's trials, then (if it ended the study) the file: one run_study call."""
    from autotune.reports import terminal
    from autotune.search import Finish, run_study

    finish = Finish(out=args.out, last_process=True, finalist_runner=options.trial_runner())

    def decided(decision: Decision) -> None:
        progress.finish()
        say(terminal.decision(decision, args.out), flush=True)

    outcome = run_study(search, finish, on_decision=decided)
    progress.finish()
    if outcome.decision is None:
        why = outcome.not_written or "no file was written: eager is not measured yet"
        _say(f"worker done: {search.ended_text}; {why}")
    else:
        _say(f"worker done: {search.ended_text}")
    return 0


def _per_gpu(args: argparse.Namespace) -> int:
    """One worker process per GPU, each seeing only its own GPU and its share of the CPU cores
    (its compiles then never crowd another GPU's); their lines are prefixed with
    the GPU. A signal to this process goes to every worker, and each stops cleanly (SIGTERM)
    when this process dies."""
    argv = _without_gpus(args.argv)
    procs, echoes = [], []
    shares = _core_shares(len(args.gpus))
    for gpu, cores in zip(args.gpus, shares, strict=True):
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu))
        proc = _process.start(
            [sys.executable, "-m", "autotune.cli", *argv, "--device", "cuda"], env=env,
            stdout=subprocess.PIPE, death_signal=signal.SIGTERM, before=_keep_to(cores),
        )  # fmt: skip
        echo = threading.Thread(target=_prefix, args=(proc.stdout, f"[gpu {gpu}] "), daemon=True)
        echo.start()
        procs.append(proc)
        echoes.append(echo)

    def forward(signum: int, frame: Any) -> None:
        for proc in procs:
            proc.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    for proc in procs:
        _process.wait(proc, None)
    codes = [_process.stop(proc) for proc in procs]
    for echo in echoes:  # every worker's last lines are printed before this process exits
        echo.join(timeout=5)
    return next((code for code in codes if code), 0)


def _core_shares(workers: int) -> list[set[int] | None]:
    """This process's CPU cores split evenly among ``workers`` (None each where there are
    fewer cores than workers: they share them all, as before)."""
    from autotune.trials import split_cores, usable_cores

    return [set(share) or None for share in split_cores(usable_cores(), workers)]


def _keep_to(cores: set[int] | None) -> Callable[[], None] | None:
    """In a GPU's worker, before it runs: keep to its cores."""
    if not cores:
        return None
    return functools.partial(os.sched_setaffinity, 0, cores)


def _without_gpus(argv: list[str]) -> list[str]:
    """The command line of one GPU's worker: the same, less --gpus and --device."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--gpus", "--device"):
            skip = True
        elif not arg.startswith(("--gpus=", "--device=")):
            out.append(arg)
    return out


def _prefix(stream: IO[bytes] | None, prefix: str) -> None:
    assert stream is not None
    for line in stream:
        sys.stdout.write(prefix + line.decode(errors="replace"))
        sys.stdout.flush()


def _say(line: str) -> None:
    say(line, flush=True)
