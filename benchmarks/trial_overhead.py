"""Fixed per-trial overhead: cold trial processes against the warm trial host.

    python benchmarks/trial_overhead.py [--trials 5] [--study-trials 20]

Part 1 runs the same sequence of real Inductor trials of a tiny model three ways:

- cold, fresh cache: a new Python process per trial and an empty kernel cache each time — what
  "import torch, compile the model, time it" costs from scratch (the reference);
- cold, study cache: a new process per trial, kernel cache shared by the study's trials (the
  first core-loop design);
- warm host: forks of a host that already imported torch and Inductor, study cache shared.

Trials differ in ``max_fusion_size`` (a knob that changes the FX-graph cache key but not the
generated kernels), so no trial is served a whole compiled graph from another; the first trial
of each way pays the cold kernel build. Overhead = trial wall time - its compile (first call)
- its timed work.

Part 2 runs ``autotune search`` for a whole study with ``--trial-host fresh`` and ``preloaded``
(``--scope whole --finalists 0``: only the trials differ between the two).
Writes ``benchmarks/results/trial_overhead_<device>.md`` (and prints it).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from autotune.runtime.config import CompileConfig
from autotune.trials import MeasureSettings, PreloadedHostRunner, SubprocessRunner, TrialSpec

HERE = Path(__file__).resolve().parent
MODEL = str(HERE / "models" / "tiny_mlp.py")
MEASURE = MeasureSettings(warmup=2, min_rounds=10, max_rounds=50, target_seconds=0.5)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--study-trials", type=int, default=20)
    args = parser.parse_args()
    n = args.trials
    rows = [
        ("cold process, fresh cache per trial", _per_trial(SubprocessRunner, fresh=True, n=n)),
        ("cold process, study cache", _per_trial(SubprocessRunner, fresh=False, n=n)),
        ("warm host, study cache", _per_trial(PreloadedHostRunner, fresh=False, n=n)),
    ]
    studies = [(host, _study(host, args.study_trials)) for host in ("fresh", "preloaded")]
    report = _report(rows, studies, args)
    out = HERE / "results" / f"trial_overhead_{_device_slug()}.md"
    out.write_text(report)
    print(report)
    return 0


def _per_trial(runner_cls: type, fresh: bool, n: int) -> list[dict[str, float]]:
    rows = []
    with tempfile.TemporaryDirectory() as study_cache, runner_cls() as runner:
        for i in range(n):
            cache = tempfile.mkdtemp() if fresh else study_cache
            config = CompileConfig(options={"max_fusion_size": 64 + i})
            spec = TrialSpec(model_path=MODEL, device="cpu", config=config.to_dict(),
                             measure=MEASURE, cache_dir=cache)  # fmt: skip
            result = runner.run(spec)
            assert result.ok, result.error_tail
            compile_s = result.phases["compile_s"]
            work = compile_s + result.phases["timing_s"]
            rows.append({"wall": result.wall_time_s, "compile": compile_s,
                         "overhead": result.wall_time_s - work})  # fmt: skip
            print(f"  {runner_cls.__name__} fresh={fresh} trial {i}: {rows[-1]}", flush=True)
    return rows


def _study(host: str, trials: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.monotonic()
        subprocess.run(
            [sys.executable, "-m", "autotune.cli", "search", MODEL, "--device", "cpu",
             "--trials", str(trials), "--trial-host", host, "--measure-seconds", "0.5",
             "--space", str(HERE / "overhead_space.toml"), "--storage", f"sqlite:///{tmp}/a.db",
             "--out", f"{tmp}/best.json", "--cache-dir", f"{tmp}/cache",
             "--scope", "whole", "--finalists", "0"],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        return time.monotonic() - started


def _report(rows, studies, args) -> str:  # type: ignore[no-untyped-def]
    lines = [
        "# Per-trial overhead: cold trial processes vs the warm trial host",
        "",
        f"Machine: {platform.node()}, {_cpu()}, {_cores()} cores; torch {torch.__version__}, "
        f"Python {platform.python_version()}. Model: `benchmarks/models/tiny_mlp.py`, "
        f"Inductor default mode, {args.trials} trials per way (first trial builds kernels).",
        "Command: `python benchmarks/trial_overhead.py`",
        "",
        "| way | first trial wall | later trials wall (median) | compile (median, later) "
        "| fixed overhead (median, later) |",
        "|---|---|---|---|---|",
    ]
    for name, r in rows:
        later = r[1:] or r
        wall, compile_s, overhead = (
            statistics.median(x[key] for x in later) for key in ("wall", "compile", "overhead")
        )
        lines.append(
            f"| {name} | {r[0]['wall']:.2f} s | {wall:.2f} s | {compile_s:.2f} s "
            f"| {overhead:.2f} s |"
        )
    cold_ref = statistics.median(x["wall"] for x in rows[0][1])
    warm = statistics.median(x["wall"] for x in rows[2][1][1:] or rows[2][1])
    lines += [
        "",
        f"Warm-host trial / cold fresh-cache trial: {warm / cold_ref:.2f} "
        "(goal: at most 0.5). Fixed overhead goal: under 1.5 s.",
        "",
        f"## A whole study: `autotune search` with {args.study_trials} trials (+2 baselines)",
        "",
        "| --trial-host | study wall time |",
        "|---|---|",
        *[f"| {host} | {seconds:.1f} s |" for host, seconds in studies],
        "",
        f"warm / cold: {studies[1][1] / studies[0][1]:.2f}",
        "",
    ]
    return "\n".join(lines)


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def _cores() -> int:
    import os

    return len(os.sched_getaffinity(0))


def _device_slug() -> str:
    return "cpu-" + str(_cores()) + "core"


if __name__ == "__main__":
    sys.exit(main())
