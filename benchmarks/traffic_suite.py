"""The traffic suite: a served model's traffic (requests of varying shapes, each with its
weight), eager against default torch.compile (automatic dynamic shapes), ``dynamic=True``, the
shape plans on their own and autotune's tuned plan, timed side by side in one process.

    python benchmarks/traffic_suite.py [--model bert] [--trials 10] [--search-args '...']
        [--traffic FILE] [--seconds 40] [--out results/traffic_suite_DEVICE.md] [--config F]

First a real ``autotune search`` of the model's file (benchmarks/models/bert_traffic.py: its
``get_traffic``, or with ``--traffic`` a recorded trace its ``get_request`` builds; its
``PADDING`` lets the search try the shape plans). Then, in this process, per variant a fresh
model of the same seed:

- eager;
- default torch.compile: automatic dynamic shapes (a static graph, then a dynamic one);
- ``dynamic=True``: one dynamic graph from the first call;
- marked / pad-pow2 / pad-64: default compile with the shape plan
  (:mod:`autotune.runtime.shapes`) around each call;
- tuned: the search's best-config file, ``autotune.apply(model, file, warmup="plan")``.

Figures per variant: start-up (compiling every shape the traffic brings: ``warmup="plan"``
for the tuned file, one pass over the traffic for the others) and its graphs; then rounds over
the traffic, every variant in each round (order reversed every other round), each request
timed once per round: a request's latency is its median, and the traffic's weighted mean and
weighted p50/p95/p99 come from those; the largest difference from eager's outputs (the
per-token output, cut back where padded). Writes the markdown report to --out and the raw
figures beside it (.json).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from suite import device_name

import autotune
from autotune._atomic import write_text
from autotune.measure import RequestTiming, traffic_summary
from autotune.runtime.config import CompileConfig
from autotune.workload import build_calls, read_trace

HERE = Path(__file__).resolve().parent
MODELS = {"bert": HERE / "models" / "bert_traffic.py"}
PLANS = ("marked", "pad-pow2", "pad-64")
MIN_ROUNDS = 5
SEED = 0


def load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"traffic_suite_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fresh(module: Any, device: str, tag: str = "") -> torch.nn.Module:
    """The model file's model, seeded, eval; with ``tag``, an instance of a subclass of its own
    (named after the variant): Dynamo guards on the module's type, so each variant compiles its
    own graphs here instead of finding another variant's (same code objects, equal backend)."""
    torch.manual_seed(SEED)
    model = module.get_model(device).eval()
    if tag:
        cls = type(model)
        model.__class__ = type(f"{cls.__name__}_{tag}", (cls,), {})
    return model


def variants(module: Any, best_file: Path | None) -> dict[str, Any]:
    """Each variant: how to make it from a fresh model, and its warm-up."""
    made: dict[str, Any] = {
        "eager": lambda m: m,
        "default torch.compile": lambda m: torch.compile(m),
        "dynamic=True": lambda m: torch.compile(m, dynamic=True),
    }
    for plan in PLANS:
        config = CompileConfig(shapes={"plan": plan, **module.PADDING})
        made[f"default + {plan}"] = lambda m, c=config: autotune.apply(m, c)
    if best_file is not None:
        made["tuned (autotune)"] = lambda m: autotune.apply(
            m, str(best_file), warmup="plan", check_environment=False
        )
    return made


def graphs() -> int:
    return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])


def run_search(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    best, db = args.out.with_suffix(".best.json"), args.out.with_suffix(".db")
    best.parent.mkdir(parents=True, exist_ok=True)
    db.unlink(missing_ok=True)
    traffic = ["--traffic", str(args.traffic)] if args.traffic else []
    command = [
        sys.executable, "-m", "autotune.cli", "search", str(MODELS[args.model]), "--device",
        args.device, "--space", args.device.split(":")[0], "--trials", str(args.trials),
        "--study", "traffic", "--storage", f"sqlite:///{db}", "--out", str(best),
        "--cache-dir", str(tmp / "cache"), "--quiet", *traffic, *shlex.split(args.search_args),
    ]  # fmt: skip
    print(f"# search: {shlex.join(command[3:])}", flush=True)
    started = time.monotonic()
    done = subprocess.run(command)
    search = {"command": shlex.join(["autotune", *command[3:]]), "exit": done.returncode,
              "wall_s": time.monotonic() - started}  # fmt: skip
    if done.returncode == 0:
        search["file"] = json.loads(best.read_text())
        search["path"] = str(best)
    return search


def measure(args: argparse.Namespace, module: Any, search: dict[str, Any]) -> dict[str, Any]:
    device = args.device
    traffic = read_trace(args.traffic) if args.traffic else None
    calls = build_calls(module, device, None, traffic)
    total = sum(c.weight or 0.0 for c in calls)
    weights = [(c.weight or 0.0) / total for c in calls]
    decided = search.get("file", {}).get("decision") == "compile"
    made = variants(module, Path(search["path"]) if decided else None)
    rows: dict[str, dict[str, Any]] = {}
    models: dict[str, Any] = {}
    reference = None
    with torch.no_grad():
        for label, make in made.items():
            row: dict[str, Any] = rows.setdefault(label, {})
            try:
                before, started = graphs(), time.perf_counter()
                model = make(fresh(module, device, f"variant{len(rows)}"))
                outs = [model(*c.args, **c.kwargs).last_hidden_state for c in calls]
                row["startup_s"] = time.perf_counter() - started
                row["startup_graphs"] = graphs() - before
            except Exception as exc:  # noqa: BLE001 - a failing variant is reported
                row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                print(f"# {label} failed: {row['error']}", flush=True)
                continue
            reference = outs if reference is None else reference
            row["max_abs_diff"] = max(
                float((o - r).abs().max()) for o, r in zip(outs, reference, strict=True)
            )
            models[label] = model
        samples = {label: [[] for _ in calls] for label in models}
        order, rounds = list(models), 0
        deadline = time.perf_counter() + args.seconds
        before = graphs()
        while rounds < MIN_ROUNDS or time.perf_counter() < deadline:
            for label in order:
                model = models[label]
                for i, c in enumerate(calls):
                    started = time.perf_counter()
                    model(*c.args, **c.kwargs)
                    samples[label][i].append(time.perf_counter() - started)
            order.reverse()
            rounds += 1
    for label, per_request in samples.items():
        eager = samples["eager"]
        timed = [
            RequestTiming(w, statistics.median(e), statistics.median(s))
            for w, e, s in zip(weights, eager, per_request, strict=True)
        ]
        rows[label].update(traffic_summary(timed), rounds=rounds)
    return {"rows": rows, "graphs_while_timed": graphs() - before, "requests": len(calls)}


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.2f} ms"


def report(machine: dict[str, Any], search: dict[str, Any], measured: dict[str, Any]) -> str:
    file = search.get("file") or {}
    config = file.get("config")
    brief = "do not compile" if file and config is None else json.dumps(config)
    metrics = file.get("metrics", {})
    lines = [
        f"# Traffic suite on {machine['device']}: a served model's traffic side by side",
        "",
        f"{machine['date']}. {machine['name']}; torch {machine['torch']}, transformers "
        f"{machine['transformers']}; {machine['extra']}. Command: `{machine['command']}`.",
        "",
        f"Model: benchmarks/models/{machine['model_file']} ({machine['params_m']:.1f} M "
        f"parameters, fp32); traffic: {measured['requests']} requests "
        f"({machine['traffic']}).",
        "",
        f"Search ({search['wall_s']:.0f} s, exit {search['exit']}): `{search['command']}`. "
        f"Emitted: `{brief}`; in the search it ran "
        f"{metrics.get('speedup_vs_eager', 0):.2f}x eager per request of the traffic and "
        f"{metrics.get('speedup_vs_default', 0):.2f}x default compile, p99 "
        f"{_ms(metrics.get('traffic_p99_s'))}, start-up "
        f"{metrics.get('traffic_startup_s', 0):.1f} s (`{machine['out']}.db` holds the study, "
        "`.best.json` the file).",
        "",
        "| variant | mean per request | vs eager | p50 | p95 | p99 | p99 vs eager | start-up "
        "(graphs) | max abs diff vs eager |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    rows = measured["rows"]
    eager = rows.get("eager", {})
    for label, row in rows.items():
        if "error" in row:
            lines.append(f"| {label} | {row['error']} ||||||||")
            continue
        lines.append(
            f"| {label} | {_ms(row['mean_s'])} | {eager['mean_s'] / row['mean_s']:.2f}x | "
            f"{_ms(row['p50_s'])} | {_ms(row['p95_s'])} | {_ms(row['p99_s'])} | "
            f"{eager['p99_s'] / row['p99_s']:.2f}x | {row['startup_s']:.1f} s "
            f"({row['startup_graphs']}) | {row['max_abs_diff']:.2g} |"
        )
    lines += [
        "",
        f"Rounds timed: {next(iter(rows.values())).get('rounds', '-')}, every request of the "
        f"traffic once per variant per round; graphs compiled while timed: "
        f"{measured['graphs_while_timed']}.",
        "",
    ]
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="bert")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=40.0, help="timing, in rounds")
    parser.add_argument("--traffic", type=Path, help="a recorded trace (get_request builds it)")
    parser.add_argument("--search-args", default="", help="more options for the search, quoted")
    parser.add_argument("--out", type=Path, help="default results/traffic_suite_DEVICE.md")
    parser.add_argument("--config", type=Path, help="an earlier search's file: no search")
    args = parser.parse_args(argv)
    trace = "_trace" if args.traffic else ""
    device = args.device.split(":")[0]
    args.out = args.out or HERE / "results" / f"traffic_suite_{device}{trace}.md"
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import transformers

    module = load(MODELS[args.model])
    params_m = sum(p.numel() for p in fresh(module, "cpu").parameters()) / 1e6
    extra = (
        f"CUDA {torch.version.cuda}, {len(os.sched_getaffinity(0))} CPU cores"
        if args.device.startswith("cuda")
        else f"{len(os.sched_getaffinity(0))} cores, load {os.getloadavg()[0]:.2f} at the start"
    )
    traffic = (
        f"the recorded trace {args.traffic}, built by get_request"
        if args.traffic
        else "the model file's get_traffic, one request each"
    )
    machine = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "device": args.device, "name": device_name(args.device), "torch": torch.__version__,
        "transformers": transformers.__version__, "extra": extra, "traffic": traffic,
        "command": shlex.join(["python", *sys.argv]), "out": args.out.stem,
        "params_m": params_m, "model_file": MODELS[args.model].name,
    }  # fmt: skip
    earlier = args.out.with_suffix(".json")
    if args.config is not None and earlier.exists():  # this suite's own earlier search
        search = json.loads(earlier.read_text())["search"]
        search["path"] = str(args.config)
    elif args.config is not None:  # an earlier run's search
        search = {
            "command": f"(an earlier search: {args.config})", "exit": 0, "wall_s": 0.0,
            "file": json.loads(args.config.read_text()), "path": str(args.config),
        }  # fmt: skip
    else:
        with tempfile.TemporaryDirectory(prefix="traffic_suite-") as tmp:
            search = run_search(args, Path(tmp))
    # Every variant compiles the same code objects in this one process: room for all of them.
    torch._dynamo.config.recompile_limit = 64
    measured = measure(args, module, search)
    text = report(machine, search, measured)
    raw = {"machine": machine, "search": search, "measured": measured}
    write_text(args.out, text)
    write_text(args.out.with_suffix(".json"), json.dumps(raw, indent=1, default=str) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
