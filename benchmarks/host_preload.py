"""What the preloaded host's import of the model file's packages saves each forked trial.

    python benchmarks/host_preload.py [--trials 5] [--models llama,gpt2,resnet18]

For each model file (benchmarks/models/), the same ``--trials`` trials run as forks of one
preloaded host twice: once with the host importing the model file's installed packages
(``transformers``, its model classes; the default since issue 59) and once without (each trial
imports them after its fork, as before). The trials are eager measured against itself
(``config=None``), with a short timing: the figure is the trial's wall time, start to result,
whose difference between the two ways is what the imports cost each trial. The host's own
start (``warm_s``: torch, Inductor, a warm-up compile, and the model's packages where it imports
them) is given apart; it is paid once per study process.

Writes ``benchmarks/results/host_preload_<cpu>.md`` (and prints it).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from autotune.trials import MeasureSettings, PreloadedHostRunner, TrialSpec

HERE = Path(__file__).resolve().parent
MEASURE = MeasureSettings(warmup=1, min_rounds=3, max_rounds=5, target_seconds=0.1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--models", default="llama,gpt2,resnet18")
    args = parser.parse_args()
    rows = []
    for name in args.models.split(","):
        model = str(HERE / "models" / f"{name}.py")
        for preload in (False, True):
            warm_s, walls = _trials(model, preload, args.trials)
            rows.append((name, preload, warm_s, walls))
            print(name, preload, f"{warm_s:.2f}", [f"{w:.2f}" for w in walls], flush=True)
    report = _report(rows, args.trials)
    out = HERE / "results" / f"host_preload_{_cpu()}.md"
    out.write_text(report)
    print(report)
    return 0


def _trials(model: str, preload: bool, n: int) -> tuple[float, list[float]]:
    with tempfile.TemporaryDirectory() as cache, PreloadedHostRunner(log_dir=cache) as runner:
        runner._preload = preload
        walls = []
        for _ in range(n):
            spec = TrialSpec(
                model_path=model, device="cpu", config=None, measure=MEASURE, cache_dir=cache
            )
            started = time.monotonic()
            result = runner.run(spec)
            walls.append(time.monotonic() - started)
            if result.status != "ok":
                raise SystemExit(f"{model}: {result.failure_kind}: {result.error_tail}")
        assert runner._host is not None and runner._host.ready is not None
        return float(runner._host.ready["warm_s"]), walls


def _report(rows: list[tuple[str, bool, float, list[float]]], n: int) -> str:
    lines = [
        "# The model's packages imported once by the trial host (issue 59)",
        "",
        f"`python benchmarks/host_preload.py --trials {n}` on {_machine()}, nothing else "
        "running. Each row: one preloaded host, its trials forked from it one after another "
        "(eager against itself, a short timing); the first trial of a host waits for its start.",
        "",
        "| model | host imports the model's packages | host start (s) | first trial (s) "
        "| later trials, median (s) |",
        "|---|---|---|---|---|",
    ]
    for name, preload, warm_s, walls in rows:
        later = statistics.median(walls[1:]) if len(walls) > 1 else float("nan")
        lines.append(
            f"| {name} | {'yes' if preload else 'no'} | {warm_s:.2f} | {walls[0]:.2f} "
            f"| {later:.2f} |"
        )
    return "\n".join(lines) + "\n"


def _cpu() -> str:
    return f"cpu-{len(os.sched_getaffinity(0))}core"


def _machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0))
    return f"{model}, {cores} cores, Python {platform.python_version()}"


if __name__ == "__main__":
    raise SystemExit(main())
