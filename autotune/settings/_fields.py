"""The settings the table declares, as the typed fields of the classes that carry
them down the flow: written by ``python -m autotune.settings._generate`` from
:data:`~autotune.settings.SEARCH_OPTIONS` (each row's name or ``field``, ``annotation`` and
default). Do not edit: change the table's row (or the generator's carriers) and run it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from autotune.settings._table import DEFAULT


@dataclass(frozen=True, kw_only=True)
class StudyFields:
    """Every study setting an option of ``autotune search`` sets, in the table's order; a
    study's stored settings (:class:`StudySettings`) are these and what the
    study was made with."""

    # model: model file (*.py) defining get_model(device) and get_inputs(device), or a study file
    # (*.toml) naming one and the study's options (options given here override it)
    model_path: str
    # --trials: trial budget of the study, baselines excluded; a later run may raise it
    trials: int = DEFAULT["trials"]
    # --compile-budget: per trial: a trial still compiling or running after it is killed (timeout)
    compile_budget: float = DEFAULT["compile_budget"]
    # --compile-budget-factor: once default torch.compile's compile time is known, stop a search
    # trial still compiling after K times it (plus the default's run time; at least 60 s, at most
    # --compile-budget); 0 keeps --compile-budget alone
    compile_budget_factor: float = DEFAULT["compile_budget_factor"]
    # --memory-budget: peak memory a trial may use (e.g. 8GiB, 500MB): above it a trial is
    # infeasible (CUDA: max allocated; CPU: peak RSS of the trial process)
    memory_budget_bytes: int | None = None
    # --finalists: re-measure the N best configs and default torch.compile in fresh processes, cold
    # and warm, before choosing (0 skips)
    finalists: int = DEFAULT["finalists"]
    # --confirm: once the finalists chose, measure the chosen config and default torch.compile
    # again in N fresh processes each (ABBA), apart from the choice: the file claims what they
    # measured, and says inconclusive (shipping the cheaper side) when they do not resolve its lead
    # (latency objective; 0 skips: the file claims the round that chose it)
    confirm: int = DEFAULT["confirm"]
    # --preset-finalists: which of the space's measured presets are re-measured with the finalists:
    # the best one (default), or all of them, to see the tuned config against every preset in the
    # same round
    preset_finalists: str = DEFAULT["preset_finalists"]
    # --no-prune: time every trial for the whole --measure-seconds and search on whatever the
    # presets measured; by default a sampled trial times a quarter of --measure-seconds first and
    # goes on only if its median speedup reaches the best trial's lower quartile, one whose running
    # median is clearly (95% confidence) below it stops timing after a few rounds, no config is
    # sampled once default compile and every preset ran clearly slower than eager, and no finalist
    # is re-measured when every candidate did
    prune: bool = DEFAULT["prune"]
    # --space: a built-in space ({builtin_spaces}) or a .toml path (default: the space named after
    # the device)
    space_hash: str
    # --device: where trials run (default: cuda if available, else cpu)
    device: str
    # --objective: latency: steady-state speedup over eager; throughput: samples per second over
    # --batch-sizes; amortized: the compile time charged to --calls N calls
    objective: str = DEFAULT["objective"]
    # --calls: with --objective amortized: the calls the compile must pay back
    calls: int | None = None
    # --batch-sizes: with --objective throughput: batch sizes to search (the model file's
    # get_inputs(device, batch_size) builds each)
    batch_sizes: list[int] | None = None
    # --traffic: a recorded traffic trace, CSV or Parquet: a count column and one column per
    # argument of the model file's get_request(device, **shape); each shape is a request timed on
    # its own, ranked by the traffic's weighted mean latency
    traffic: list[dict[str, Any]] | None = None
    # --max-startup-s: a config whose start-up (compiling every shape the traffic brings, else its
    # inputs) takes longer is infeasible (startup_budget)
    max_startup_s: float | None = None
    # --max-latency-ms: with --objective throughput: a config whose call takes longer is infeasible
    max_latency_s: float | None = None
    # --pareto: multi-objective study: latency against compile time (and, with --pareto-axes,
    # memory); prints the Pareto front, --pick chooses from it
    pareto: list[str] | None = None
    # --pick: with --pareto: a goal (fastest, min-compile, min-memory; default fastest) and limits,
    # quoted, e.g. 'fastest,compile<=60' or 'min-compile,speedup>=1.2'
    pick: str | None = None
    # --charge-warm-compile: amortized objective and --pick: charge the warm compile (a restarted
    # process reusing its cache) instead of the cold one (a new machine)
    charge_warm_compile: bool = DEFAULT["charge_warm_compile"]
    # --workload: infer: eval() under no_grad; train: one training step (forward, loss, backward,
    # optimizer step); generate: generate() on each request, greedy, the searched config compiling
    # the decode steps; see docs/model-file.md
    workload: str = DEFAULT["workload"]
    # --scope: search: probe the model's parts and search which to compile (whole, regional blocks,
    # children, some kept eager); whole: compile the whole model only
    scope: str = DEFAULT["scope"]
    # --accuracy: the accuracy contract a config that changes numerics on purpose must meet against
    # eager fp32, e.g. 'cosine>=0.999', 'max_abs<=1e-2,cosine>=0.999', 'rtol=1e-2,atol=1e-3' or
    # 'accuracy>=0.99' (the model file's accuracy(output, reference)); for --workload generate,
    # 'top1>=0.99' and 'cosine>=X' on eager's tokens teacher-forced through the config's decode;
    # for train, 'loss_rel<=X' and 'grad_cosine>=X'. It searches the space's [precision] knobs
    # (bf16 autocast, matmul precision, bf16 weights, torchao int8 quantization), a backend's bf16
    # and the [numerics] knobs under it. Without it nothing that changes numerics is searched
    accuracy: str | None = None
    # --seed: seeds the sampler, the weights and the inputs
    seed: int = DEFAULT["seed"]
    # --sampler: Optuna sampler
    sampler: str = DEFAULT["sampler"]
    # --precision: finalists time past --measure-seconds until their median speedup is known within
    # +-F (95% confidence), for at most 5x as long; 0 turns it off
    finalist_precision: float | None = DEFAULT["precision"]


@dataclass(frozen=True, kw_only=True)
class TrialFields:
    """The settings a trial process runs with (``autotune.trials.TrialSpec`` is these, the
    config and how the trial is run)."""

    # model: model file (*.py) defining get_model(device) and get_inputs(device), or a study file
    # (*.toml) naming one and the study's options (options given here override it)
    model_path: str
    # --device: where trials run (default: cuda if available, else cpu)
    device: str
    # --workload: infer: eval() under no_grad; train: one training step (forward, loss, backward,
    # optimizer step); generate: generate() on each request, greedy, the searched config compiling
    # the decode steps; see docs/model-file.md
    workload: str = DEFAULT["workload"]
    # --seed: seeds the sampler, the weights and the inputs
    seed: int = DEFAULT["seed"]
    # --cache-dir: kernel cache shared by the study's trials on this machine (default:
    # $AUTOTUNE_CACHE_DIR, else ~/.cache/autotune/STUDY-ID, one per study); a folder of autotune's
    # own: a new or empty one is created and marked, one holding other files is refused
    cache_dir: str | None = None
    # --accuracy: the accuracy contract a config that changes numerics on purpose must meet against
    # eager fp32, e.g. 'cosine>=0.999', 'max_abs<=1e-2,cosine>=0.999', 'rtol=1e-2,atol=1e-3' or
    # 'accuracy>=0.99' (the model file's accuracy(output, reference)); for --workload generate,
    # 'top1>=0.99' and 'cosine>=X' on eager's tokens teacher-forced through the config's decode;
    # for train, 'loss_rel<=X' and 'grad_cosine>=X'. It searches the space's [precision] knobs
    # (bf16 autocast, matmul precision, bf16 weights, torchao int8 quantization), a backend's bf16
    # and the [numerics] knobs under it. Without it nothing that changes numerics is searched
    accuracy: str | None = None
    # --traffic: a recorded traffic trace, CSV or Parquet: a count column and one column per
    # argument of the model file's get_request(device, **shape); each shape is a request timed on
    # its own, ranked by the traffic's weighted mean latency
    traffic: list[dict[str, Any]] | None = None


@dataclass(frozen=True, kw_only=True)
class RequestFields:
    """What a process was told about where it runs and what it trusts, each None (or False)
    where not told (``autotune.search.SearchRequest`` is these and the study's name,
    storage and settings)."""

    # model: model file (*.py) defining get_model(device) and get_inputs(device), or a study file
    # (*.toml) naming one and the study's options (options given here override it)
    model_path: str | None = None
    # --device: where trials run (default: cuda if available, else cpu)
    device: str | None = None
    # --cache-dir: kernel cache shared by the study's trials on this machine (default:
    # $AUTOTUNE_CACHE_DIR, else ~/.cache/autotune/STUDY-ID, one per study); a folder of autotune's
    # own: a new or empty one is created and marked, one holding other files is refused
    cache_dir: str | None = None
    # --trust-model-path: run the model file even when its content differs from the one the study
    # was created with (its SHA-256 is stored with the study)
    trust_model_path: bool = False
    # --allow-version-mismatch: join even when this torch or triton differs from the study's (each
    # trial records the versions it ran with)
    allow_version_mismatch: bool = False


@dataclass(frozen=True, kw_only=True)
class FinishFields:
    """How a search ends once its trials are done: the file it writes and what ships
    beside it (``autotune.search.Finish`` is these and who runs the finalists)."""

    # --out: best-config file to write
    out: str = DEFAULT["out"]
    # --remeasure: measure the finalists again even when a finished round of them is recorded
    remeasure: bool = False
    # --for-device: when the study's trials ran on several kinds of hardware: the device name the
    # file is for (default: this machine's)
    for_device: str | None = None
    # --save-cache: after writing the file, ship what skips the cold compile beside it: the compile
    # cache of its config (NAME.DEVICE.cache.tar.gz) and, where the winner compiles the whole model
    # as one graph, an AOTInductor package of it (NAME.DEVICE.pt2, checked against eager first; a
    # note says why not otherwise); autotune.apply loads them
    save_cache: bool = False
    # --save-aot: after writing the file, write the AOTInductor package alone (no cache archive)
    save_aot: bool = False
