"""The same search with and without builders (``--builders``): wall time, configurations per
hour and the config each emits (issue 45's figure on a GPU node, or on a CPU with spare cores).

    python benchmarks/builders.py studies/bert_tiny.py --device cuda --trials 16 --builders 3 \\
        --out benchmarks/results/builders_cuda_h100

Each search is a new study in a database and a kernel cache of its own, seeded alike (the
sampler draws the same first configurations; what it draws later depends on what it measured),
run as a user would (``autotune search``), one after the other. Writes OUT.md (the table, the
machine) and OUT.json (the raw figures, each search's output).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", help="a model file, e.g. studies/bert_tiny.py")
    p.add_argument("--device", default="cuda")
    p.add_argument("--trials", type=int, default=16)
    p.add_argument("--builders", type=int, default=3, help="the builders of the second search")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--extra", default="", help="more options for both searches")
    p.add_argument("--out", required=True, help="OUT.md and OUT.json are written")
    return p.parse_args(argv)


def search(args: argparse.Namespace, builders: int, folder: Path) -> dict[str, Any]:
    """One ``autotune search`` with ``--builders builders``: its wall time and what it did."""
    db, best = folder / f"b{builders}.db", folder / f"b{builders}.json"
    cache = folder / f"cache-b{builders}"  # each search compiles cold: no kernel of the other's
    command = [
        sys.executable, "-m", "autotune.cli", "search", args.model, "--device", args.device,
        "--trials", str(args.trials), "--seed", str(args.seed), "--builders", str(builders),
        "--storage", f"sqlite:///{db}", "--out", str(best), "--cache-dir", str(cache),
        *args.extra.split(),
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    figures = {"builders": builders, "wall_s": wall, "exit": done.returncode,
               "output": done.stdout[-20000:] + done.stderr[-4000:]}  # fmt: skip
    if done.returncode == 0:
        figures.update(_study(db))
        figures["emitted"] = json.loads(best.read_text()).get("config")
    return figures


def _study(db: Path) -> dict[str, Any]:
    """What the study's records say: trials measured, waits, compile and timing seconds."""
    with sqlite3.connect(db) as connection:
        rows = connection.execute("select result_json from autotune_trials").fetchall()
    results = [json.loads(r[0]) for r in rows]
    phases = [r.get("phases") or {} for r in results]
    return {
        "trials": len(results),
        "ok": sum(r.get("status") == "ok" for r in results),
        "compile_s": sum(p.get("compile_s", 0.0) for p in phases),
        "timing_s": sum(p.get("timing_s", 0.0) for p in phases),
        "waited_s": sum(p.get("waited_s", 0.0) for p in phases),
    }


def _device(device: str) -> str:
    """The device, its cores, and the versions that decide the generated code."""
    import torch
    from suite import _cuda_versions, device_name

    name = f"{device_name(device)}, torch {torch.__version__}"
    if device.startswith("cuda"):
        name += ", " + ", ".join(f"{k} {v}" for k, v in _cuda_versions().items())
    return name


def render(args: argparse.Namespace, runs: list[dict[str, Any]]) -> str:
    lines = [
        f"# The same search with and without builders ({Path(args.model).name}, {args.device})",
        "",
        f"Machine: {platform.node()}, {_device(args.device)}; "
        f"{os.cpu_count()} cores in all; Python {platform.python_version()}; load average "
        f"{', '.join(f'{x:.2f}' for x in os.getloadavg())} at the end. `python "
        f"benchmarks/builders.py {args.model} --device {args.device} --trials {args.trials} "
        f"--builders {args.builders} --seed {args.seed}`"
        + (f" `--extra '{args.extra}'`" if args.extra else "")
        + ".",
        "",
        "| builders | exit | wall | trials recorded | configurations per hour | compile s | "
        "timing s | waited s | emitted config |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        rate = r.get("trials", 0) / (r["wall_s"] / 3600) if r["wall_s"] else 0.0
        lines.append(
            f"| {r['builders']} | {r['exit']} | {r['wall_s']:.0f} s | {r.get('trials', '-')} | "
            f"{rate:.0f} | {r.get('compile_s', 0):.0f} | {r.get('timing_s', 0):.0f} | "
            f"{r.get('waited_s', 0):.0f} | `{json.dumps(r.get('emitted'))[:120]}` |"
        )
    if len(runs) == 2 and runs[1]["wall_s"]:
        lines += [
            "",
            f"Wall time without ÷ with builders: {runs[0]['wall_s'] / runs[1]['wall_s']:.2f}x.",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="builders-") as tmp:
        for n in (0, args.builders):
            runs.append(search(args, n, Path(tmp)))
            # written after each search: a run cut short keeps the first
            Path(f"{args.out}.json").write_text(json.dumps({"args": vars(args), "runs": runs}))
            Path(f"{args.out}.md").write_text(render(args, runs))
    print(render(args, runs))
    return 0 if all(r["exit"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
