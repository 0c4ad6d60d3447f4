"""What freezing and bf16 autocast do to default ``torch.compile``, model by model, measured in
one process, interleaved round-robin.

    python benchmarks/levers_probe.py MODEL.py [MODEL.py ...] [--rounds 30] [--out FILE.md]

For each model file (the contract of ``autotune search``: ``get_model(device)`` and
``get_inputs(device)``, both called after ``torch.manual_seed(0)``), five variants of the same
weights run on the CPU in ``eval()`` mode under ``torch.no_grad()``:

- *eager fp32*: the model as built;
- *compile*: ``torch.compile(model)``, default options;
- *compile+freezing*: the same, with ``torch._inductor.config.freezing = True`` set globally
  while it compiles (its first call), then restored;
- *compile+autocast*: default compile, first called (compiled) and timed inside
  ``torch.autocast("cpu", dtype=torch.bfloat16)``;
- *compile+autocast+freezing*: both.

Every compiled variant gets a deep copy of the model behind a ``forward`` with a code object of
its own: Dynamo keeps graphs on the code object they were traced from, and an unfrozen graph
would otherwise serve every copy (the freezing variant would run the default compile's code).
Each variant is warmed up, then every round calls each variant once, in a shuffled order; the
table gives the median latency over rounds and the median (quartiles) of the per-round ratio
default compile ÷ variant. Errors are against eager fp32: the largest absolute difference and
the cosine similarity, over every floating-point tensor of the output (``ModelOutput`` and other
pytree nodes flattened) concatenated in float64; *gate* is autotune's correctness gate
(``autotune.measure.accuracy.compare_outputs``), which also requires the same dtype, so
autocast outputs in bf16 fail it by construction. Kernels compile into a fresh temporary
Inductor cache per run, shared by the variants in order: only the first compiled variant's
first call is a fully cold compile; later ones may reuse its kernels.
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import torch
import torch.utils._pytree as pytree

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from autotune.measure.accuracy import compare_outputs  # noqa: E402
from autotune.workload import build_calls, build_model, load_model_file  # noqa: E402

VARIANTS = (
    "eager fp32",
    "compile",
    "compile+freezing",
    "compile+autocast",
    "compile+autocast+freezing",
)
BF16_FLAGS = ("avx512_bf16", "amx_bf16", "amx_tile", "amx_int8", "avx512f")


def _own_code(model: torch.nn.Module) -> torch.nn.Module:
    """A deep copy of ``model`` behind a ``forward`` whose code object is its own."""
    namespace: dict[str, Any] = {}
    exec("def forward(self, *args, **kwargs):\n    return self.inner(*args, **kwargs)", namespace)
    wrapper = type("OwnCode", (torch.nn.Module,), {"forward": namespace["forward"]})()
    wrapper.inner = copy.deepcopy(model)
    return wrapper.eval()


def _autocast(name: str) -> Any:
    if "autocast" in name:
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return nullcontext()


@contextmanager
def _freezing(name: str) -> Iterator[None]:
    """``torch._inductor.config.freezing = True`` globally, for a freezing variant's compile."""
    if "freezing" not in name:
        yield
        return
    before = torch._inductor.config.freezing
    torch._inductor.config.freezing = True
    try:
        yield
    finally:
        torch._inductor.config.freezing = before


def _floats(out: Any) -> torch.Tensor:
    leaves = pytree.tree_leaves(out)
    parts = [
        t.detach().reshape(-1).to(torch.float64)
        for t in leaves
        if isinstance(t, torch.Tensor) and t.is_floating_point()
    ]
    return torch.cat(parts)


def _errors(expected: Any, actual: Any) -> dict[str, Any]:
    e, a = _floats(expected), _floats(actual)
    cosine = torch.nn.functional.cosine_similarity(e, a, dim=0).item()
    gate = compare_outputs(expected, actual)
    dtypes = sorted(
        {str(t.dtype).removeprefix("torch.") for t in pytree.tree_leaves(actual)
         if isinstance(t, torch.Tensor)}
    )  # fmt: skip
    return {
        "max_abs": (a - e).abs().max().item(),
        "cosine": cosine,
        "gate": "ok" if gate.ok else "fail",
        "gate_detail": gate.detail,
        "gate_tensors": gate.tensors,
        "dtypes": dtypes,
    }


def _graphs() -> int:
    return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])


def measure(path: str, rounds: int, warmup: int) -> dict[str, Any]:
    module = load_model_file(path)
    torch.manual_seed(0)
    model = build_model(module, "cpu").eval()
    torch.manual_seed(0)
    calls = build_calls(module, "cpu")
    if len(calls) != 1:
        raise SystemExit(f"{path}: get_inputs returned {len(calls)} calls; this probe takes one")
    args, kwargs = calls[0].args, calls[0].kwargs

    def call(fn: Callable[..., Any]) -> Any:
        return fn(*args, **kwargs)

    torch._dynamo.reset()
    result: dict[str, Any] = {"model": path, "variants": {}}
    with torch.no_grad():
        expected = call(model)
        again = call(model)
        result["eager_deterministic"] = bool(compare_outputs(expected, again).ok) and bool(
            torch.equal(_floats(expected), _floats(again))
        )
        fns: dict[str, Callable[..., Any]] = {"eager fp32": model}
        for name in VARIANTS:
            facts: dict[str, Any] = {}
            if name != "eager fp32":
                fns[name] = torch.compile(_own_code(model))
                graphs = _graphs()
                started = time.perf_counter()
                try:
                    with _freezing(name), _autocast(name):
                        call(fns[name])
                except Exception as exc:  # a compile failure is a finding, not a crash
                    del fns[name]
                    result["variants"][name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
                    continue
                facts["first_call_s"] = time.perf_counter() - started
                facts["graphs"] = _graphs() - graphs
            with _autocast(name):
                for _ in range(warmup):
                    out = call(fns[name])
            facts.update(_errors(expected, out))
            result["variants"][name] = facts

        graphs_before_timing = _graphs()
        times: dict[str, list[float]] = {name: [] for name in fns}
        names = list(fns)
        for _ in range(rounds):
            random.shuffle(names)
            for name in names:
                with _autocast(name):
                    started = time.perf_counter()
                    call(fns[name])
                    times[name].append(time.perf_counter() - started)
        result["recompiles_while_timed"] = _graphs() - graphs_before_timing

    base = times.get("compile")
    for name, ts in times.items():
        facts = result["variants"][name]
        facts["median_ms"] = statistics.median(ts) * 1e3
        if base is not None:
            ratios = [b / t for b, t in zip(base, ts, strict=True)]
            q = statistics.quantiles(ratios, n=4)
            facts["vs_compile"] = (q[0], statistics.median(ratios), q[2])
    return result


def machine() -> dict[str, Any]:
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        lscpu = ""
    fields = {}
    for line in lscpu.splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    flags = set(fields.get("Flags", "").split())
    try:
        import transformers

        transformers_version = transformers.__version__
    except ImportError:
        transformers_version = "not installed"
    return {
        "cpu": fields.get("Model name") or platform.processor() or "unknown",
        "cores": len(os.sched_getaffinity(0)),
        "flags": {flag: flag in flags for flag in BF16_FLAGS},
        "mkldnn_bf16": torch.ops.mkldnn._is_mkldnn_bf16_supported(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "transformers": transformers_version,
        "python": platform.python_version(),
    }


def _ratio(q: tuple[float, float, float] | None) -> str:
    return "" if q is None else f"{q[1]:.2f}x ({q[0]:.2f}-{q[2]:.2f})"


def report(
    results: list[dict[str, Any]],
    info: dict[str, Any],
    load: tuple[tuple[float, ...], tuple[float, ...]],
    argv: list[str],
    rounds: int,
) -> str:
    flags = ", ".join(f"{flag} {'yes' if has else 'no'}" for flag, has in info["flags"].items())
    lines = [
        "# Freezing and bf16 autocast on top of default `torch.compile` (CPU)",
        "",
        f"- Machine: {info['cpu']}, {info['cores']} cores, torch {info['threads']} threads.",
        f"- `lscpu` flags for bf16: {flags}; "
        f"`torch.ops.mkldnn._is_mkldnn_bf16_supported()`: {info['mkldnn_bf16']}.",
        f"- torch {info['torch']}, transformers {info['transformers']}, Python {info['python']}.",
        "- Load average (1, 5, 15 min): "
        f"{', '.join(f'{v:.2f}' for v in load[0])} before, "
        f"{', '.join(f'{v:.2f}' for v in load[1])} after.",
        f"- `python benchmarks/levers_probe.py {' '.join(argv)}`: one process, {rounds} rounds, "
        "each variant called once per round in a shuffled order, `eval()` and "
        "`torch.no_grad()`; each compiled variant on its own deep copy, into one fresh Inductor "
        "cache per run (variants after the first may reuse its kernels: *first call* is a "
        "cold compile only for *compile*).",
        "",
        "*vs compile* is the median (quartiles) over rounds of default compile's time ÷ the "
        "variant's. Errors are against eager fp32 over every floating output tensor, flattened "
        "to float64. *gate* is autotune's correctness gate (fp32 tolerances; it also requires "
        "equal dtypes, so a bf16 output fails it by construction).",
        "",
        "| model | variant | median | vs compile | first call | graphs | max abs err | cosine "
        "| out dtype | gate |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        name = Path(r["model"]).stem
        for variant in VARIANTS:
            f = r["variants"].get(variant, {})
            if "error" in f:
                lines.append(f"| {name} | {variant} | compile failed: {f['error']} |||||||| ")
                continue
            first = f"{f['first_call_s']:.1f} s" if "first_call_s" in f else ""
            graphs = str(f["graphs"]) if "graphs" in f else ""
            lines.append(
                f"| {name} | {variant} | {f['median_ms']:.2f} ms | {_ratio(f.get('vs_compile'))} "
                f"| {first} | {graphs} | {f['max_abs']:.2e} | {f['cosine']:.6f} "
                f"| {'/'.join(f['dtypes'])} | {f['gate']} |"
            )
    lines += ["", "Per model:", ""]
    for r in results:
        fails = [
            f"{v}: {r['variants'][v]['gate_detail']}"
            for v in VARIANTS
            if r["variants"].get(v, {}).get("gate") == "fail"
        ]
        tensors = r["variants"]["eager fp32"]["gate_tensors"]
        deterministic = "yes" if r["eager_deterministic"] else "NO"
        lines.append(
            f"- `{r['model']}`: eager deterministic {deterministic}; "
            f"the gate compared {tensors} tensor(s) of the output; graphs compiled while timed "
            f"(recompiles) {r['recompiles_while_timed']}"
            + (f"; gate failures: {'; '.join(fails)}" if fails else "")
            + "."
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", help="model files (get_model, get_inputs)")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3, help="calls after the compile")
    parser.add_argument("--out", type=Path, help="also write the markdown table here")
    args = parser.parse_args(argv)

    info = machine()
    load_before = os.getloadavg()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(Path(tmp) / "inductor")
        for path in args.models:
            print(f"measuring {path}", file=sys.stderr, flush=True)
            results.append(measure(path, args.rounds, args.warmup))
    text = report(results, info, (load_before, os.getloadavg()), argv, args.rounds)
    print(text, end="")
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
