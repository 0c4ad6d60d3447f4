"""How much one config's measured speedup moves between timing windows, against its spread
within one.

    python benchmarks/process_variance.py [--models gpt2,convnet] [--processes 4] [--device cpu]

For each model, default ``torch.compile``: first in N fresh trial processes (sharing one kernel
cache: the compile is not what is measured), then N consecutive timing windows in this one
process. Each row: the median speedup over eager, its paired-round quartiles, the rounds behind
them and eager's latency. When the medians move by more than their quartiles suggest, whether
across processes or within one, the machine's state drifts between windows, and a claim measured
in one window must allow for it. Writes ``benchmarks/results/process_variance_<device>.md``.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
from pathlib import Path

import torch
from suite import MODELS, device_name

from autotune.measure.timing import Timing, interleaved_timing
from autotune.runtime.config import CompileConfig
from autotune.trials import MeasureSettings, SubprocessRunner, TrialResult, TrialSpec
from autotune.workload import build_calls, build_model, load_model_file

HERE = Path(__file__).resolve().parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--models", default="gpt2,convnet")
    parser.add_argument("--processes", type=int, default=4)
    args = parser.parse_args()
    lines = [
        f"# Speedup between processes on {args.device}",
        "",
        f"Machine: {platform.node()}, {device_name(args.device)}; torch {torch.__version__}. "
        f"`python benchmarks/process_variance.py --models {args.models} --processes "
        f"{args.processes}`. Default torch.compile; each process row is one fresh trial process, "
        "each window row one 2-second interleaved timing in a single process, back to back.",
        "",
        "| model | measured in | speedup vs eager (IQR of paired rounds) | rounds | eager latency "
        "|",
        "|---|---|---|---|---|",
    ]
    for name in args.models.split(","):
        results = _processes(str(MODELS[name]), args.device, args.processes)
        lines += [_row(name, f"process {i}", r) for i, r in enumerate(results, 1)]
        lines += _spread(name, "processes", [r.speedup_vs_eager for r in results if r.ok])
        windows = _windows(str(MODELS[name]), args.device, args.processes)
        lines += [_window_row(name, i, t) for i, t in enumerate(windows, 1)]
        lines += _spread(name, "windows", [t.ratio.median for t in windows])
        print("\n".join(lines[-2 * args.processes - 2 :]), flush=True)
    out = HERE / "results" / f"process_variance_{args.device.split(':')[0]}.md"
    out.write_text("\n".join(lines) + "\n")
    return 0


def _processes(model: str, device: str, n: int) -> list[TrialResult]:
    with tempfile.TemporaryDirectory() as cache:
        spec = TrialSpec(model_path=model, device=device, config=CompileConfig().to_dict(),
                         measure=MeasureSettings(target_seconds=2.0), cache_dir=cache)  # fmt: skip
        return [SubprocessRunner().run(spec) for _ in range(n)]


def _windows(model: str, device: str, n: int) -> list[Timing]:
    """N consecutive 2-second timing windows of default compile in this process."""
    module = load_model_file(model)
    torch.manual_seed(0)
    net = build_model(module, device).eval()
    (call,) = build_calls(module, device)[:1]
    compiled = torch.compile(net)
    with torch.no_grad():
        compiled(*call.args, **call.kwargs)
        return [
            interleaved_timing(lambda: net(*call.args, **call.kwargs),
                               lambda: compiled(*call.args, **call.kwargs), device)
            for _ in range(n)
        ]  # fmt: skip


def _spread(name: str, what: str, medians: list[float | None]) -> list[str]:
    found = [m for m in medians if m]
    if not found:
        return []
    return [
        f"| {name} | spread over {what} | {min(found):.3f}x to {max(found):.3f}x "
        f"(median {statistics.median(found):.3f}x) | | |"
    ]


def _window_row(name: str, i: int, t: Timing) -> str:
    return (
        f"| {name} | window {i} (one process) | {t.ratio.median:.3f}x ({t.ratio.q1:.3f}-"
        f"{t.ratio.q3:.3f}) | {t.rounds} | {t.eager.median * 1e3:.2f} ms |"
    )


def _row(name: str, which: str, r: TrialResult) -> str:
    if not r.ok:
        return f"| {name} | {which} | {r.failure_kind}: {r.error} | | |"
    return (
        f"| {name} | {which} | {r.speedup_vs_eager:.3f}x ({r.speedup_vs_eager_q1:.3f}-"
        f"{r.speedup_vs_eager_q3:.3f}) | {r.rounds} | "
        f"{(r.eager_latency_median_s or 0) * 1e3:.2f} ms |"
    )


if __name__ == "__main__":
    sys.exit(main())
