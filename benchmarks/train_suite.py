"""The training suite: per model, real searches of the train workload, then the tuned configs
against eager, default compile and the best preset, applied as production applies them and
timed side by side in one process.

    python benchmarks/train_suite.py [--device cpu] [--trials 8] [--models llama,vit,mlp]
        [--accuracy 'loss_rel<=0.02,grad_cosine>=0.99'] [--seconds 20]
        [--out benchmarks/results/train_suite_cpu.md]

Per model (benchmarks/models/*_train.py) it runs ``autotune search --workload train
--preset-finalists all`` twice: fp32-exact (no contract) and under the training contract
(``--accuracy``); the second only where the CPU computes bf16 natively (``avx512_bf16`` or
``amx_bf16`` in /proc/cpuinfo), else the report says so. Each search's finalist round is read
back from its storage (suite.py's reader). Then, in this one process: eager fp32, default
torch.compile (optimizer eager), the best preset of the contract round (else the exact one's),
the tuned fp32-exact config and the tuned contract config, each on its own deep copy of the
seeded model with its own optimizer, compiled with ``autotune.apply`` and
``autotune.apply_optimizer`` (the best-config file the search wrote), its first 10 steps run
from the same seed (loss drift against eager fp32), then all timed interleaved for --seconds
(median step). Peak memory is what trials measure on CPU (autotune.measure.memory: peak RSS,
reset before the step), and the step's peak above the resident set before it (freed memory
returned to the system first with malloc_trim). For the Llama, a memory front:
activation_memory_budget 1.0 / 0.5 / 0.2 on the tuned contract config (default compile if it
emitted none). Writes the markdown report to --out and the raw figures beside it (.json), and
keeps each search's study and best-config file beside it too (``<out>_<model>-<kind>.db``,
``.best.json``).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import ctypes
import dataclasses
import datetime
import gc
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from suite import STUDY, ModelRun, _read_round, device_name, geomean, over_default

import autotune
from autotune._atomic import write_text
from autotune.decide import decide
from autotune.measure import memory
from autotune.workload import (
    build_calls,
    build_model,
    build_optimizer,
    count_units,
    load_model_file,
    train_step_function,
)

HERE = Path(__file__).resolve().parent
MODELS = {name: HERE / "models" / f"{name}_train.py" for name in ("llama", "vit", "mlp")}
CONTRACT = "loss_rel<=0.02,grad_cosine>=0.99"
BF16_FLAGS = ("avx512_bf16", "amx_bf16")
BUDGETS = (1.0, 0.5, 0.2)
DRIFT_STEPS = 10
MIN_ROUNDS = 5
SEED = 0
EAGER, DEFAULT = "eager fp32", "default torch.compile"
EXACT, TUNED = "tuned fp32-exact", "tuned under the contract"


@dataclass
class Search:
    """One search: its finalist round (suite.py's reading), the config its file holds, and
    per finalist (by brief) its config and its training errors in the round."""

    kind: str
    run: ModelRun
    emitted: dict[str, Any] | None  # the file's config (JSON form); None: do not compile
    finalists: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class Measured:
    """One variant, measured in this process."""

    label: str
    config: str
    step_ms: float | None = None
    q1_ms: float | None = None
    q3_ms: float | None = None
    rounds: int = 0
    first_step_s: float | None = None
    peak_rss_mib: float | None = None
    step_mib: float | None = None
    drift: float | None = None
    error: str | None = None


def bf16_flags(cpuinfo: str) -> list[str]:
    """The bf16 flags (``avx512_bf16``, ``amx_bf16``) of the first ``flags`` line of
    /proc/cpuinfo's text."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return [f for f in BF16_FLAGS if f in value.split()]
    return []


def drift(losses: list[float], reference: list[float]) -> float:
    """The largest relative difference of a variant's step losses from eager fp32's."""
    return max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(losses, reference, strict=True))


def run_search(name: str, kind: str, args: argparse.Namespace, tmp: Path) -> Search:
    # The study and its file are kept beside --out, for `autotune report` and `verify`.
    db = args.out.with_name(f"{args.out.stem}_{name}-{kind}.db")
    db.parent.mkdir(parents=True, exist_ok=True)
    db.unlink(missing_ok=True)
    storage, best = f"sqlite:///{db}", str(db.with_suffix(".best.json"))
    # A file with its own train_step is compiled whole (the search says so in a note).
    extra = ["--accuracy", args.accuracy] if kind == "contract" else []
    command = [
        sys.executable, "-m", "autotune.cli", "search", str(MODELS[name]), "--workload",
        "train", "--device", args.device, "--space", args.device.split(":")[0], "--trials",
        str(args.trials), "--preset-finalists", "all", "--study", STUDY, "--storage", storage,
        "--out", best, "--cache-dir", str(tmp / f"cache-{name}-{kind}"), "--quiet", *extra,
        *shlex.split(args.search_args),
    ]  # fmt: skip
    print(f"# {name}, {kind}: {shlex.join(command[1:])}", flush=True)
    started = time.monotonic()
    done = subprocess.run(command)
    if done.returncode != 0:
        raise SystemExit(
            f"train_suite: autotune search on {name} ({kind}) exited {done.returncode}"
        )
    run = _read_round(name, storage, time.monotonic() - started)
    decision = decide(storage, STUDY)
    emitted = decision.best.config.to_dict() if decision.best.config is not None else None
    finalists = {
        f.searched.brief: {
            "config": f.searched.config,
            **{k: (f.cold.accuracy or {}).get(k) for k in ("loss_rel", "grad_cosine")},
        }
        for f in decision.finalists or []
        if f.ok
    }
    return Search(kind, run, emitted, finalists)


def best_preset(search: Search) -> tuple[str, str, dict[str, Any]] | None:
    """The fastest preset of a finalist round: its label, brief and config."""
    presets = [r for r in search.run.rows if r.label.startswith("preset ")]
    if not presets:
        return None
    row = max(presets, key=lambda r: r.speedup)
    return row.label, row.brief, search.finalists[row.brief]["config"]


def step_memory(step: Callable[[], Any], device: str) -> tuple[float, float]:
    """Peak RSS during one step (MiB, as trials measure it) and its rise above the resident
    set before the step, freed heap memory returned to the system first (glibc's malloc_trim:
    the resident set then holds what is live). On CUDA: the peak allocated during the step and
    its rise above what was allocated before it."""
    gc.collect()
    if device.startswith("cuda"):  # CUDA: the allocator's own figures
        torch.cuda.synchronize(device)
        before = torch.cuda.memory_allocated(device)
        memory.reset_peak_memory(device)
        step()
        torch.cuda.synchronize(device)
        peak = torch.cuda.max_memory_allocated(device)
        return peak / 2**20, (peak - before) / 2**20
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/statm") as statm:
        before = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    memory.reset_peak_memory(device)
    step()
    peak = memory.peak_memory_bytes(device) or 0
    return peak / 2**20, (peak - before) / 2**20


# Inductor knobs spelled out at torch's own default (no change to the generated code), to make
# a config's torch.compile wrapper differ from another's: see distinct().
INERT = ("max_fusion_size", "cpp.min_chunk_size", "cpp.max_horizontal_fusion_size")
_COMPILED: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}  # key: [(asked, run)]


def distinct(model: str, config: dict[str, Any] | None) -> tuple[dict[str, Any] | None, str]:
    """``config``, made to compile its own graphs in this process, and a note when that took
    a change. Dynamo gives a second model instance the graph compiled for the first whenever
    their Inductor wrappers compare equal (backend, ``options``, ``dynamic``), whatever the
    settings ``autotune.apply`` sets around calls (``functorch``, ``dynamo``, Inductor's read
    outside ``options``): a config differing from an earlier one only there would run the
    earlier one's code. The n-th such config gets the first n of :data:`INERT` not set, each
    at torch's default."""
    if config is None or config.get("backend", "inductor") != "inductor":
        return config, ""
    key = json.dumps([model, config.get("dynamic"), config.get("options", {})], sort_keys=True)
    group = _COMPILED.setdefault(key, [])
    ran = next((run for asked, run in group if asked == config), None)
    if ran is None and not group:
        ran = config
    elif ran is None:
        import torch._inductor.config as inductor

        defaults = inductor.get_config_copy()
        free = [k for k in INERT if k not in config.get("options", {})][: len(group)]
        ran = {
            **config,
            "options": {**config.get("options", {}), **{k: defaults[k] for k in free}},
        }
    group.append((config, ran))
    added = sorted(set(ran.get("options", {})) - set(config.get("options", {})))
    return ran, f"+ {', '.join(added)} at default (own graph)" if added else ""


def prepare(work: dict[str, Any], config: Any) -> Callable[[], float]:
    """A step of a fresh deep copy of the seeded model with its own optimizer, compiled as
    production does (``autotune.apply`` + ``autotune.apply_optimizer``) unless eager."""
    model = copy.deepcopy(work["model"])
    optimizer = build_optimizer(work["module"], model)
    if config is not None:
        model = autotune.apply(model, config)
        autotune.apply_optimizer(optimizer, config)
    step_fn, calls = work["step_fn"], work["calls"]

    def step() -> float:
        torch.manual_seed(SEED)  # as trials step: dropout draws the same numbers everywhere
        return sum(float(step_fn(model, optimizer, call).detach()) for call in calls)

    return step


def side_by_side(
    work: dict[str, Any], variants: dict[str, tuple[str, Any]], seconds: float, device: str
) -> list[Measured]:
    """Builds every variant, runs its first steps (loss drift), then times them all
    round-robin (the order reversed every other round) for ``seconds``; median step time."""
    steps, losses, out = {}, {}, {}
    for label, (brief, config) in variants.items():
        config, note = distinct(work["name"], config)
        out[label] = Measured(label, f"{brief} {note}".strip())
        try:
            step = prepare(work, config)
            started = time.perf_counter()
            losses[label] = [step()]
            out[label].first_step_s = time.perf_counter() - started
            losses[label] += [step() for _ in range(DRIFT_STEPS - 1)]
        except Exception as exc:  # noqa: BLE001 - a variant that fails is reported, not fatal
            out[label].error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
            print(f"# {label} failed: {out[label].error}", flush=True)
            continue
        steps[label] = step
    reference = losses.get(EAGER)
    times: dict[str, list[float]] = {k: [] for k in steps}
    deadline, order = time.perf_counter() + seconds, list(steps)
    while steps and (time.perf_counter() < deadline or len(times[order[0]]) < MIN_ROUNDS):
        for label in order:
            started = time.perf_counter()
            steps[label]()
            times[label].append(time.perf_counter() - started)
        order.reverse()
    for label, step in steps.items():
        m, ms = out[label], sorted(t * 1e3 for t in times[label])
        m.step_ms, m.rounds = statistics.median(ms), len(ms)
        m.q1_ms, m.q3_ms = ms[len(ms) // 4], ms[(3 * len(ms)) // 4]
        m.peak_rss_mib, m.step_mib = step_memory(step, device)
        m.drift = drift(losses[label], reference) if reference else None
    return list(out.values())


def load_work(name: str, device: str) -> dict[str, Any]:
    module = load_model_file(MODELS[name])
    torch.manual_seed(SEED)
    model = build_model(module, device).train()
    torch.manual_seed(SEED)
    calls = build_calls(module, device)
    return {"name": name, "module": module, "model": model, "calls": calls,
            "step_fn": train_step_function(module),
            **_units(module, calls)}  # fmt: skip


def _units(module: Any, calls: list[Any]) -> dict[str, Any]:
    """What one step processes, as the model file's units(inputs) counts it."""
    counted = count_units(module, calls)
    if counted is None:
        return {"per_step": None, "unit": "samples"}
    return {"per_step": counted["per_sweep"] / len(calls), "unit": counted["name"]}


def with_budget(config: dict[str, Any] | None, budget: float) -> dict[str, Any]:
    """A config's JSON form (default compile for None) with activation_memory_budget set."""
    base = dict(config) if config is not None else autotune.CompileConfig().to_dict()
    return {**base, "functorch": {**base.get("functorch", {}), "activation_memory_budget": budget}}


def _f(value: float | None, spec: str = ".1f", suffix: str = "") -> str:
    return f"{value:{spec}}{suffix}" if value is not None else "-"


def ratio(base: Measured | None, m: Measured) -> float | None:
    """``base``'s median step time over ``m``'s: m's speedup over base."""
    if base is None or base.step_ms is None or m.step_ms is None:
        return None
    return base.step_ms / m.step_ms


def side_table(rows: list[Measured], per_step: float | None, unit: str) -> str:
    by = {m.label: m for m in rows}
    lines = [
        f"| variant | config | step ms (q1-q3) | vs default compile | vs eager | {unit}/s | "
        "first step | peak RSS | step peak over resident | loss drift vs eager (max rel, "
        f"{DRIFT_STEPS} steps) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for m in rows:
        if m.error is not None:
            lines.append(f"| {m.label} | `{m.config}` | failed: {m.error} ||||||||")
            continue
        rate = per_step / (m.step_ms / 1e3) if per_step and m.step_ms else None
        lines.append(
            f"| {m.label} | `{m.config}` | {_f(m.step_ms)} ({_f(m.q1_ms)}-{_f(m.q3_ms)}) | "
            f"{_f(ratio(by.get(DEFAULT), m), '.2f', 'x')} | "
            f"{_f(ratio(by.get(EAGER), m), '.2f', 'x')} | {_f(rate, '.0f')} | "
            f"{_f(m.first_step_s, '.1f', ' s')} | {_f(m.peak_rss_mib, '.0f', ' MiB')} | "
            f"{_f(m.step_mib, '.0f', ' MiB')} | {_f(m.drift, '.1e')} |"
        )
    return "\n".join(lines)


def round_table(search: Search) -> str:
    """A search's finalist round: speedup over eager pooled cold+warm, and the training
    errors the cold run measured against eager fp32."""
    run = search.run
    lines = [
        f"{search.kind} search ({run.wall_s:.0f} s): decision **{run.decision}**: {run.reason}",
        "",
        "| finalist | config | speedup vs eager (q1-q3) | vs default | loss_rel | grad_cosine "
        "| emitted |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in sorted(run.rows, key=lambda r: r.speedup, reverse=True):
        errors = search.finalists.get(r.brief, {})
        lines.append(
            f"| {r.label} | `{r.brief}` | {r.speedup:.2f}x ({r.q1:.2f}-{r.q3:.2f}) | "
            f"{_f(over_default(run, r), '.2f', 'x')} | {_f(errors.get('loss_rel'), '.1e')} | "
            f"{_f(errors.get('grad_cosine'), '.6f')} | {'**yes**' if r.emitted else ''} |"
        )
    return "\n".join(lines)


def front_table(rows: list[Measured]) -> str:
    lines = ["| activation_memory_budget | step ms (q1-q3) | peak RSS | step peak over resident |",
             "|---|---|---|---|"]  # fmt: skip
    for m in rows:
        lines.append(
            f"| {m.label} | failed: {m.error} |||" if m.error else
            f"| {m.label} | {_f(m.step_ms)} ({_f(m.q1_ms)}-{_f(m.q3_ms)}) | "
            f"{_f(m.peak_rss_mib, '.0f', ' MiB')} | {_f(m.step_mib, '.0f', ' MiB')} |"
        )  # fmt: skip
    return "\n".join(lines)


def geomeans(models: dict[str, dict[str, Any]]) -> dict[str, float | None]:
    """Over the models, the geomean of the tuned contract and tuned fp32-exact variants'
    speedups over default compile, measured side by side."""
    means = {}
    for label in (TUNED, EXACT):
        values = []
        for model in models.values():
            by = {m.label: m for m in model["side_by_side"]}
            if label in by and (value := ratio(by.get(DEFAULT), by[label])) is not None:
                values.append(value)
        means[label] = geomean(values)
    return means


def report(machine: dict[str, Any], models: dict[str, dict[str, Any]]) -> str:
    means = geomeans(models)
    lines = [
        f"# Training suite on {machine['device']}: tuned configs side by side",
        "",
        f"{machine['date']}. Device: {machine['cpu']}; bf16 flags: "
        f"{', '.join(machine['bf16_flags']) or 'none (bf16 emulated: contract search skipped)'}"
        f". torch {machine['torch']}, {machine['cores']} cores, {machine['threads']} torch "
        f"threads. Load average (1, 5, 15 min) at start: "
        f"{', '.join(f'{v:.2f}' for v in machine['load_start'])}. Command: "
        f"`{machine['command']}`.",
        "",
        f"Geomean over the models of the speedup over default torch.compile (side by side, this "
        f"run): tuned under the contract **{_f(means[TUNED], '.2f', 'x')}**, tuned fp32-exact "
        f"**{_f(means[EXACT], '.2f', 'x')}**. Contract: `{machine['accuracy'] or 'none'}`.",
        "",
    ]
    if machine["device"].startswith("cuda"):
        lines += ["On CUDA the memory columns are the CUDA allocator's: the peak allocated during "
                  "a step, and its rise over what was allocated before it.", ""]  # fmt: skip
    for name, model in models.items():
        lines += [f"## {name}", ""]
        for search in model["searches"]:
            lines += [round_table(search), ""]
        lines += [
            f"Side by side in one process ({model['unit']} per step: {model['per_step']}; "
            f"median over the rounds timed in {machine['seconds']:.0f} s):",
            "",
            side_table(model["side_by_side"], model["per_step"], model["unit"]),
            "",
        ]
        if model.get("front"):
            lines += [f"Memory front ({model['front_of']}):", "", front_table(model["front"]), ""]
    return "\n".join(lines)


def _raw(machine: dict[str, Any], models: dict[str, dict[str, Any]]) -> str:
    def plain(model: dict[str, Any]) -> dict[str, Any]:
        return {**model, "searches": [dataclasses.asdict(s) for s in model["searches"]],
                "side_by_side": [dataclasses.asdict(m) for m in model["side_by_side"]],
                "front": [dataclasses.asdict(m) for m in model.get("front", [])]}  # fmt: skip

    return json.dumps(
        {"machine": machine, "geomean_vs_default": geomeans(models),
         "models": {k: plain(v) for k, v in models.items()}}, indent=1, default=str,
    ) + "\n"  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--accuracy", default=CONTRACT, help="the training contract")
    parser.add_argument("--seconds", type=float, default=20.0, help="side-by-side timing")
    parser.add_argument("--out", type=Path, help="default results/train_suite_DEVICE.md")
    parser.add_argument(
        "--search-args", default="", help="more options for every autotune search, quoted"
    )
    parser.add_argument(
        "--searches", default="fp32-exact,contract", help="which searches run, of fp32-exact "
        "and contract (the contract one only where bf16 is native)",
    )  # fmt: skip
    parser.add_argument(
        "--front", action=argparse.BooleanOptionalAction, default=True,
        help="the Llama's activation-memory-budget front",
    )  # fmt: skip
    args = parser.parse_args(argv)
    unknown = [m for m in args.models.split(",") if m not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(MODELS)}")
    if args.device.split(":")[0] not in ("cpu", "cuda"):
        parser.error(f"--device {args.device}: the train suite runs on cpu or cuda")
    args.out = args.out or HERE / "results" / f"train_suite_{args.device.split(':')[0]}.md"
    return args


def measure_model(name: str, args: argparse.Namespace, bf16: bool, tmp: Path) -> dict[str, Any]:
    kinds = [k for k in args.searches.split(",") if k != "contract" or bf16] or ["fp32-exact"]
    searches = [run_search(name, kind, args, tmp) for kind in kinds]
    work = load_work(name, args.device)
    variants: dict[str, tuple[str, Any]] = {
        EAGER: ("eager", None),
        DEFAULT: ("default", autotune.CompileConfig().to_dict()),
    }
    preset = best_preset(searches[-1]) or best_preset(searches[0])
    emitted = {next((r.brief for r in s.run.rows if r.emitted), None) for s in searches}
    if preset is not None and preset[1] not in emitted:  # else it is a tuned row below
        label, brief, config = preset
        variants[f"best {label} (its round)"] = (brief, config)
    for search in searches:
        label = TUNED if search.kind == "contract" else EXACT
        brief = next((r.brief for r in search.run.rows if r.emitted), search.run.decision)
        variants[label] = (brief, search.emitted)
    print(f"# {name}: side by side, {args.seconds:.0f} s", flush=True)
    model = {"per_step": work["per_step"], "unit": work["unit"], "searches": searches,
             "side_by_side": side_by_side(work, variants, args.seconds, args.device)}  # fmt: skip
    if name == "llama" and args.front:
        tuned = searches[-1].emitted
        model["front_of"] = f"{searches[-1].kind} emitted config" if tuned else DEFAULT
        front = {f"{b}": ("", with_budget(tuned, b)) for b in BUDGETS}
        print(f"# {name}: memory front", flush=True)
        model["front"] = side_by_side(work, front, args.seconds / 2, args.device)
    return model


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    load_start = os.getloadavg()
    if args.device.startswith("cuda"):
        flags = ["cuda bf16"] if torch.cuda.is_bf16_supported() else []
    else:
        flags = bf16_flags(Path("/proc/cpuinfo").read_text())
    if not flags:
        print("# this CPU has neither avx512_bf16 nor amx_bf16: bf16 is emulated, so only the "
              "fp32-exact search runs", flush=True)  # fmt: skip
    # Every variant compiles the same code objects in this one process (a process of
    # production compiles one): room for all of them before Dynamo falls back to eager.
    torch._dynamo.config.recompile_limit = 64
    machine = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "device": args.device, "cpu": device_name(args.device), "bf16_flags": flags,
        "torch": torch.__version__, "cores": len(os.sched_getaffinity(0)),
        "threads": torch.get_num_threads(), "load_start": load_start,
        "command": shlex.join(["python", *sys.argv]), "accuracy": args.accuracy if flags else None,
        "seconds": args.seconds, "trials": args.trials,
    }  # fmt: skip
    models = {}
    with tempfile.TemporaryDirectory(prefix="train_suite-") as tmp:
        for name in args.models.split(","):
            models[name] = measure_model(name, args, bool(flags), Path(tmp))
    machine["load_end"] = os.getloadavg()
    text = report(machine, models)
    write_text(args.out, text)
    write_text(args.out.with_suffix(".json"), _raw(machine, models))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
