"""Freezing + max-autotune through ``autotune.apply`` against the same compile written by hand,
in one process, timed round-robin (issue 24's table, re-measured).

    python benchmarks/freezing_apply.py [--models resnet18,llama,tiny_mlp] [--seconds 30]

For each model, five variants of the same weights run side by side: eager; default
``torch.compile``; freezing + ``max-autotune-no-cudagraphs`` written the way PyTorch documents
it (``torch._inductor.config.freezing = True`` while the model compiles); ``autotune.apply`` of
a best-config file asking for that config; and ``torch.compile(options={"freezing": True,
"max_autotune": True, ...})``, which is what ``apply`` passed before freezing was set around
calls (autotune.runtime._calls). Each round calls every variant in a shuffled order; a
variant's speedup in a round is eager's time over its own, and the table gives the median and
quartiles over rounds. Writes ``benchmarks/results/freezing_apply_<device>.md`` and the raw
JSON beside it.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from suite import cpu_flags, device_name  # noqa: E402

import autotune  # noqa: E402
from autotune.runtime.config import BestConfig, CompileConfig  # noqa: E402

MODELS = {
    "resnet18": HERE / "models" / "resnet18.py",
    "llama": HERE / "models" / "llama.py",
    # Microseconds a call: what setting freezing around each call costs shows here, if anywhere.
    "tiny_mlp": HERE / "models" / "tiny_mlp.py",
}
MODE = "max-autotune-no-cudagraphs"
VARIANTS = ("eager", "default compile", "by hand", "autotune.apply", "options= only")


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _call(fn: Callable[..., Any], inputs: Any) -> Any:
    return fn(**inputs) if isinstance(inputs, dict) else fn(*inputs)


def _logits(out: Any) -> torch.Tensor:
    return out.logits if hasattr(out, "logits") else out


def _own_code(model: torch.nn.Module) -> torch.nn.Module:
    """A copy of ``model`` behind a ``forward`` with a code object of its own.

    Dynamo keeps compiled graphs on the code object they were traced from, and a graph whose
    weights are graph inputs (not frozen) serves any instance of the class whose compile used
    equal options. Without this, the *options= only* variant's unfrozen graph (same options as
    *autotune.apply*'s) would serve the other instance too, and each variant would not be
    measured on its own compile.
    """
    namespace: dict[str, Any] = {}
    exec("def forward(self, *args, **kwargs):\n    return self.inner(*args, **kwargs)", namespace)
    wrapper = type("OwnCode", (torch.nn.Module,), {"forward": namespace["forward"]})()
    wrapper.inner = copy.deepcopy(model)
    return wrapper


def _variants(model: torch.nn.Module, tmp: Path) -> dict[str, torch.nn.Module]:
    options = {**torch._inductor.list_mode_options(MODE), "freezing": True}
    config = CompileConfig(mode=MODE, options=options)
    best = BestConfig(decision="compile", reason="issue 24's table", config=config)
    best.dump(tmp / "best_config.json")
    # torch.compile is lazy: the global must be set at the first call, when it compiles (_warm).
    by_hand = torch.compile(_own_code(model), mode=MODE)
    return {
        "eager": model,
        "default compile": torch.compile(_own_code(model)),
        "by hand": by_hand,
        "autotune.apply": autotune.apply(
            _own_code(model), tmp / "best_config.json", check_environment=False
        ),
        "options= only": torch.compile(_own_code(model), options=options),
    }


def _warm(variants: dict[str, torch.nn.Module], inputs: Any) -> dict[str, dict[str, float]]:
    """First call of each variant (the compile), and its largest difference from eager."""
    expected = _logits(_call(variants["eager"], inputs))
    facts = {}
    for name, fn in variants.items():
        started = time.perf_counter()
        if name == "by hand":
            with torch._inductor.config.patch(freezing=True):
                out = _call(fn, inputs)
        else:
            out = _call(fn, inputs)
        first = time.perf_counter() - started
        diff = (_logits(out) - expected).abs().max().item()
        facts[name] = {"first_call_s": first, "max_abs_diff": diff}
    return facts


def _rounds(
    variants: dict[str, torch.nn.Module], inputs: Any, seconds: float
) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline or len(times["eager"]) < 10:
        random.shuffle(names)
        for name in names:
            started = time.perf_counter()
            _call(variants[name], inputs)
            times[name].append(time.perf_counter() - started)
    return times


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(values, n=4)
    return q[0], statistics.median(values), q[2]


def measure(name: str, seconds: float) -> dict[str, Any]:
    module = _load(MODELS[name])
    torch.manual_seed(0)
    model = module.get_model("cpu").eval()
    inputs = module.get_inputs("cpu")
    with tempfile.TemporaryDirectory() as tmp, torch.no_grad():
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(Path(tmp) / "inductor")
        variants = _variants(model, Path(tmp))
        facts = _warm(variants, inputs)
        times = _rounds(variants, inputs, seconds)
    eager = times["eager"]
    result: dict[str, Any] = {"model": name, "rounds": len(eager), "variants": {}}
    for variant, ts in times.items():
        speedups = [e / t for e, t in zip(eager, ts, strict=True)]
        result["variants"][variant] = {
            **facts[variant],
            "median_ms": statistics.median(ts) * 1e3,
            "speedup_q1_median_q3": _quartiles(speedups),
        }
    by_hand = times["by hand"]
    result["apply_over_by_hand"] = _quartiles(
        [h / a for h, a in zip(by_hand, times["autotune.apply"], strict=True)]
    )
    return result


def report(results: list[dict[str, Any]], machine: dict[str, Any], seconds: float) -> str:
    head = "| model | " + " | ".join(VARIANTS[1:]) + " | apply ÷ by hand |"
    lines = [
        "# Freezing + max-autotune: `autotune.apply` against the compile written by hand",
        "",
        f"Machine: {machine['device']}; CPU flags that decide the generated code: "
        f"{machine['cpu_flags'] or 'none of avx2, avx512*, amx*'}; torch {machine['torch']}, "
        f"Python {machine['python']}. Load average (1, 5, 15 min) "
        f"{', '.join(f'{v:.2f}' for v in machine['load_before'])} before, "
        f"{', '.join(f'{v:.2f}' for v in machine['load_after'])} after. "
        f"`python benchmarks/freezing_apply.py --seconds {seconds:g}`: one process per run, "
        "every variant called once per round in a shuffled order, under `torch.no_grad()`, "
        f"for {seconds:g} s of rounds after each variant's first (compiling) call.",
        "",
        "Speedup over eager, median of the rounds (quartiles):",
        "",
        head,
        "|" + "---|" * (len(VARIANTS) + 1),
    ]
    for r in results:
        cells = [_cell(r["variants"][v]["speedup_q1_median_q3"]) for v in VARIANTS[1:]]
        cells.append(_cell(r["apply_over_by_hand"]))
        lines.append(f"| {r['model']} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "- *by hand*: `torch._inductor.config.freezing = True` (a patch) while the model "
        f'compiles, `mode="{MODE}"`.',
        "- *autotune.apply*: a best-config file with that mode and `freezing: true`.",
        '- *options= only*: `torch.compile(options={...the mode\'s options, "freezing": True})`, '
        "what `autotune.apply` passed before this fix.",
        "",
        "| model | variant | median latency | first call (compile) | max abs diff vs eager |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        for v in VARIANTS:
            f = r["variants"][v]
            ms = f["median_ms"]
            latency = f"{ms:.1f} ms" if ms >= 1 else f"{ms * 1e3:.0f} µs"
            lines.append(
                f"| {r['model']} | {v} | {latency} | {f['first_call_s']:.1f} s | "
                f"{f['max_abs_diff']:.1e} |"
            )
    lines += [
        "",
        "First-call times share one Inductor cache per process: *autotune.apply* generates the "
        "code *by hand* generated and reuses its kernels, so its first call is not a cold "
        "compile.",
        "",
    ]
    return "\n".join(lines)


def _cell(q: tuple[float, float, float]) -> str:
    return f"{q[1]:.2f}x ({q[0]:.2f}-{q[2]:.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "freezing_apply_cpu.md")
    args = parser.parse_args()
    load_before = os.getloadavg()
    results = []
    for name in args.models.split(","):
        print(f"measuring {name}", flush=True)
        results.append(measure(name, args.seconds))
    machine = {
        "device": device_name("cpu"),
        "cpu_flags": " ".join(cpu_flags()),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "load_before": load_before,
        "load_after": os.getloadavg(),
    }
    text = report(results, machine, args.seconds)
    args.out.write_text(text)
    args.out.with_suffix(".json").write_text(
        json.dumps({"machine": machine, "results": results}, indent=1) + "\n"
    )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
