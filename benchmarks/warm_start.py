"""A fresh process's first call (import, apply, first forward) without anything shipped, with
the compile cache, and with the AOTInductor package shipped beside a best-config file (issue
15's goal: with what is shipped <= 0.3x without).

    python benchmarks/warm_start.py studies/convnet.py best_config.json [--repeats 3]
    python benchmarks/warm_start.py studies/bert_tiny.py bert.json --default-compile

With --default-compile the file is first written with default torch.compile for the model
(and its cache and package exported): their effect does not depend on which config won a
search. --frozen writes max-autotune-no-cudagraphs with frozen weights instead: its package
embeds the folded weights, and the compile cache holds the frozen graphs.

Each run is a new Python process with a new, empty Inductor cache directory, so "without"
is a cold compile as on a newly deployed machine, "cache" loads only the shipped archive, and
"aot" loads the package (where the file has one; the row is left out otherwise). The file
must carry a cache (autotune search --save-cache, or autotune cache export).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Any

_CHILD = r"""
import json, sys, time
started = time.perf_counter()
import torch
import autotune
from autotune.workload import build_calls, build_model, load_model_file
from pathlib import Path
model_path, best_path, mode = sys.argv[1], sys.argv[2], sys.argv[3]
best = autotune.load(best_path)
# "cache": the archive alone (a path loads it and no package); "aot": whatever the file ships
use = {"none": False, "cache": str(Path(best_path).parent / str((best.cache or {}).get("path"))),
       "aot": True}[mode]
module = load_model_file(model_path)
torch.manual_seed(int(best.workload.get("seed") or 0))
model = build_model(module, "cpu").eval()
calls = build_calls(module, "cpu")
imported = time.perf_counter()
with torch.no_grad():
    fast = autotune.apply(model, best_path, cache=use)
    applied = time.perf_counter()
    call = calls[0]
    fast(*call.args, **call.kwargs)
done = time.perf_counter()
print(json.dumps({"first_output_s": done - started, "apply_s": applied - imported,
                  "first_call_s": done - applied, "served_by": type(fast).__name__}))
"""


def run(model: str, best: str, mode: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="warm-start-") as tmp:
        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=tmp)
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, model, best, mode],
            env=env, capture_output=True, text=True, check=True,
        )  # fmt: skip
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("best")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--default-compile",
        action="store_true",
        help="write BEST with default torch.compile and export its cache first",
    )
    parser.add_argument(
        "--frozen",
        action="store_true",
        help="write BEST with max-autotune-no-cudagraphs + freezing and export its cache first",
    )
    args = parser.parse_args()
    if args.default_compile or args.frozen:
        write(args.model, args.best, frozen=args.frozen)
    import autotune

    modes = ["none", "cache"] + (["aot"] if autotune.load(args.best).aot else [])
    results: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
    for _ in range(args.repeats):  # interleaved: drift on a shared machine hits all alike
        for mode in modes:
            results[mode].append(run(args.model, args.best, mode))
    median = {k: statistics.median(r["first_output_s"] for r in v) for k, v in results.items()}
    ratios = {k: median[k] / median["none"] for k in modes if k != "none"}
    best = autotune.load(args.best)
    shipped = {k: {"bytes": a["bytes"], **({"weights": a["weights"]} if "weights" in a else {})}
               for k, a in (("cache", best.cache), ("aot", best.aot)) if a}  # fmt: skip
    print(json.dumps({"model": args.model, "config": autotune_brief(args.best), "runs": results,
                      "median_first_output_s": median, "ratio": ratios, "shipped": shipped},
                     indent=1))  # fmt: skip


def write(model: str, best: str, *, frozen: bool) -> None:
    """Writes ``best`` with default torch.compile, or (``frozen``) max-autotune-no-cudagraphs
    with frozen weights, and exports its cache and package."""
    import torch

    from autotune.runtime import BestConfig, CompileConfig
    from autotune.ship import ship_cache

    mode = "max-autotune-no-cudagraphs" if frozen else "default"
    options = {**torch._inductor.list_mode_options(mode), "freezing": True} if frozen else {}
    BestConfig(
        decision="compile",
        reason=f"{'frozen ' if frozen else ''}{mode} torch.compile (benchmark)",
        config=CompileConfig(mode=mode, options=options),
        model={"source": os.path.abspath(model)},
        workload={"kind": "infer", "device": "cpu", "seed": 0},
    ).dump(best)
    ship_cache(best, aot=True, on_note=lambda note: print(note, file=sys.stderr))


def autotune_brief(best: str) -> str:
    import autotune

    config = autotune.load(best).config
    return config.brief() if config is not None else "do not compile"


if __name__ == "__main__":
    main()
