"""The model suite: per model, a real search, then its tuned config against default compile and
every preset of the space, measured side by side in the same finalist round.

    python benchmarks/suite.py [--device cpu] [--trials 20] [--models mlp,encoder,...]
                               [--accuracy 'cosine>=0.999']

For each model it runs ``autotune search`` with ``--preset-finalists all``: the finalist round
re-measures the best sampled configs, default ``torch.compile`` and every preset of the space
the search measured, each in two fresh processes (cold, then warm in reverse order: ABBA over
processes), and the file's decision is made on that round. The suite reads the round back from
the study's storage and prints every finalist's pooled speedup over eager with its spread,
then checks the issue's rule: the emitted config is at least the best preset measured in the
same round, within the measured spread (the preset's lower quartile is not above the emitted
config's upper quartile). Then ``autotune verify --repeats N`` (``--verify N``; 0: none) runs on
the emitted file, its repeats pooled, and the report sets its figure and interval beside the
file's claim. Writes ``benchmarks/results/suite_<device>.md``.

With ``--accuracy SPEC`` every search states that accuracy contract: it searches the levers
beyond Inductor's knobs (bf16 autocast, matmul precision, OpenVINO's bf16) beside the fp32
ones, and its finalist round holds, side by side, default compile, every preset (each installed
backend's defaults and bf16 autocast included), the best fp32-exact config and the best under
the contract, each with its measured error against eager fp32. The report adds the geomean over
the suite of the emitted config's speedup over default compile (and of the best fp32-exact
one's).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from fixed_finalist import fixed_round, section, verdict

from autotune.decide import Decision, decide
from autotune.decide._presets import preset_hashes
from autotune.records import RecordStore, TrialRecord
from autotune.storage import screened, settings_from_dict
from autotune.trials import Spread
from autotune.verify import DEFAULT_TOLERANCE, MAX_TOLERANCE, over_claims

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MODELS = {
    "mlp": ROOT / "studies" / "mlp.py",
    "encoder": HERE / "models" / "encoder.py",
    "bert": ROOT / "studies" / "bert_tiny.py",
    "gpt2": HERE / "models" / "gpt2.py",
    "convnet": HERE / "models" / "convnet.py",
    "resnet18": HERE / "models" / "resnet18.py",
    "llama": HERE / "models" / "llama.py",
    "vit": HERE / "models" / "vit.py",
    "bert-gpu": HERE / "models" / "bert_gpu.py",
    "gpt2-gpu": HERE / "models" / "gpt2_gpu.py",
}
STUDY = "suite"


@dataclass
class Row:
    """One finalist of the round, pooled over its cold and warm process."""

    label: str
    brief: str
    speedup: float
    q1: float
    q3: float
    cold_s: float | None
    warm_s: float | None
    emitted: bool = False
    max_abs: float | None = None  # the error against eager fp32 the trial measured
    cosine: float | None = None
    exact: bool = True  # changes no numerics (held to eager's gate)


@dataclass
class ModelRun:
    model: str
    wall_s: float
    decision: str
    reason: str
    trials: dict[str, int]
    rows: list[Row] = field(default_factory=list)
    verify: list[dict[str, object]] = field(default_factory=list)
    fixed: dict[str, object] = field(default_factory=dict)  # --fixed: its round


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--finalists", type=int, default=3)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument(
        "--verify", type=int, default=1,
        help="autotune verify --repeats N on each emitted file (0: no verify)",
    )  # fmt: skip
    parser.add_argument("--accuracy", help="the accuracy contract every search states")
    parser.add_argument("--out", type=Path, help="the report (default results/suite_DEVICE.md)")
    parser.add_argument("--json", type=Path, help="also write the raw runs here, as JSON")
    parser.add_argument(
        "--before", type=Path, help="the --json of an earlier run: its figures beside these"
    )
    parser.add_argument("--render", type=Path, help="only write the report of this --json run")
    parser.add_argument(
        "--search-args", default="",
        help="more options for every autotune search, quoted (e.g. '--timeout 240 "
        "--compile-budget 120'): a time-boxed run on a lent machine",
    )  # fmt: skip
    parser.add_argument(
        "--fixed", help="presets of the space to combine into a fixed finalist, measured after "
        "each search beside the emitted config (e.g. bf16-autocast,freezing)",
    )  # fmt: skip
    parser.add_argument(
        "--keep", type=Path, help="copy each model's study database and best-config file here"
    )
    parser.add_argument(
        "--verbose", action="store_true", help="print the searches' trial lines (not --quiet)"
    )
    args = parser.parse_args()
    if args.render:
        return _render(args)
    machine = {"load_before": os.getloadavg(), **_machine(args)}
    machine.update(accuracy=args.accuracy, trials=args.trials, finalists=args.finalists,
                   fixed=args.fixed)  # fmt: skip
    runs = []
    for name in args.models.split(","):
        runs.append(_model_run(name, args))
        print(_model_section(runs[-1]), flush=True)
        machine["load_after"] = os.getloadavg()
        if args.json:  # after each model: a run cut short keeps the models it finished
            raw = {"machine": machine, "runs": [dataclasses.asdict(r) for r in runs]}
            args.json.write_text(json.dumps(raw, indent=1) + "\n")
    before = _runs_from_json(args.before) if args.before else None
    report = _report(runs, args, machine, before)
    out = args.out or HERE / "results" / f"suite_{args.device.split(':')[0]}.md"
    out.write_text(report)
    print(report)
    return 0


def _model_run(name: str, args: argparse.Namespace) -> ModelRun:
    model = str(MODELS[name])
    with tempfile.TemporaryDirectory() as tmp:
        storage, best = f"sqlite:///{tmp}/a.db", f"{tmp}/best.json"
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "autotune.cli", "search", model, "--device", args.device,
             "--trials", str(args.trials), "--finalists", str(args.finalists),
             "--preset-finalists", "all", "--storage", storage, "--study", STUDY,
             "--out", best, "--cache-dir", f"{tmp}/c",
             *([] if args.verbose else ["--quiet"]),
             *(["--accuracy", args.accuracy] if args.accuracy else []),
             *shlex.split(args.search_args)],
        )  # fmt: skip
        wall_s = time.monotonic() - started
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            for path, kept in ((f"{tmp}/a.db", f"{name}.db"), (best, f"{name}.best.json")):
                if Path(path).exists():
                    shutil.copyfile(path, args.keep / kept)
        if done.returncode != 0:
            raise SystemExit(f"suite: autotune search on {name} exited {done.returncode}")
        run = _read_round(name, storage, wall_s)
        if args.fixed:
            run.fixed = fixed_round(storage, STUDY, args.fixed.split(","))
        run.verify = [_verify(best, model, args.device, args.verify)] if args.verify else []
    return run


def _read_round(name: str, storage: str, wall_s: float) -> ModelRun:
    with RecordStore(storage) as store:
        decision = decide(storage, STUDY, store)
        settings = settings_from_dict(store.study_settings(STUDY) or {})
    run = ModelRun(name, wall_s, decision.best.decision, decision.best.reason,
                   _trial_counts(decision.records))  # fmt: skip
    presets = preset_hashes(settings)
    for f in decision.finalists or []:
        if not f.ok:
            continue
        pooled = f.record()
        r = f.searched
        tuned = "tuned under the contract" if r.relaxed_numerics else "tuned fp32-exact"
        label = (
            f"{r.baseline} torch.compile" if r.baseline
            else f"preset {presets[r.config_hash]}" if r.config_hash in presets
            else f"{tuned} #{r.trial_number}"
        )  # fmt: skip
        error = f.cold.accuracy or {}
        run.rows.append(Row(
            label, r.brief, pooled.speedup_vs_eager or 0.0, pooled.speedup_vs_eager_q1 or 0.0,
            pooled.speedup_vs_eager_q3 or 0.0, f.cold.compile_time_s, f.warm.compile_time_s,
            emitted=_emitted(decision, r), max_abs=_number(error.get("max_abs_diff")),
            cosine=_number(error.get("cosine")), exact=not r.relaxed_numerics,
        ))  # fmt: skip
    return run


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def over_default(run: ModelRun, row: Row | None) -> float | None:
    """A finalist's pooled speedup over default compile in the same round (eager: None row)."""
    default = next((r for r in run.rows if r.label == "default torch.compile"), None)
    if default is None or not default.speedup:
        return None
    return (row.speedup if row is not None else 1.0) / default.speedup


def best_exact(run: ModelRun) -> Row | None:
    """The fastest finalist that changes no numerics, baselines and presets included."""
    exact = [r for r in run.rows if r.exact and r.label != "default torch.compile"]
    return max(exact, key=lambda r: r.speedup, default=None)


def geomean(values: list[float]) -> float | None:
    import math

    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def _emitted(decision: Decision, r: TrialRecord) -> bool:
    return decision.best.decision == "compile" and decision.best.config_hash == r.config_hash


def _trial_counts(records: list[TrialRecord]) -> dict[str, int]:
    searched = [r for r in records if r.baseline is None and r.duplicate_of is None]
    same, early = screened(searched)
    return {
        "searched": len(searched),
        "same code (reused)": same,
        "stopped early": early,
        "failed": sum(1 for r in searched if r.status != "ok"),
        "same config (reused)": sum(1 for r in records if r.duplicate_of is not None),
    }


def _verify(best: str, model: str, device: str, repeats: int) -> dict[str, object]:
    """One ``autotune verify --repeats N --json`` run: its verdict, the speedup it measured
    (its repeats pooled) with the median's 95% interval, and the file's claim."""
    done = subprocess.run(
        [sys.executable, "-m", "autotune.cli", "verify", best, model, "--device", device,
         "--repeats", str(repeats), "--json"],
        capture_output=True, text=True,
    )  # fmt: skip
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        return {"verdict": f"exit {done.returncode}", "measured": None, "claimed": None}
    return {
        "verdict": report["verdict"],
        "repeats": repeats,
        "measured": report.get("measured_speedup_vs_eager"),
        "low": report.get("measured_speedup_vs_eager_ci_low"),
        "high": report.get("measured_speedup_vs_eager_ci_high"),
        "claimed": report.get("claimed_speedup_vs_eager"),
        "default": report.get("measured_default_speedup_vs_eager"),
        "tolerance": report.get("tolerance"),
    }


def holds(run: ModelRun) -> tuple[bool, str]:
    """The issue's rule on one model: the emitted config (eager: 1.0x) is at least the best
    preset of the same round, within the measured spread."""
    presets = [r for r in run.rows if r.label.startswith("preset ")]
    if not presets:
        return True, "no preset reached the round"
    best = max(presets, key=lambda r: r.speedup)
    emitted = next((r for r in run.rows if r.emitted), None)
    q3, said = (emitted.q3, emitted.label) if emitted else (1.0, "eager (do not compile)")
    ok = best.q1 <= q3
    verb = "holds" if ok else "FAILS"
    return ok, (
        f"{verb}: best preset {best.label.removeprefix('preset ')} {best.speedup:.2f}x "
        f"(q1 {best.q1:.2f}) vs emitted {said} (q3 {q3:.2f})"
    )


def exact_holds(run: ModelRun) -> str:
    """Under a contract, the issue's rule on fp32: what the search would emit held to fp32 (its
    best fp32-exact finalist, a preset when no sampled config beat them) is at least the best
    fp32-exact preset, within the measured spread."""
    presets = [r for r in run.rows if r.label.startswith("preset ") and r.exact]
    mine = best_exact(run)
    if not presets or mine is None:
        return "no fp32-exact preset, or no fp32-exact config, reached the round"
    best = max(presets, key=lambda r: r.speedup)
    verb = "holds" if best.q1 <= mine.q3 else "FAILS"
    return (
        f"{verb}: best fp32-exact preset {best.label.removeprefix('preset ')} "
        f"{best.speedup:.2f}x (q1 {best.q1:.2f}) vs {mine.label} {mine.speedup:.2f}x "
        f"(q3 {mine.q3:.2f})"
    )


def _model_section(run: ModelRun, before: ModelRun | None = None) -> str:
    counts = ", ".join(f"{v} {k}" for k, v in run.trials.items())
    head = (
        "| finalist | config | speedup vs eager (q1-q3), pooled cold+warm | vs default | "
        "error vs eager fp32 (max abs, cosine) | cold compile | warm compile | emitted |"
    )
    rule = "|---|---|---|---|---|---|---|---|"
    earlier = {r.brief: r for r in before.rows} if before else {}
    if before is not None:
        head += " before: same config |"
        rule += "---|"
    lines = [
        f"### {run.model}",
        "",
        f"Search wall time {run.wall_s:.0f} s; trials: {counts}.",
        f"Decision: **{run.decision}**: {run.reason}",
        "",
        head,
        rule,
    ]
    for r in sorted(run.rows, key=lambda r: r.speedup, reverse=True):
        line = (
            f"| {r.label} | `{r.brief}` | {r.speedup:.2f}x ({r.q1:.2f}-{r.q3:.2f}) | "
            f"{_x(over_default(run, r))} | {_error(r)} | "
            f"{_s(r.cold_s)} | {_s(r.warm_s)} | {'**yes**' if r.emitted else ''} |"
        )
        if before is not None:
            old = earlier.get(r.brief)
            line += f" {_figure(old)} |" if old else " not a finalist |"
        lines.append(line)
    lines += ["", f"Rule (tuned ≥ best preset within spread): {holds(run)[1]}."]
    if any(not r.exact for r in run.rows):
        lines.append(f"Rule on fp32 (exact tuned ≥ best exact preset): {exact_holds(run)}.")
    lines.append("")
    if run.fixed:
        lines += section(run.fixed)
    if before is not None:
        lines += [
            f"Before: decision **{before.decision}**, emitted {_emitted_figure(before)}; "
            f"search wall time {before.wall_s:.0f} s.",
            "",
        ]
    if run.verify:
        lines.append("autotune verify: " + "; ".join(_verified(v) for v in run.verify) + ".")
    return "\n".join(lines) + "\n"


def _x(value: float | None) -> str:
    return f"{value:.2f}x" if value is not None else "-"


def _error(r: Row) -> str:
    if r.max_abs is None:
        return "-"
    cosine = f", {r.cosine:.6f}" if r.cosine is not None else ""
    return f"{r.max_abs:.1e}{cosine}"


def _figure(r: Row) -> str:
    return f"{r.speedup:.2f}x ({r.q1:.2f}-{r.q3:.2f})"


def _s(seconds: float | None) -> str:
    return f"{seconds:.1f} s" if seconds is not None else "-"


def _verified(run: dict[str, object]) -> str:
    """``ok: 2.31x (2.08x to 2.56x, 3 repeats) vs claimed 2.64x (claim +14%)``."""
    measured, claimed, low, high = run["measured"], run["claimed"], run.get("low"), run.get("high")
    said = f"{measured:.2f}x" if isinstance(measured, float) else "-"
    if isinstance(low, float) and isinstance(high, float):
        said += f" ({low:.2f}x to {high:.2f}x, {run.get('repeats', 1)} repeats)"
    if isinstance(claimed, float):
        said += f" vs claimed {claimed:.2f}x"
        if isinstance(measured, float) and measured:
            said += f" (claim {claimed / measured - 1:+.0%})"
        tolerance = run.get("tolerance")
        said += _raised(claimed, measured, low, high,
                        tolerance=tolerance if isinstance(tolerance, float) else None)  # fmt: skip
    elif isinstance(run.get("default"), float):  # "do not compile": default compile's gain now
        said = f"default compile now {run['default']:.2f}x"
    return f"{run['verdict']}: {said}"


# The check of verify's power: the file's claim raised by this much must fail.
RAISED = 1.15


def _raised(claimed: float, *measured: object, tolerance: float | None) -> str:
    """What verify's rule (:func:`~autotune.verify.over_claims`) says of the claim raised by
    15%, on what it measured (median, interval), at the tolerance it applied; for a run that
    did not record it, at the least (5%) and the most (the 10% cap) it may apply."""
    median, low, high = measured
    if not (isinstance(median, float) and isinstance(low, float) and isinstance(high, float)):
        return ""
    raised = claimed * RAISED
    said = f"; raised 15% ({raised:.2f}x) it "
    spread = Spread(median, low, high, low, high)
    tolerances = [DEFAULT_TOLERANCE, MAX_TOLERANCE] if tolerance is None else [tolerance]
    verdicts = [("fails" if over_claims(raised, spread, t) else "PASSES", t) for t in tolerances]
    if len({v for v, _ in verdicts}) == 1:
        return said + f"{verdicts[0][0]} (tolerance {' to '.join(f'{t:.0%}' for t in tolerances)})"
    both = ", ".join(f"{v} at {t:.0%}" for v, t in verdicts)
    return said + f"{both} (the tolerance verify applied was not recorded)"


def _report(
    runs: list[ModelRun],
    args: argparse.Namespace,
    machine: dict[str, object],
    before: list[ModelRun] | None = None,
) -> str:
    by_model = {run.model: run for run in before or []}
    head = "| model | decision | emitted vs best preset (same round) |"
    rule = "|---|---|---|"
    if args.fixed:
        head += " emitted vs fixed finalist (a round of its own) |"
        rule += "---|"
    if before is not None:
        head += " before: decision, emitted | after: emitted |"
        rule += "---|---|"
    summary = [head, rule]
    for run in runs:
        line = f"| {run.model} | {run.decision} | {holds(run)[1]} |"
        if args.fixed:
            line += f" {verdict(run.fixed) if run.fixed else 'not measured'} |"
        if before is not None:
            old = by_model.get(run.model)
            was = f"{old.decision}, {_emitted_figure(old)}" if old else "not run"
            line += f" {was} | {_emitted_figure(run)} |"
        summary.append(line)
    emitted = [over_default(run, next((r for r in run.rows if r.emitted), None)) for run in runs]
    exact = [over_default(run, best_exact(run)) for run in runs]
    contract = getattr(args, "accuracy", None)
    means = [
        f"Geomean over the suite of the emitted config's speedup over default torch.compile "
        f"(same round; eager where the file says do not compile): "
        f"**{_x(geomean([v for v in emitted if v is not None]))}**; of the best fp32-exact "
        f"finalist (presets included): {_x(geomean([v for v in exact if v is not None]))}."
        + (f" Accuracy contract: `{contract}`." if contract else ""),
        "",
    ]
    lines = [
        f"# Model suite on {args.device}: tuned against every preset, in one finalist round",
        "",
        f"Machine: {machine['node']}, {machine['device']}; torch {machine['torch']}, "
        + (
            f"triton {machine['triton']}, CUDA {machine['cuda']}, driver {machine['driver']}, "
            if "triton" in machine
            else ""
        )
        + f"Python {machine['python']}. CPU flags that decide the generated code: "
        f"{machine['cpu_flags'] or 'none of avx2, avx512*, amx*'}. Load average (1, 5, 15 "
        f"min) {_load(machine['load_before'])} before, {_load(machine['load_after'])} after. "
        f"`python benchmarks/suite.py --device {args.device} --trials {args.trials} "
        f"--finalists {args.finalists}"
        + (f" --models {args.models}" if args.models != ",".join(MODELS) else "")
        + (f" --accuracy '{contract}'" if contract else "")
        + (f" --search-args '{args.search_args}'" if args.search_args else "")
        + (f" --fixed {args.fixed}" if args.fixed else "")
        + f"`: each model's `autotune search --trials {args.trials} "
        f"--finalists {args.finalists} --preset-finalists all"
        + (f" {args.search_args}" if args.search_args else "")
        + (f" --accuracy '{contract}'" if contract else "")
        + "`. Every finalist ran in two "
        "fresh processes (cold, then warm in reverse order), each timed until its median "
        "speedup was known within ±2% (95% confidence) or for 10 s; the figures pool the two "
        "(median of medians, widest quartiles).",
        "",
        *means,
        *summary,
        "",
        *(_model_section(run, by_model.get(run.model)) for run in runs),
    ]
    return "\n".join(lines)


def _render(args: argparse.Namespace) -> int:
    machine = json.loads(args.render.read_text())["machine"]
    args.accuracy = args.accuracy or machine.get("accuracy")
    args.trials = machine.get("trials", args.trials)
    args.finalists = machine.get("finalists", args.finalists)
    args.fixed = args.fixed or machine.get("fixed")
    before = _runs_from_json(args.before) if args.before else None
    report = _report(_runs_from_json(args.render), args, machine, before)
    (args.out or HERE / "results" / f"suite_{args.device.split(':')[0]}.md").write_text(report)
    print(report)
    return 0


def _emitted_figure(run: ModelRun) -> str:
    emitted = next((r for r in run.rows if r.emitted), None)
    if emitted is None:
        return "eager 1.00x"
    return f"{emitted.label} {_figure(emitted)}"


def _load(values: object) -> str:
    return ", ".join(f"{v:.2f}" for v in values) if isinstance(values, (list, tuple)) else "-"


def _machine(args: argparse.Namespace) -> dict[str, object]:
    return {
        "node": platform.node(),
        "device": device_name(args.device),
        "cpu_flags": " ".join(cpu_flags()),
        "torch": torch.__version__,
        "python": platform.python_version(),
        **(_cuda_versions() if args.device.startswith("cuda") else {}),
    }


def _cuda_versions() -> dict[str, object]:
    """Triton, CUDA and the driver: what a GPU figure depends on beside torch."""
    import triton

    smi = subprocess.run(
        ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
        capture_output=True, text=True,
    )  # fmt: skip
    return {"triton": triton.__version__, "cuda": torch.version.cuda,
            "driver": smi.stdout.strip() or None}  # fmt: skip


def cpu_flags() -> list[str]:
    """The CPU flags that decide Inductor's vector code: AVX2, AVX-512 and AMX."""
    from autotune.space._levers import cpu_flags as flags

    return sorted(f for f in flags() if f.startswith(("avx2", "avx512", "amx")))


def _runs_from_json(path: Path) -> list[ModelRun]:
    raw = json.loads(path.read_text())
    runs = []
    for run in raw["runs"]:
        rows = [Row(**row) for row in run.pop("rows")]
        runs.append(ModelRun(**run, rows=rows))
    return runs


def device_name(device: str) -> str:
    """The GPU's name, or the CPU model and the cores this process may use."""
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(device)
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip() + f", {len(os.sched_getaffinity(0))} cores"
    return platform.processor()


if __name__ == "__main__":
    sys.exit(main())
