"""Every option of ``autotune search``, in the order ``--help`` shows them: its flag, type (a
rule of :mod:`autotune._rules`, named; the command line applies it), default, metavar, choices
and help. The study settings among them take their defaults from :mod:`autotune._settings_table`.
The command line builds search's parser from this table, the other subcommands take the options
they share with search from it (with their own help where it differs), and a study file's keys
are these options. Standard library only."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from autotune import _argtypes as argtypes
from autotune._settings_table import DEFAULT, EFFORTS, MEASURE_SECONDS

STORAGE_ENV = "AUTOTUNE_STORAGE"
TRIAL_HOSTS = ("preloaded", "fresh")
DEFAULT_STORAGE = "sqlite:///autotune.db"


@dataclass(frozen=True)
class Option:
    """One option: ``kind`` names the rule that reads its value (``positive_int``...), None
    for a string; ``action`` is ``store_true``/``store_false`` for a switch."""

    flag: str
    help: str
    aliases: tuple[str, ...] = ()  # former flags: still read, with a note naming this one
    dest: str | None = None
    action: str | None = None
    kind: str | None = None
    choices: tuple[str, ...] | None = None
    default: Any = None
    metavar: str | None = None

    @property
    def name(self) -> str:
        """Its destination: ``--compile-budget`` is ``compile_budget``."""
        return self.dest or self.flag.lstrip("-").replace("-", "_")


SEARCH_OPTIONS: tuple[Option, ...] = (
    Option(
        "--trials",
        kind="positive_int",
        default=DEFAULT["trials"],
        help=("trial budget of the study, baselines excluded; a later run may raise it"),
    ),
    Option(
        "--timeout",
        kind="positive_float",
        metavar="SECONDS",
        help=(
            "wall clock of this whole command: probes, trials and finalists (these run on "
            "what time is left, or are skipped with a note)"
        ),
    ),
    Option(
        "--compile-budget",
        kind="positive_float",
        default=DEFAULT["compile_budget_s"],
        metavar="SECONDS",
        help=("per trial: a trial still compiling or running after it is killed (timeout)"),
    ),
    Option(
        "--compile-budget-factor",
        kind="non_negative_float",
        default=DEFAULT["compile_budget_factor"],
        metavar="K",
        help=(
            "once default torch.compile's compile time is known, stop a search trial still "
            "compiling after K times it (plus the default's run time; at least 60 s, at most "
            "--compile-budget); 0 keeps --compile-budget alone"
        ),
    ),
    Option(
        "--start-from",
        aliases=("--warm-start-from",),
        metavar="STUDY",
        help=(
            "start from an earlier study (the same model elsewhere, or a similar model): its "
            "best configs are measured first, and where the space and objective match, the "
            "sampler is told its results"
        ),
    ),
    Option(
        "--start-from-storage",
        aliases=("--warm-start-storage",),
        metavar="URL",
        help=("where the --start-from study is (default: --storage)"),
    ),
    Option(
        "--start-from-top",
        aliases=("--warm-start-top",),
        kind="positive_int",
        default=5,
        metavar="K",
        help=("how many of its best configs --start-from queues"),
    ),
    Option(
        "--effort",
        choices=tuple(EFFORTS),
        help=(
            "set the space, trials, compile budget and finalists together: quick (the quick "
            "space, presets and a few trials: minutes), default, thorough (the full space "
            "with trials sized from it); options given explicitly win"
        ),
    ),
    Option(
        "--memory-budget",
        kind="size",
        metavar="SIZE",
        help=(
            "peak memory a trial may use (e.g. 8GiB, 500MB): above it a trial is infeasible "
            "(CUDA: max allocated; CPU: peak RSS of the trial process)"
        ),
    ),
    Option(
        "--finalists",
        kind="non_negative_int",
        default=DEFAULT["finalists"],
        metavar="N",
        help=(
            "re-measure the N best configs and default torch.compile in fresh processes, cold"
            " and warm, before choosing (0 skips)"
        ),
    ),
    Option(
        "--preset-finalists",
        choices=("best", "all"),
        default=DEFAULT["preset_finalists"],
        help=(
            "which of the space's measured presets are re-measured with the finalists: the "
            "best one (default), or all of them, to see the tuned config against every preset"
            " in the same round"
        ),
    ),
    Option(
        "--no-prune",
        dest="prune",
        action="store_false",
        help=(
            "time every trial for the whole --measure-seconds and search on whatever the "
            "presets measured; by default a sampled trial times a quarter of "
            "--measure-seconds first and goes on only if its median speedup reaches the best "
            "trial's lower quartile, one whose running median is clearly (95%% confidence) "
            "below it stops timing after a few rounds, no config is sampled once default "
            "compile and every preset ran clearly slower than eager, and no finalist is "
            "re-measured when every candidate did"
        ),
    ),
    Option(
        "--save-cache",
        action="store_true",
        help=(
            "after writing the file, ship what skips the cold compile beside it: the compile "
            "cache of its config (NAME.DEVICE.cache.tar.gz) and, where the winner compiles "
            "the whole model as one graph, an AOTInductor package of it (NAME.DEVICE.pt2, "
            "checked against eager first; a note says why not otherwise); autotune.apply "
            "loads them"
        ),
    ),
    Option(
        "--save-aot",
        action="store_true",
        help=("after writing the file, write the AOTInductor package alone (no cache archive)"),
    ),
    Option(
        "--remeasure",
        action="store_true",
        help=("measure the finalists again even when a finished round of them is recorded"),
    ),
    Option(
        "--space",
        metavar="NAME_OR_PATH",
        help=(
            "a built-in space ({builtin_spaces}) or a .toml path (default: the space named "
            "after the device)"
        ),
    ),
    Option(
        "--study",
        metavar="NAME",
        help=("study name (default: MODEL-DEVICE)"),
    ),
    Option(
        "--storage",
        metavar="URL",
        help=(
            f"SQLAlchemy URL of Optuna's and autotune's tables; PostgreSQL: "
            f"postgresql+psycopg://USER:PASSWORD@HOST/DB (pip install 'autotune[postgres]'); "
            f"default: ${STORAGE_ENV}, else {DEFAULT_STORAGE}. Passwords are never printed"
        ),
    ),
    Option(
        "--out",
        default="best_config.json",
        metavar="PATH",
        help=("best-config file to write"),
    ),
    Option(
        "--device",
        kind="device",
        metavar="cpu|cuda|cuda:N",
        help=("where trials run (default: cuda if available, else cpu)"),
    ),
    Option(
        "--objective",
        choices=("latency", "throughput", "amortized"),
        default=DEFAULT["objective"],
        help=(
            "latency: steady-state speedup over eager; throughput: samples per second over "
            "--batch-sizes; amortized: the compile time charged to --calls N calls"
        ),
    ),
    Option(
        "--calls",
        kind="positive_int",
        metavar="N",
        help=("with --objective amortized: the calls the compile must pay back"),
    ),
    Option(
        "--batch-sizes",
        kind="positive_ints",
        metavar="B,B,...",
        help=(
            "with --objective throughput: batch sizes to search (the model file's "
            "get_inputs(device, batch_size) builds each)"
        ),
    ),
    Option(
        "--max-latency-ms",
        kind="positive_float",
        metavar="MS",
        help=("with --objective throughput: a config whose call takes longer is infeasible"),
    ),
    Option(
        "--pareto",
        action="store_true",
        help=(
            "multi-objective study: latency against compile time (and, with --pareto-axes, "
            "memory); prints the Pareto front, --pick chooses from it"
        ),
    ),
    Option(
        "--pareto-axes",
        metavar="AXES",
        help=("with --pareto: latency,compile (default) or latency,compile,memory"),
    ),
    Option(
        "--pick",
        metavar="RULE",
        help=(
            "with --pareto: a goal (fastest, min-compile, min-memory; default fastest) and "
            "limits, quoted, e.g. 'fastest,compile<=60' or 'min-compile,speedup>=1.2'"
        ),
    ),
    Option(
        "--charge-warm-compile",
        aliases=("--warm-start",),
        action="store_true",
        help=(
            "amortized objective and --pick: charge the warm compile (a restarted process "
            "reusing its cache) instead of the cold one (a new machine)"
        ),
    ),
    Option(
        "--workload",
        choices=("infer", "train"),
        default=DEFAULT["workload"],
        help=(
            "infer: eval() under no_grad; train: one training step (forward, loss, backward, "
            "optimizer step), see docs/model-file.md"
        ),
    ),
    Option(
        "--scope",
        choices=("search", "whole"),
        default=DEFAULT["scope"],
        help=(
            "search: probe the model's parts and search which to compile (whole, regional "
            "blocks, children, some kept eager); whole: compile the whole model only"
        ),
    ),
    Option(
        "--allow-numerics-changes",
        action="store_true",
        help=(
            "also search the space's [numerics] knobs (fast math etc.), held to a 10x looser "
            "correctness tolerance"
        ),
    ),
    Option(
        "--accuracy",
        kind="accuracy",
        metavar="SPEC",
        help=(
            "the accuracy contract a config that changes numerics on purpose must meet "
            "against eager fp32, e.g. 'cosine>=0.999', 'max_abs<=1e-2,cosine>=0.999', "
            "'rtol=1e-2,atol=1e-3' or 'accuracy>=0.99' (the model file's accuracy(output, "
            "reference)); it searches the space's [precision] knobs (bf16 autocast, matmul "
            "precision), a backend's bf16 and the [numerics] knobs under it. Without it "
            "nothing that changes numerics is searched"
        ),
    ),
    Option(
        "--seed",
        kind="seed",
        default=DEFAULT["seed"],
        help=("seeds the sampler, the weights and the inputs"),
    ),
    Option(
        "--sampler",
        choices=("tpe", "random"),
        default=DEFAULT["sampler"],
        help=("Optuna sampler"),
    ),
    Option(
        "--measure-seconds",
        kind="positive_float",
        default=MEASURE_SECONDS,
        metavar="SECONDS",
        help=("interleaved eager/compiled timing per trial"),
    ),
    Option(
        "--precision",
        kind="fraction",
        default=DEFAULT["finalist_precision"],
        metavar="F",
        help=(
            "finalists time past --measure-seconds until their median speedup is known within"
            " +-F (95%% confidence), for at most 5x as long; 0 turns it off"
        ),
    ),
    Option(
        "--jobs",
        kind="positive_int",
        default=1,
        help=("trials run at once (CPU only; each job gets CPU cores of its own)"),
    ),
    Option(
        "--trial-host",
        kind="trial_host",
        choices=TRIAL_HOSTS,
        default="preloaded",
        help=(
            "preloaded: fork each trial from a host process that already imported torch and "
            "Inductor; fresh: a new Python process per trial"
        ),
    ),
    Option(
        "--cache-dir",
        metavar="DIR",
        help=(
            "kernel cache shared by the study's trials on this machine (default: "
            "$AUTOTUNE_CACHE_DIR, else ~/.cache/autotune/STUDY-ID, one per study); a folder "
            "of autotune's own: a new or empty one is created and marked, one holding other "
            "files is refused"
        ),
    ),
    Option(
        "--cache-limit",
        kind="size",
        default="20GiB",
        metavar="SIZE",
        help=(
            "past this size, the kernel cache's oldest files (untouched for an hour) are removed"
        ),
    ),
    Option(
        "--allow-version-mismatch",
        action="store_true",
        help=(
            "join even when this torch or triton differs from the study's (each trial records"
            " the versions it ran with)"
        ),
    ),
    Option(
        "--trust-model-path",
        action="store_true",
        help=(
            "run the model file even when its content differs from the one the study was "
            "created with (its SHA-256 is stored with the study)"
        ),
    ),
    Option(
        "--no-worker",
        action="store_true",
        help=(
            "only create the study (settings, baselines queued) and run no trial: start "
            "`autotune worker` processes, then `autotune finalize` (the Slurm/Kubernetes "
            "create step)"
        ),
    ),
    Option(
        "--for-device",
        metavar="NAME",
        help=(
            "when the study's trials ran on several kinds of hardware: the device name the "
            "file is for (default: this machine's)"
        ),
    ),
    Option(
        "--quiet",
        action="store_true",
        help=(
            "print only the decision: no trial lines, notes or live panel (errors still go to"
            " stderr)"
        ),
    ),
    Option(
        "--debug",
        action="store_true",
        help=("show tracebacks"),
    ),
)

BY_FLAG = {option.flag: option for option in SEARCH_OPTIONS}
# Former names of options (their study-file keys and keyword arguments) -> today's: "warm"
# now means one thing, a compile that finds its cache filled.
RENAMED = {
    former.lstrip("-").replace("-", "_"): option.name
    for option in SEARCH_OPTIONS
    for former in option.aliases
}


def add(p: argparse.ArgumentParser, flag: str, **overrides: Any) -> None:
    """Adds the option ``flag`` as ``autotune search`` defines it (this table: type, default,
    metavar, choices, help); ``overrides`` replace what this subcommand says
    differently (usually ``help``)."""
    option = BY_FLAG[flag]
    kwargs: dict[str, Any] = {"dest": option.name, "help": option.help}
    if option.action is not None:
        kwargs["action"] = option.action
    else:
        if option.kind is not None:
            kwargs["type"] = getattr(argtypes, option.kind)
        if option.choices is not None:
            kwargs["choices"] = option.choices
        if option.default is not None:
            kwargs["default"] = option.default
        if option.metavar is not None:
            kwargs["metavar"] = option.metavar
    kwargs.update(overrides)
    p.add_argument(flag, **kwargs)
    for former in option.aliases:  # read as before, said once, left out of --help
        base = p._registry_get("action", kwargs.get("action"), kwargs.get("action"))
        quiet = {k: v for k, v in kwargs.items() if k not in ("help", "default", "action")}
        action = argtypes.renamed(base, flag)
        p.add_argument(former, help=argparse.SUPPRESS, default=argparse.SUPPRESS,
                       action=action, **quiet)  # fmt: skip
