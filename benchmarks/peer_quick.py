"""autotune's quickest search against pytorch-autotune, the only pip-installable peer, on its own
ground: the training step of a tiny MLP on a CPU (benchmarks/models/tiny_mlp_train.py), where
eager wins. Each tool runs in a fresh process; the wall time of the whole call is measured, and
what each decided.

    pip install pytorch-autotune==2.0.0
    python benchmarks/peer_quick.py [--out benchmarks/results/peer_quick_cpu.md]

autotune runs twice: as it is (`--effort quick`: it stops once default compile and the presets
ran clearly slower than eager) and with `--no-prune` (every configuration searched, timed in
full: what `--effort quick` cost before the early stop). Run on an idle machine: the load
average is recorded before and after, and a run started above 0.5 says so.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
MODEL = HERE / "models" / "tiny_mlp_train.py"

PEER = f"""
import importlib.util, json, time, torch
spec = importlib.util.spec_from_file_location("m", {str(MODEL)!r})
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
from pytorch_autotune import autotune
model, (x,) = m.get_model("cpu"), m.get_inputs("cpu")
y = torch.arange(x.shape[0]) % 10
started = time.perf_counter()
result = autotune(model, (x, y), device="cpu", budget="fast", cache=False, verbose=False)
print(json.dumps({{"seconds": time.perf_counter() - started, "picked": str(result.config.label)}}))
"""


def _run_autotune(extra: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        command = [
            sys.executable, "-m", "autotune.cli", "search", str(MODEL), "--device", "cpu",
            "--effort", "quick", "--workload", "train", "--storage",
            f"sqlite:///{folder}/a.db", "--out", f"{folder}/best.json", *extra,
        ]  # fmt: skip
        env = {**os.environ, "AUTOTUNE_CACHE_DIR": f"{folder}/kernels"}
        started = time.perf_counter()
        run = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        seconds = time.perf_counter() - started
        if run.returncode != 0:
            tail = f"{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
            raise SystemExit(f"autotune search failed:\n{tail}")
        best = json.loads(Path(folder, "best.json").read_text())
        stop = [line for line in run.stdout.splitlines() if line.startswith("stopping:")]
        return {"seconds": seconds, "picked": best["decision"], "stopped": stop[:1]}


def _run_peer() -> dict[str, Any]:
    run = subprocess.run([sys.executable, "-c", PEER], capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise SystemExit(f"pytorch-autotune failed:\n{run.stderr[-3000:]}")
    return dict(json.loads(run.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=HERE / "results" / "peer_quick_cpu.md")
    args = parser.parse_args()
    before = os.getloadavg()
    rows = [
        ("autotune search --effort quick", _run_autotune([])),
        ("autotune search --effort quick --no-prune", _run_autotune(["--no-prune"])),
        ("pytorch-autotune 2.0.0 autotune(budget='fast')", _run_peer()),
    ]
    after = os.getloadavg()
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model_name = next((ln.split(":", 1)[1].strip() for ln in cpu.splitlines()
                       if ln.startswith("Model name")), "?")  # fmt: skip
    lines = [
        "# autotune's quickest search against pytorch-autotune, on a tiny MLP training step",
        "",
        f"Machine: {model_name}, {os.cpu_count()} CPUs. Load average (1, 5, 15 min) "
        f"{before[0]:.2f}, {before[1]:.2f}, {before[2]:.2f} before; {after[0]:.2f}, "
        f"{after[1]:.2f}, {after[2]:.2f} after"
        + (" (busy: above 0.5 at the start)." if before[0] > 0.5 else "."),
        f"`python benchmarks/peer_quick.py`: the training step of "
        f"`{MODEL.relative_to(HERE.parent)}`, each tool in a fresh process.",
        "",
        "| tool | wall time (s) | picked | why it stopped |",
        "|---|---|---|---|",
    ]
    for name, row in rows:
        stopped = "; ".join(row.get("stopped") or []) or "-"
        lines.append(f"| {name} | {float(row['seconds']):.1f} | {row['picked']} | {stopped} |")
    text = "\n".join(lines) + "\n"
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
