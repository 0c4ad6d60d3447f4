"""Measure every configuration of a space on a quiet machine: the table that
``benchmarks/search_quality.py`` replays searches against.

    python benchmarks/quality_table.py studies/convnet.py --space benchmarks/quality_cpu.toml \\
        --out benchmarks/results/quality_convnet_cpu.parquet [--processes 2] [--max-busy 0.15]

Every configuration runs through the normal trial path (the warm trial host forks one process
per trial, a shared kernel cache, timing interleaved with eager inside each trial) in
``--processes`` passes: the first in the space's order (cold compiles), each later one in the
reverse order (its compiles find the kernel cache filled, as a search's finalists do), so each
configuration is timed in at least two processes at two different points of the run.

**A quiet machine or nothing.** Before every trial the machine's CPU use is sampled for half a
second while nothing of this run is working (``/proc/stat``: busy and stolen time over all
cores). Above ``--max-busy`` the run waits for the machine to be quiet again, for at most
``--quiet-wait`` seconds, and then stops with exit code 2: a table measured under load is
refused, not written. Every sample is kept in the table's metadata.

**Nothing lost.** Each finished trial is appended to ``OUT.runs.jsonl``; running the same
command again resumes where it stopped. The table is written atomically at the end.

Columns per configuration: its Optuna parameters, config hash, status, ``speedup`` (the median
of the passes' medians), ``q1``/``q3`` (the widest of the passes' quartiles), ``compile_s``
(cold) and ``warm_compile_s``, ``timing_s`` (seconds one pass spent timing), ``wall_s`` (a cold
trial's wall time), the generated code's identity ``code_hash``, ``graphs``, and ``runs`` (every
pass as JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from search_quality import configs_of


class NotQuiet(Exception):
    """The machine stayed busy past --quiet-wait."""


def busy_share(seconds: float = 0.5) -> float:
    """The share of all cores' time spent busy or stolen over ``seconds`` (0.0 to 1.0)."""

    def sample() -> tuple[int, int]:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
        idle = fields[3] + fields[4]  # idle, iowait
        total = sum(fields[:8])  # user nice system idle iowait irq softirq steal
        return total - idle, total

    busy0, total0 = sample()
    time.sleep(seconds)
    busy1, total1 = sample()
    return (busy1 - busy0) / max(1, total1 - total0)


def wait_for_quiet(max_busy: float, patience_s: float, log: list[float]) -> None:
    """Returns once the machine is quiet; raises NotQuiet after ``patience_s`` of load."""
    started = time.monotonic()
    while True:
        share = busy_share()
        log.append(round(share, 3))
        if share <= max_busy:
            return
        if time.monotonic() - started > patience_s:
            raise NotQuiet(
                f"the machine stayed {share:.0%} busy (above --max-busy {max_busy:.0%}) for "
                f"{patience_s:.0f} s with nothing of this run working"
            )
        time.sleep(5)


def _run_row(result: Any, seconds: float) -> dict[str, Any]:
    return {
        "status": result.status, "failure_kind": result.failure_kind,
        "speedup": result.speedup_vs_eager, "q1": result.speedup_vs_eager_q1,
        "q3": result.speedup_vs_eager_q3, "compile_s": result.compile_time_s,
        "timing_s": result.phases.get("timing_s"), "wall_s": seconds,
        "code_hash": result.code_hash, "graphs": result.graphs, "rounds": result.rounds,
    }  # fmt: skip


def _row(digest: str, params: dict[str, Any], brief: str, runs: list[dict[str, Any]]) -> dict:
    ran = [r for r in runs if r["status"] == "ok" and r["speedup"]]
    failed = next((r for r in runs if r["status"] != "ok"), None)
    ok = ran if failed is None else []  # the passes' speedups pool only when every pass ran
    cold = runs[0]
    return {
        "config_hash": digest, "params": json.dumps(params, sort_keys=True), "brief": brief,
        "status": "ok" if ok else "failed",
        "failure_kind": failed["failure_kind"] if failed else None,
        "speedup": statistics.median(r["speedup"] for r in ok) if ok else None,
        "q1": min(r["q1"] or r["speedup"] for r in ok) if ok else None,
        "q3": max(r["q3"] or r["speedup"] for r in ok) if ok else None,
        "compile_s": cold["compile_s"],
        "warm_compile_s": runs[-1]["compile_s"] if len(runs) > 1 else None,
        "timing_s": statistics.median(r["timing_s"] for r in ran if r["timing_s"] is not None)
        if any(r["timing_s"] is not None for r in ran) else None,
        "wall_s": cold["wall_s"], "code_hash": cold["code_hash"], "graphs": cold["graphs"],
        "runs": json.dumps(runs),
    }  # fmt: skip


def measure(args: argparse.Namespace) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq
    import torch

    from autotune.space import load_space
    from autotune.trials import MeasureSettings, PreloadedHostRunner, TrialSpec

    space = load_space(args.space, args.device)
    items = list(configs_of(space).items())[: args.limit or None]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    journal = out.with_suffix(".runs.jsonl")
    done: dict[tuple[str, int], dict[str, Any]] = {}
    if journal.exists():
        for line in journal.read_text().splitlines():
            entry = json.loads(line)
            done[(entry["config_hash"], entry["pass"])] = entry["run"]
    quiet_log: list[float] = []
    todo = [
        (p, digest, config)
        for p in range(args.processes)
        for digest, (_, config) in (items if p == 0 else list(reversed(items)))
        if (digest, p) not in done
    ]
    print(
        f"{space.name}: {len(items)} configurations x {args.processes} processes; "
        f"{len(done)} runs already in {journal}, {len(todo)} to go",
        file=sys.stderr,
    )
    started = time.monotonic()
    cache = out.with_suffix(".kernels")
    try:
        with PreloadedHostRunner() as runner, journal.open("a") as log:
            for i, (p, digest, config) in enumerate(todo):
                wait_for_quiet(args.max_busy, args.quiet_wait, quiet_log)
                spec = TrialSpec(
                    model_path=args.model, device=args.device, config=config.to_dict(),
                    measure=MeasureSettings(target_seconds=args.measure_seconds),
                    cache_dir=str(cache), time_limit_s=300.0,
                )  # fmt: skip
                t0 = time.monotonic()
                result = runner.run(spec)
                run = _run_row(result, time.monotonic() - t0)
                done[(digest, p)] = run
                log.write(json.dumps({"config_hash": digest, "pass": p, "run": run}) + "\n")
                log.flush()
                left = (time.monotonic() - started) / (i + 1) * (len(todo) - i - 1)
                print(
                    f"{i + 1}/{len(todo)} pass {p + 1} {config.brief()[:60]}: {result.status} "
                    f"{result.speedup_vs_eager or 0:.3f}x busy {quiet_log[-1]:.0%} "
                    f"(about {left / 60:.0f} min left)",
                    file=sys.stderr,
                    flush=True,
                )
    except NotQuiet as e:
        print(
            f"quality_table: refused: {e}. {len(done)} runs are kept in {journal}; run the "
            "same command on a quiet machine to resume. No table was written.",
            file=sys.stderr,
        )
        return 2
    rows = [
        _row(digest, params, config.brief(), [done[(digest, p)] for p in range(args.processes)])
        for digest, (params, config) in items
    ]
    meta = {
        "model": args.model, "space": space.to_dict(), "device": args.device,
        "processes": args.processes, "measure_seconds": args.measure_seconds,
        "machine": {"node": platform.node(), "cpu": _cpu_model(), "cores": os.cpu_count(),
                    "torch": torch.__version__, "python": platform.python_version()},
        "quiet": {"max_busy": args.max_busy, "samples_this_run": len(quiet_log),
                  "median_busy": statistics.median(quiet_log) if quiet_log else None,
                  "max_busy_seen": max(quiet_log, default=None)},
        "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }  # fmt: skip
    table = pa.Table.from_pylist(rows).replace_schema_metadata({"autotune": json.dumps(meta)})
    partial = out.with_name(out.name + ".partial")
    pq.write_table(table, partial)
    os.replace(partial, out)
    print(
        f"wrote {out}: {len(rows)} configurations; busy between trials: median "
        f"{meta['quiet']['median_busy']}, max {meta['quiet']['max_busy_seen']}",
        file=sys.stderr,
    )
    return 0


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", metavar="MODEL.py")
    parser.add_argument("--space", default="benchmarks/quality_cpu.toml")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", metavar="TABLE.parquet", required=True)
    parser.add_argument("--processes", type=int, default=2, help="passes, one process each")
    parser.add_argument(
        "--measure-seconds",
        type=float,
        default=0.5,
        help="timing per trial and pass (default 0.5)",
    )
    parser.add_argument(
        "--max-busy",
        type=float,
        default=0.15,
        help="the busiest the machine may be between trials (default 0.15)",
    )
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=600.0,
        help="seconds to wait for a quiet machine before refusing",
    )
    parser.add_argument("--limit", type=int, help="measure only the first N configurations")
    args = parser.parse_args()
    if args.processes < 2:
        parser.error("--processes must be at least 2: one process's figures do not show how "
                     "much a configuration's speed moves between processes")  # fmt: skip
    return measure(args)


if __name__ == "__main__":
    raise SystemExit(main())
