"""The decode suite: ``generate()`` with a static KV cache, eager against Hugging Face's own
compile, the gpt-fast recipe and autotune's tuned config, timed side by side in one process.

    python benchmarks/decode_suite.py [--model llama|gpt2] [--device cuda] [--batches 1,8]
        [--new 64] [--trials 6] [--search-args '...'] [--seconds 20]
        [--out results/decode_DEVICE.md]

First a real ``autotune search --workload generate`` of the model's file,
benchmarks/models/llama_generate.py (a Llama-style decoder with grouped-query attention) or
gpt2_generate.py (GPT-2-style) (``generate()`` of 64 new tokens at batch 1, greedy; the searched
config compiles the decode steps, and the prefill eager or compiled as the search chose). Then,
in this process, per variant a fresh model of the same seed and size, generating greedily from
a 32-token prompt ``--new`` tokens per sequence at each batch size:

- eager: ``generation_config.disable_compile = True`` (on CUDA, transformers 5 compiles the
  decode step by itself when the cache is static);
- transformers' own: the same model with its auto-compile left on (``compile_config``'s
  defaults: ``fullgraph``, ``reduce-overhead``, ``dynamic=False``); on other devices it does
  not compile, and the row says so;
- default torch.compile: Hugging Face's documented static-cache compile in default mode,
  ``model.forward = torch.compile(model.forward)`` (prefill and decode);
- reduce-overhead + fullgraph: the gpt-fast recipe, ``torch.compile(model.forward,
  mode="reduce-overhead", fullgraph=True)`` on the decode steps only, the prefill eager, the
  logits cloned as they leave it (CUDA graphs overwrite them on the next replay: compiled over
  the prefill too, generate() failed so on an H200);
- tuned: the search's best-config file applied with ``autotune.apply(model, file)``, which
  compiles its parts in place; transformers' auto-compile off so that nothing nests.

--config FILE skips the search and applies FILE (an earlier run's ``.best.json``).

Figures per variant and batch: start-up (the first ``generate()``, compiles included, and the
graphs Dynamo compiled for it), time to first token (median of ``generate(max_new_tokens=1)``:
the prefill and the first token), decode tokens/s per sequence and over the batch
(``(new - 1) / (t(new) - t(1))``), end-to-end latency, the step's peak memory over what was
allocated before it (CUDA), and whether the generated tokens equal eager's. Timing is
round-robin over the variants (order reversed every other round) for ``--seconds`` per batch.
Writes the markdown report to --out and the raw figures beside it (.json).
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from suite import device_name

import autotune
from autotune._atomic import write_text

HERE = Path(__file__).resolve().parent
MODELS = {name: HERE / "models" / f"{name}_generate.py" for name in ("llama", "gpt2")}

EAGER, HF, DEFAULT, GPTFAST, INT8, TUNED = (
    "eager", "transformers' own compile", "default torch.compile", "reduce-overhead + fullgraph",
    "torchao int8 dynamic + default torch.compile", "tuned (autotune)",
)  # fmt: skip
VARIANTS = {
    "eager": EAGER, "hf": HF, "default": DEFAULT, "gpt-fast": GPTFAST, "int8": INT8,
    "tuned": TUNED,
}  # fmt: skip
MIN_ROUNDS = 3
SEED = 0


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def model_file(name: str) -> Any:
    """The model file's module (``get_model``, ``PROMPT``)."""
    path = MODELS[name]
    spec = importlib.util.spec_from_file_location(f"decode_suite_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fresh_model(module: Any, device: str) -> Any:
    """The model file's model, seeded, eval, transformers' own compile off."""
    torch.manual_seed(SEED)
    model = module.get_model(device).eval()
    model.generation_config.disable_compile = True
    return model


def own_graph(config: Any) -> Any:
    """``config`` compiling its own graphs in this process: Dynamo gives a second instance the
    graph compiled for the first whenever their Inductor wrappers compare equal (a tuned config
    equal to default compile, say), which would hide the tuned config's start-up. An Inductor
    knob spelled out at torch's own default (``max_fusion_size``, no change to the code) makes
    the wrapper differ."""
    if config.backend != "inductor" or "max_fusion_size" in config.options:
        return config
    import dataclasses

    import torch._inductor.config as inductor

    default = inductor.get_config_copy()["max_fusion_size"]
    return dataclasses.replace(config, options={**config.options, "max_fusion_size": default})


def decode_only(llama: Any, compiled: Callable[..., Any]) -> None:
    """``llama.forward`` runs ``compiled`` for decode steps (one new token per sequence) and
    the eager forward for the prefill, as transformers' own compile and gpt-fast split them.
    The logits are cloned as they leave a compiled call: under CUDA graphs its outputs live in
    the graph's memory, which the next replay overwrites while generate() may still hold them
    (with the prefill compiled too, generate() failed so on an H200: "accessing tensor output
    of CUDAGraphs that has been overwritten by a subsequent run")."""
    eager = llama.forward

    def forward(*args: Any, **kwargs: Any) -> Any:
        ids = kwargs.get("input_ids")
        if ids is None or ids.shape[1] != 1:
            return eager(*args, **kwargs)
        if torch.cuda.is_available():
            torch.compiler.cudagraph_mark_step_begin()
        out = compiled(*args, **kwargs)
        out.logits = out.logits.clone()
        return out

    llama.forward = forward


def build(label: str, module: Any, device: str, tuned: Any) -> Any:
    """A fresh model set up as the variant runs it."""
    llama = fresh_model(module, device)
    if label == HF:
        llama.generation_config.disable_compile = False
    elif label == DEFAULT:  # Hugging Face's documented static-cache compile, default mode
        llama.forward = torch.compile(llama.forward)
    elif label == GPTFAST:
        compiled = torch.compile(llama.forward, mode="reduce-overhead", fullgraph=True)
        decode_only(llama, compiled)
    elif label == INT8:  # the hand recipe past compile (../shared/probes/quant_levers.py)
        from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_

        quantize_(llama, Int8DynamicActivationInt8WeightConfig())  # torchao's own defaults
        llama.forward = torch.compile(llama.forward)
    elif label == TUNED and tuned is not None:  # the file's plan: its decode part, its prefill
        autotune.apply(llama, own_graph(tuned))
    return llama


def generator(llama: Any, prompt: torch.Tensor, device: str) -> Callable[[int], Any]:
    def generate(new: int) -> Any:
        with torch.no_grad():
            out = llama.generate(
                prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=new,
                min_new_tokens=new, do_sample=False, max_length=None,
            )  # fmt: skip
        sync(device)
        return out

    return generate


def graphs() -> int:
    return int(torch._dynamo.utils.counters["stats"]["unique_graphs"])


def measure_batch(
    batch: int, labels: list[str], args: argparse.Namespace, tuned: Any, module: Any
) -> dict[str, dict[str, Any]]:
    device = args.device
    vocab = module.model_config(device).vocab_size
    prompt = torch.randint(
        0, vocab, (batch, module.PROMPT), generator=torch.Generator().manual_seed(5)
    ).to(device)
    gens, rows, reference = {}, {}, None
    for label in labels:
        row: dict[str, Any] = {"batch": batch}
        rows[label] = row
        if label == HF and not device.startswith("cuda"):
            row["error"] = "transformers compiles by itself on CUDA only: not run"
            continue
        try:
            llama = build(label, module, device, tuned)
            gen = generator(llama, prompt, device)
            before, started = graphs(), time.perf_counter()
            out = gen(args.new)
            row["startup_s"] = time.perf_counter() - started
            gen(1)
            row["startup_graphs"] = graphs() - before
        except Exception as exc:  # noqa: BLE001 - a variant that fails is reported, not fatal
            row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
            print(f"# batch {batch}, {label} failed: {row['error']}", flush=True)
            continue
        reference = out if reference is None else reference
        row["tokens_equal_to_eager"] = float((out == reference).float().mean())
        gens[label] = gen
    full: dict[str, list[float]] = {k: [] for k in gens}
    first: dict[str, list[float]] = {k: [] for k in gens}
    deadline, order = time.perf_counter() + args.seconds, list(gens)
    before = graphs()
    while order and (time.perf_counter() < deadline or len(full[order[0]]) < MIN_ROUNDS):
        for label in list(order):
            try:
                started = time.perf_counter()
                gens[label](args.new)
                full[label].append(time.perf_counter() - started)
                started = time.perf_counter()
                gens[label](1)
                first[label].append(time.perf_counter() - started)
            except Exception as exc:  # noqa: BLE001 - reported in its row, the others go on
                rows[label]["error"] = (
                    f"failed while timed: {type(exc).__name__}: "
                    + (str(exc).splitlines()[0][:200])
                )
                print(f"# batch {batch}, {label}: {rows[label]['error']}", flush=True)
                order.remove(label)
                del gens[label], full[label], first[label]
        order.reverse()
    recompiled = graphs() - before
    for label, gen in gens.items():
        row = rows[label]
        t_full, t_first = statistics.median(full[label]), statistics.median(first[label])
        per_seq = (args.new - 1) / max(t_full - t_first, 1e-9)
        row.update(
            rounds=len(full[label]), latency_s=t_full, ttft_ms=t_first * 1e3,
            decode_tokens_per_s=per_seq, aggregate_tokens_per_s=per_seq * batch,
            graphs_while_timed=recompiled,
        )  # fmt: skip
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
            allocated = torch.cuda.memory_allocated(device)
            torch.cuda.reset_peak_memory_stats(device)
            gen(args.new)
            row["peak_over_allocated_mib"] = (
                torch.cuda.max_memory_allocated(device) - allocated
            ) / 2**20
    return rows


def run_search(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    """The search of one decode step; its storage and best-config file are kept beside --out
    (``<out>.db``, ``<out>.best.json``) for ``autotune show`` and ``verify``."""
    best, db = args.out.with_suffix(".best.json"), args.out.with_suffix(".db")
    best.parent.mkdir(parents=True, exist_ok=True)
    db.unlink(missing_ok=True)
    command = [
        sys.executable, "-m", "autotune.cli", "search", str(MODELS[args.model]), "--device",
        args.device,
        "--space", args.device.split(":")[0], "--trials", str(args.trials), "--workload",
        "generate", "--study", "decode",
        "--storage", f"sqlite:///{db}", "--out", str(best), "--cache-dir",
        str(tmp / "cache"), "--quiet", *shlex.split(args.search_args),
    ]  # fmt: skip
    print(f"# search: {shlex.join(command[1:])}", flush=True)
    started = time.monotonic()
    done = subprocess.run(command, env={**os.environ, "DECODE_BATCH": "1"})
    search = {"command": shlex.join(["autotune", *command[3:]]), "exit": done.returncode,
              "wall_s": time.monotonic() - started}  # fmt: skip
    if done.returncode == 0:
        search["file"] = json.loads(best.read_text())
        search["best"] = autotune.load(best)
    return search


def _f(value: Any, spec: str = ".1f", suffix: str = "") -> str:
    return f"{value:{spec}}{suffix}" if value is not None else "-"


def report(machine: dict[str, Any], search: dict[str, Any], batches: dict[int, Any]) -> str:
    best = search.get("best")
    config = best.config if best is not None else None
    brief = "do not compile" if best is not None and config is None else (
        json.dumps(config.to_dict()) if config is not None else "search failed"
    )  # fmt: skip
    metrics = (search.get("file") or {}).get("metrics", {})
    lines = [
        f"# Decode suite on {machine['device']}: generate() side by side",
        "",
        f"{machine['date']}. {machine['name']}; torch {machine['torch']}, triton "
        f"{machine['triton']}, transformers {machine['transformers']}; {machine['extra']}. "
        f"Command: `{machine['command']}`.",
        "",
        f"Model: benchmarks/models/{machine['model_file']} sized for {machine['device']} "
        f"({machine['params_m']:.0f} M parameters, fp32), a {machine['prompt']}-token prompt, "
        f"{machine['new']} new tokens per sequence, greedy, static cache.",
        "",
        f"Search ({search['wall_s']:.0f} s, exit {search['exit']}): `{search['command']}`. "
        f"Emitted: `{brief}`; in the search it ran "
        f"{_f(metrics.get('speedup_vs_eager'), '.2f', 'x')} eager and "
        f"{_f(metrics.get('speedup_vs_default'), '.2f', 'x')} default compile "
        "(the search's unit: the model file's request, end to end) "
        f"(`{machine['out']}.db` holds the study, `.best.json` the file). The tuned "
        "row applies it with `max_fusion_size` spelled out at torch's default, so that it "
        "compiles its own graphs here rather than share another variant's.",
        "",
    ]
    for batch, rows in batches.items():
        gpt = rows.get(GPTFAST, {})
        lines += [
            f"## batch {batch}",
            "",
            "| variant | decode tokens/s per sequence | over the batch | vs eager | vs "
            "reduce-overhead + fullgraph | time to first token | end-to-end | start-up (graphs) "
            "| peak over allocated | tokens equal to eager |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        eager = rows.get(EAGER, {}).get("decode_tokens_per_s")
        for label, row in rows.items():
            if "error" in row:
                lines.append(f"| {label} | {row['error']} |||||||||")
                continue
            rate = row["decode_tokens_per_s"]
            lines.append(
                f"| {label} | {rate:.0f} | {row['aggregate_tokens_per_s']:.0f} | "
                f"{_f(rate / eager if eager else None, '.2f', 'x')} | "
                f"{_f(rate / gpt['decode_tokens_per_s'] if 'decode_tokens_per_s' in gpt else None, '.2f', 'x')} | "  # noqa: E501
                f"{row['ttft_ms']:.1f} ms | {row['latency_s'] * 1e3:.0f} ms | "
                f"{row['startup_s']:.1f} s ({row['startup_graphs']}) | "
                f"{_f(row.get('peak_over_allocated_mib'), '.0f', ' MiB')} | "
                f"{row['tokens_equal_to_eager']:.3f} |"
            )
        rounds = ", ".join(str(r.get("rounds", 0)) for r in rows.values())
        while_timed = next(iter(rows.values())).get("graphs_while_timed", "-")
        lines += ["", f"Rounds timed: {rounds}; graphs compiled while timed: {while_timed}.", ""]
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="llama")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--new", type=int, default=64, help="new tokens per sequence")
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=20.0, help="timing per batch size")
    parser.add_argument("--search-args", default="", help="more options for the search, quoted")
    parser.add_argument("--out", type=Path, help="default results/decode_DEVICE.md")
    parser.add_argument("--config", type=Path, help="an earlier search's file: no search")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="of " + ", ".join(VARIANTS))
    args = parser.parse_args(argv)
    if unknown := set(args.variants.split(",")) - set(VARIANTS):
        parser.error(f"unknown variant(s) {', '.join(sorted(unknown))}")
    model = "" if args.model == "llama" else f"_{args.model}"
    args.out = args.out or HERE / "results" / f"decode_{args.device.split(':')[0]}{model}.md"
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import transformers

    module = model_file(args.model)
    with torch.device("meta"):
        shape = transformers.AutoModelForCausalLM.from_config(module.model_config(args.device))
    params_m = sum(p.numel() for p in shape.parameters()) / 1e6
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = "not installed"

    extra = (
        f"CUDA {torch.version.cuda}, {len(os.sched_getaffinity(0))} CPU cores"
        if args.device.startswith("cuda")
        else f"{len(os.sched_getaffinity(0))} cores, load {os.getloadavg()[0]:.2f}"
    )
    machine = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "device": args.device, "name": device_name(args.device), "torch": torch.__version__,
        "triton": triton_version, "transformers": transformers.__version__, "extra": extra,
        "command": shlex.join(["python", *sys.argv]), "new": args.new, "out": args.out.stem,
        "params_m": params_m, "model_file": MODELS[args.model].name, "prompt": module.PROMPT,
    }  # fmt: skip
    # Every variant compiles the same code objects in this one process: room for all of them.
    torch._dynamo.config.recompile_limit = 64
    if args.config is not None:  # an earlier run's search
        search = {"command": f"(an earlier search: {args.config})", "exit": 0, "wall_s": 0.0,
                  "file": json.loads(args.config.read_text()),
                  "best": autotune.load(args.config)}  # fmt: skip
    else:
        with tempfile.TemporaryDirectory(prefix="decode_suite-") as tmp:
            search = run_search(args, Path(tmp))
    tuned = search["best"].config if "best" in search else None
    labels = [VARIANTS[v] for v in args.variants.split(",") if v != "tuned" or tuned is not None]
    batches = {}
    for batch in (int(b) for b in args.batches.split(",")):
        print(f"# batch {batch}", flush=True)
        batches[batch] = measure_batch(batch, labels, args, tuned, module)
        # Written after every batch size: a run cut short keeps what it measured.
        text = report(machine, search, batches)
        raw = {"machine": machine, "search": {k: v for k, v in search.items() if k != "best"},
               "batches": batches}  # fmt: skip
        write_text(args.out, text)
        write_text(args.out.with_suffix(".json"), json.dumps(raw, indent=1, default=str) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
