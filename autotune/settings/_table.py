"""Every option of ``autotune search``, declared once, in the order ``--help`` shows them: its
flag, kind of value (:mod:`autotune.settings._kinds`), default, metavar, choices and help; the
study setting it sets (a :class:`~autotune.settings.StudySettings` field) and whether that may
change when a study is resumed; whether a study file or ``autotune.tune`` may set it. The
command line's parsers, study files, ``tune()``'s keywords, the stored settings' defaults and
the resume rules are all derived from this table: adding a setting is one row here, plus its
use. Standard library only: the command line reads it before anything heavy is imported."""

from __future__ import annotations

from typing import Any

from autotune.measure import MEASURE_SECONDS
from autotune.settings._option import (
    DEFAULT_STORAGE,
    EFFORTS,
    OBJECTIVES,
    PRESET_FINALISTS,
    SAMPLERS,
    SCOPES,
    STORAGE_ENV,
    WORKLOADS,
    Option,
)
from autotune.settings._process import PROCESS_OPTIONS

SEARCH_OPTIONS: tuple[Option, ...] = (
    Option(
        "model",
        field="model_path",
        annotation="str",
        stored="text",
        label="the model file",
        in_files=False,  # a study file's `model` is relative to it: the file's reader takes it
        help=(
            "model file (*.py) defining get_model(device) and get_inputs(device), or a study "
            "file (*.toml) naming one and the study's options (options given here override it)"
        ),
    ),
    Option(
        "--trials",
        default=20,
        field="trials",
        annotation="int",
        changeable=True,
        kind="positive_int",
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
        default=600.0,
        field="compile_budget",
        annotation="float",
        kind="positive_float",
        metavar="SECONDS",
        help=("per trial: a trial still compiling or running after it is killed (timeout)"),
    ),
    Option(
        "--compile-budget-factor",
        default=5.0,
        field="compile_budget_factor",
        annotation="float",
        changeable=True,
        kind="non_negative_float",
        metavar="K",
        help=(
            "once default torch.compile's compile time is known, stop a search trial still "
            "compiling after K times it (plus the default's run time; at least 60 s, at most "
            "--compile-budget); 0 keeps --compile-budget alone"
        ),
    ),
    Option(
        "--start-from",
        metavar="STUDY",
        help=(
            "start from an earlier study (the same model elsewhere, or a similar model): its "
            "best configs are measured first, and where the space and objective match, the "
            "sampler is told its results"
        ),
    ),
    Option(
        "--start-from-storage",
        metavar="URL",
        help=("where the --start-from study is (default: --storage)"),
    ),
    Option(
        "--start-from-top",
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
        field="memory_budget_bytes",
        annotation="int | None",
        stored="bytes",
        kind="size",
        metavar="SIZE",
        help=(
            "peak memory a trial may use (e.g. 8GiB, 500MB): above it a trial is infeasible "
            "(CUDA: max allocated; CPU: peak RSS of the trial process)"
        ),
    ),
    Option(
        "--finalists",
        default=3,
        field="finalists",
        annotation="int",
        changeable=True,
        kind="non_negative_int",
        metavar="N",
        help=(
            "re-measure the N best configs and default torch.compile in fresh processes, cold"
            " and warm, before choosing (0 skips)"
        ),
    ),
    Option(
        "--confirm",
        default=2,
        field="confirm",
        annotation="int",
        changeable=True,
        kind="confirm",
        metavar="N",
        help=(
            "once the finalists chose, measure the chosen config and default torch.compile "
            "again in N fresh processes each (ABBA), apart from the choice: the file claims "
            "what they measured, and says inconclusive (shipping the cheaper side) when they "
            "do not resolve its lead (latency objective; 0 skips: the file claims the round "
            "that chose it)"
        ),
    ),
    Option(
        "--preset-finalists",
        default="best",
        field="preset_finalists",
        annotation="str",
        changeable=True,
        choices=PRESET_FINALISTS,
        help=(
            "which of the space's measured presets are re-measured with the finalists: the "
            "best one (default), or all of them, to see the tuned config against every preset"
            " in the same round"
        ),
    ),
    Option(
        "--no-prune",
        default=True,
        field="prune",
        annotation="bool",
        changeable=True,
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
        annotation="bool",
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
        annotation="bool",
        action="store_true",
        help=("after writing the file, write the AOTInductor package alone (no cache archive)"),
    ),
    Option(
        "--remeasure",
        annotation="bool",
        in_files=False,
        action="store_true",
        help=("measure the finalists again even when a finished round of them is recorded"),
    ),
    Option(
        "--space",
        field="space_hash",
        annotation="str",
        stored="text",
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
        annotation="str",
        default="best_config.json",
        metavar="PATH",
        help=("best-config file to write"),
    ),
    Option(
        "--device",
        field="device",
        annotation="str",
        kind="device",
        metavar="cpu|cuda|cuda:N",
        help=("where trials run (default: cuda if available, else cpu)"),
    ),
    Option(
        "--objective",
        default="latency",
        field="objective",
        annotation="str",
        choices=OBJECTIVES,
        help=(
            "latency: steady-state speedup over eager; throughput: samples per second over "
            "--batch-sizes; amortized: the compile time charged to --calls N calls"
        ),
    ),
    Option(
        "--calls",
        field="calls",
        annotation="int | None",
        kind="positive_int",
        metavar="N",
        help=("with --objective amortized: the calls the compile must pay back"),
    ),
    Option(
        "--batch-sizes",
        field="batch_sizes",
        annotation="list[int] | None",
        stored="ints",
        kind="positive_ints",
        metavar="B,B,...",
        help=(
            "with --objective throughput: batch sizes to search (the model file's "
            "get_inputs(device, batch_size) builds each)"
        ),
    ),
    Option(
        "--traffic",
        field="traffic",
        annotation="list[dict[str, Any]] | None",
        stored="shapes",
        metavar="FILE",
        in_tune=False,
        elsewhere="autotune.tune takes the requests themselves, traffic=[(inputs, weight), ...]",
        help=(
            "a recorded traffic trace, CSV or Parquet: a count column and one column per "
            "argument of the model file's get_request(device, **shape); each shape is a "
            "request timed on its own, ranked by the traffic's weighted mean latency"
        ),
    ),
    Option(
        "--max-startup-s",
        field="max_startup_s",
        annotation="float | None",
        kind="positive_float",
        metavar="SECONDS",
        help=(
            "a config whose start-up (compiling every shape the traffic brings, else its "
            "inputs) takes longer is infeasible (startup_budget)"
        ),
    ),
    Option(
        "--max-latency-ms",
        field="max_latency_s",
        annotation="float | None",
        kind="positive_float",
        metavar="MS",
        help=("with --objective throughput: a config whose call takes longer is infeasible"),
    ),
    Option(
        "--pareto",
        field="pareto",
        annotation="list[str] | None",
        stored="axes",
        action="store_true",
        help=(
            "multi-objective study: latency against compile time (and, with --pareto-axes, "
            "memory); prints the Pareto front, --pick chooses from it"
        ),
    ),
    Option(
        "--pareto-axes",
        field="pareto",
        metavar="AXES",
        help=("with --pareto: latency,compile (default) or latency,compile,memory"),
    ),
    Option(
        "--pick",
        field="pick",
        annotation="str | None",
        stored="pick_rule",
        changeable=True,
        metavar="RULE",
        help=(
            "with --pareto: a goal (fastest, min-compile, min-memory; default fastest) and "
            "limits, quoted, e.g. 'fastest,compile<=60' or 'min-compile,speedup>=1.2'"
        ),
    ),
    Option(
        "--charge-warm-compile",
        default=False,
        field="charge_warm_compile",
        annotation="bool",
        changeable=True,
        action="store_true",
        help=(
            "amortized objective and --pick: charge the warm compile (a restarted process "
            "reusing its cache) instead of the cold one (a new machine)"
        ),
    ),
    Option(
        "--workload",
        default="infer",
        field="workload",
        annotation="str",
        choices=WORKLOADS,
        help=(
            "infer: eval() under no_grad; train: one training step (forward, loss, backward, "
            "optimizer step); generate: generate() on each request, greedy, the searched "
            "config compiling the decode steps; see docs/model-file.md"
        ),
    ),
    Option(
        "--scope",
        default="search",
        field="scope",
        annotation="str",
        choices=SCOPES,
        help=(
            "search: probe the model's parts and search which to compile (whole, regional "
            "blocks, children, some kept eager); whole: compile the whole model only"
        ),
    ),
    Option(
        "--allow-numerics-changes",
        field="space_hash",
        action="store_true",
        help=(
            "also search the space's [numerics] knobs (fast math etc.), held to a 10x looser "
            "correctness tolerance"
        ),
    ),
    Option(
        "--accuracy",
        field="accuracy",
        annotation="str | None",
        kind="accuracy",
        metavar="SPEC",
        help=(
            "the accuracy contract a config that changes numerics on purpose must meet "
            "against eager fp32, e.g. 'cosine>=0.999', 'max_abs<=1e-2,cosine>=0.999', "
            "'rtol=1e-2,atol=1e-3' or 'accuracy>=0.99' (the model file's accuracy(output, "
            "reference)); for --workload generate, 'top1>=0.99' and 'cosine>=X' on eager's "
            "tokens teacher-forced through the config's decode; for train, 'loss_rel<=X' and "
            "'grad_cosine>=X'. It searches the space's [precision] knobs (bf16 autocast, "
            "matmul precision, bf16 weights, torchao int8 quantization), a backend's bf16 and "
            "the [numerics] knobs under it. Without it nothing that changes numerics is "
            "searched"
        ),
    ),
    Option(
        "--seed",
        default=0,
        field="seed",
        annotation="int",
        kind="seed",
        help=("seeds the sampler, the weights and the inputs"),
    ),
    Option(
        "--sampler",
        default="tpe",
        field="sampler",
        annotation="str",
        choices=SAMPLERS,
        help=("Optuna sampler"),
    ),
    Option(
        "--measure-seconds",
        field="measure",
        stored="object",
        kind="positive_float",
        default=MEASURE_SECONDS,
        metavar="SECONDS",
        help=("interleaved eager/compiled timing per trial"),
    ),
    Option(
        "--precision",
        default=0.02,
        field="finalist_precision",
        annotation="float | None",
        changeable=True,
        kind="fraction",
        metavar="F",
        help=(
            "finalists time past --measure-seconds until their median speedup is known within"
            " +-F (95%% confidence), for at most 5x as long; 0 turns it off"
        ),
    ),
)
# How this process runs, after what the study is: options that set no study setting.
SEARCH_OPTIONS += PROCESS_OPTIONS

BY_FLAG = {option.flag: option for option in SEARCH_OPTIONS}
BY_NAME = {option.name: option for option in SEARCH_OPTIONS}
# Each option's default, by its name (None: off, or derived).
DEFAULT: dict[str, Any] = {o.name: o.default for o in SEARCH_OPTIONS}
# What messages call each study setting: the first option that sets it.
LABELS: dict[str, str] = {}
for _option in SEARCH_OPTIONS:
    if _option.field is not None:
        LABELS.setdefault(_option.field, _option.label or _option.flag)
# What may change when a study is resumed: how many trials it runs and how the winner is
# chosen from them. Every other setting decides what a trial measures, so a trial measured
# under another value would not compare with the others.
CHANGEABLE = tuple(dict.fromkeys(o.field for o in SEARCH_OPTIONS if o.field and o.changeable))
# The setting each option sets: what a resumed study compares.
SETTINGS_OF = {o.name: o.field for o in SEARCH_OPTIONS if o.field is not None}


def changeable_options() -> str:
    """The options that may change on resume, for prose: ``--a, --b and --c``."""
    names = sorted({LABELS[field] for field in CHANGEABLE})
    return f"{', '.join(names[:-1])} and {names[-1]}"
