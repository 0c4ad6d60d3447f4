"""The model suite: eager, default compile, each mode preset, and the tuned config, per model.

    python benchmarks/suite.py [--device cpu] [--trials 6] [--models mlp,encoder,...]

For each model it measures, each in a trial process of its own (paired with eager inside the
trial, as the search does): default ``torch.compile`` and every mode preset that applies to
the device; then it runs ``autotune search`` (whole-study wall time, the decision and the
tuned config's re-measured speedup); and it measures the default config in two separate
fresh processes to show repeatability. Then it runs ``autotune verify`` on the emitted file
``--verify`` times (default 3), each a separate command, and reports the speedup each measured
against the one the file claims. Writes ``benchmarks/results/suite_<device>.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from autotune.runtime.config import CompileConfig
from autotune.space import config_from_values
from autotune.trials import MeasureSettings, SubprocessRunner, TrialResult, TrialSpec
from autotune.trials._spec import DEFAULT_PRECISION

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MODELS = {
    "mlp": ROOT / "studies" / "mlp.py",
    "encoder": HERE / "models" / "encoder.py",
    "bert": ROOT / "studies" / "bert_tiny.py",
    "gpt2": HERE / "models" / "gpt2.py",
    "convnet": HERE / "models" / "convnet.py",
}
MODES = {
    "cpu": ["max-autotune-no-cudagraphs"],
    "cuda": ["reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune"],
}
# As finalists and verify time: on past 2 s until the median speedup is known within +-2%.
MEASURE = MeasureSettings(target_seconds=2.0).precise(DEFAULT_PRECISION)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--verify", type=int, default=3, help="autotune verify runs per model")
    args = parser.parse_args()
    rows = [_model_row(name, args) for name in args.models.split(",")]
    report = _report(rows, args)
    out = HERE / "results" / f"suite_{args.device.split(':')[0]}.md"
    out.write_text(report)
    print(report)
    return 0


def _model_row(name: str, args: argparse.Namespace) -> dict[str, object]:
    model = str(MODELS[name])
    presets = {"default": CompileConfig()}
    for mode in MODES[args.device.split(":")[0]]:
        presets[mode] = config_from_values({"compile.mode": mode})
    row: dict[str, object] = {"model": name}
    for label, config in presets.items():
        row[label] = _trial(model, config, args.device)
        print(f"{name} {label}: {_cell(row[label])}", flush=True)  # type: ignore[arg-type]
    row["repeat"] = _trial(model, CompileConfig(), args.device)
    row["search"] = _search(model, args)
    print(f"{name} search: {row['search']}", flush=True)
    return row


def _trial(model: str, config: CompileConfig, device: str) -> TrialResult:
    with tempfile.TemporaryDirectory() as cache:  # fresh process, cold private cache
        spec = TrialSpec(model_path=model, device=device, config=config.to_dict(),
                         measure=MEASURE, cache_dir=cache)  # fmt: skip
        return SubprocessRunner().run(spec)


def _search(model: str, args: argparse.Namespace) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.monotonic()
        subprocess.run(
            [sys.executable, "-m", "autotune.cli", "search", model, "--device", args.device,
             "--trials", str(args.trials), "--finalists", "2", "--storage",
             f"sqlite:///{tmp}/a.db", "--out", f"{tmp}/best.json", "--cache-dir", f"{tmp}/c"],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        wall_s = time.monotonic() - started
        best = json.loads(Path(tmp, "best.json").read_text())
        verified = [_verify(f"{tmp}/best.json", model, args.device) for _ in range(args.verify)]
    config = best["config"]
    return {
        "wall_s": wall_s,
        "decision": best["decision"],
        "brief": CompileConfig.from_dict(config).brief() if config else "-",
        "speedup": best["metrics"].get("speedup_vs_eager"),
        "cold_compile_s": best["metrics"].get("cold_compile_time_s"),
        "verify": verified,
    }


def _verify(best: str, model: str, device: str) -> dict[str, object]:
    """One ``autotune verify --json`` run: its verdict and the speedup it measured."""
    done = subprocess.run(
        [sys.executable, "-m", "autotune.cli", "verify", best, model, "--device", device,
         "--json"],
        capture_output=True, text=True,
    )  # fmt: skip
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        return {"verdict": f"exit {done.returncode}", "measured": None, "claimed": None}
    return {
        "verdict": report["verdict"],
        "measured": report.get("measured_speedup_vs_eager"),
        "claimed": report.get("claimed_speedup_vs_eager"),
        "default": report.get("measured_default_speedup_vs_eager"),
    }


def _cell(r: TrialResult) -> str:
    if not r.ok:
        return f"{r.failure_kind}"
    return (
        f"{r.speedup_vs_eager:.2f}x ({r.speedup_vs_eager_q1:.2f}-{r.speedup_vs_eager_q3:.2f}; "
        f"median {r.precision_note()}), compile {r.compile_time_s:.1f}s"
    )


def _report(rows: list[dict[str, object]], args: argparse.Namespace) -> str:
    modes = ["default", *MODES[args.device.split(":")[0]]]
    head = ["model", *(f"{m} (speedup vs eager, IQR; cold compile)" for m in modes),
            "autotune search (wall)", "tuned (decision, speedup, cold compile)",
            "repeatability: default twice",
            "autotune verify (verdict: measured vs claimed)"]  # fmt: skip
    lines = [
        f"# Model suite on {args.device}",
        "",
        f"Machine: {platform.node()}, {_device_name(args.device)}; torch {torch.__version__}, "
        f"Python {platform.python_version()}. `python benchmarks/suite.py --device "
        f"{args.device} --trials {args.trials}`. Each cell is one trial in a fresh process with "
        "an empty cache: speedup = median of per-round eager/compiled ratios, interleaved, "
        f"timed past 2 s until the median is known within ±{DEFAULT_PRECISION:.0%} (95% "
        "confidence) or for 10 s at most.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for row in rows:
        search = row["search"]
        assert isinstance(search, dict)
        first, again = row["default"], row["repeat"]
        assert isinstance(first, TrialResult) and isinstance(again, TrialResult)
        tuned = (f"{search['decision']}: {search['brief']}, {search['speedup'] or 0:.2f}x, "
                 f"cold {search['cold_compile_s'] or 0:.1f}s")  # fmt: skip
        cells = [str(row["model"]), *(_cell(row[m]) for m in modes),  # type: ignore[arg-type]
                 f"{search['wall_s']:.0f}s", tuned, _repeat(first, again),
                 _verified(search["verify"])]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _verified(runs: object) -> str:
    assert isinstance(runs, list)
    cells = []
    for run in runs:
        measured, claimed = run["measured"], run["claimed"]
        said = f"{measured:.2f}x" if measured is not None else "-"
        if claimed is not None:
            said += f" vs {claimed:.2f}x"
        elif run.get("default") is not None:  # "do not compile": default compile's gain now
            said = f"default {run['default']:.2f}x"
        cells.append(f"{run['verdict']}: {said}")
    return "; ".join(cells) or "-"


def _repeat(a: TrialResult, b: TrialResult) -> str:
    if not (a.ok and b.ok):
        return "-"
    diff = abs(a.speedup_vs_eager - b.speedup_vs_eager) / a.speedup_vs_eager  # type: ignore[operator]
    return f"{a.speedup_vs_eager:.3f}x vs {b.speedup_vs_eager:.3f}x ({diff:.1%} apart)"


def _device_name(device: str) -> str:
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(device)
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip() + f", {len(os.sched_getaffinity(0))} cores"
    return platform.processor()


if __name__ == "__main__":
    sys.exit(main())
