"""Which Inductor options torch reads outside Inductor's own compile, where
``torch.compile(options=...)`` does not reach (the audit behind autotune.runtime._calls).

    python benchmarks/knob_reads.py [--out benchmarks/results/knob_reads_cpu.md]

``options=`` is a config patch around Inductor's ``compile_fx``. Every read of
``torch._inductor.config`` is recorded with the phase it happens in: inside that patch, or
outside it, during a shape's first call (Dynamo's trace, what runs around Inductor's compile,
the first run) with cold or warm caches, or during later calls. Each scenario compiles a small
model through plain ``torch.compile`` (not autotune's path: this audits torch) in one process:
a cold compile, a second call, a recompile for a new shape, then the same from the warm caches
after ``torch._dynamo.reset()``. A static scan of torch's sources outside ``torch/_inductor``
(and of its CUDA-graph trees, which read their options while the graphs run) adds the reads
this CPU cannot reach.

Needs torch internals (ConfigModule.__getattr__, compile_fx): a tool, not a test.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import traceback
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torch import nn

HERE = Path(__file__).resolve().parent
_ROOT = HERE.parent
sys.path.insert(0, str(_ROOT))

from autotune.runtime._calls import read_outside_compile  # noqa: E402
from autotune.space import builtin_names, load_space  # noqa: E402

# phase -> key -> set of "module:function" that read it
Reads = dict[str, dict[str, set[str]]]


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(32, 64), nn.Linear(64, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x))) * 0.5


SCENARIOS: dict[str, dict[str, Any]] = {
    "default": {},
    "freezing": {"options": {"freezing": True}},
    "max-autotune-no-cudagraphs+freezing": {
        "options": {"freezing": True, "max_autotune": True, "coordinate_descent_tuning": True}
    },
    "reduce-overhead (CUDA graphs asked, skipped on CPU)": {
        "options": {"triton.cudagraphs": True}
    },
    "cpp_wrapper": {"options": {"cpp_wrapper": True}},
    "dynamic=True": {"dynamic": True},
}


# Readers that copy the config to compute torch.compile's own patch or cache key, not to act.
_COPIES = (":get_patched_config_dict", ":reset", ":get_compiler_config", ":__init__")


class _Recorder:
    def __init__(self) -> None:
        self.phase = "first call"
        self.reads: Reads = defaultdict(lambda: defaultdict(set))

    def read(self, key: str) -> None:
        reader = _reader()
        if not reader.endswith(_COPIES):
            self.reads[self.phase][key].add(reader)


def _reader() -> str:
    """The first frame outside torch's config machinery that asked for the value."""
    for frame in reversed(traceback.extract_stack(limit=12)[:-3]):
        if "_config_module" not in frame.filename and "knob_reads" not in frame.filename:
            path = frame.filename.split("site-packages/")[-1].removesuffix(".py")
            return f"{path.replace('/', '.')}:{frame.name}"
    return "?"


@contextlib.contextmanager
def _recording(recorder: _Recorder) -> Iterator[None]:
    import torch._inductor.compile_fx as compile_fx_module
    import torch._inductor.config as inductor_config
    from torch.utils._config_module import ConfigModule

    real_getattr = ConfigModule.__getattr__
    real_compile_fx = compile_fx_module.compile_fx

    def getattr_(self: Any, name: str) -> Any:
        if self is inductor_config and not name.startswith("_"):
            recorder.read(name)
        return real_getattr(self, name)

    def compile_fx(*args: Any, **kwargs: Any) -> Any:
        outer, recorder.phase = recorder.phase, "inside Inductor's options patch"
        try:
            return real_compile_fx(*args, **kwargs)
        finally:
            recorder.phase = outer

    ConfigModule.__getattr__ = getattr_  # type: ignore[method-assign]
    compile_fx_module.compile_fx = compile_fx
    try:
        yield
    finally:
        ConfigModule.__getattr__ = real_getattr  # type: ignore[method-assign]
        compile_fx_module.compile_fx = real_compile_fx


def run_scenario(fields: dict[str, Any]) -> Reads:
    recorder = _Recorder()
    model = Net().eval()
    with _recording(recorder), torch.no_grad():
        for cache in ("cold caches", "warm caches"):
            torch._dynamo.reset()
            compiled = torch.compile(model, **fields)
            for batch in (4, 6):  # the second shape recompiles
                recorder.phase = f"first call, {cache}"  # trace, compile (inside), first run
                compiled(torch.randn(batch, 32))
                recorder.phase = "later call"
                compiled(torch.randn(batch, 32))
    return recorder.reads


_KEY = r"((?:triton|cpp)\.\w+|\w+)"
_OUTSIDE = re.compile(r"(?:_inductor\.config|inductor_config)\." + _KEY)
_INSIDE = re.compile(r"\bconfig\." + _KEY)  # within torch/_inductor, `config` is its own


def static_reads() -> dict[str, set[str]]:
    """Inductor options read by name in torch's sources outside torch/_inductor, and in its
    CUDA-graph trees (read while the graphs run), by key."""
    import torch._inductor.config as inductor_config

    root = Path(torch.__file__).parent
    known = set(inductor_config.get_config_copy())
    found: dict[str, set[str]] = defaultdict(set)
    outside = [p for p in root.rglob("*.py") if not {"_inductor", "testing"} & set(p.parts)]
    graphs = [root / "_inductor" / f"{name}.py" for name in ("cudagraph_trees", "cudagraph_utils")]
    for path, pattern in [(p, _OUTSIDE) for p in outside] + [(p, _INSIDE) for p in graphs]:
        if path.exists():
            for key in set(pattern.findall(path.read_text(errors="replace"))) & known:
                found[key].add(str(path.relative_to(root.parent)))
    return found


def space_knobs() -> set[str]:
    knobs = set()
    for name in builtin_names():
        for device in ("cpu", "cuda"):
            space = load_space(name, device, allow_numerics_changes=True)
            knobs |= {k.name for k in space.knobs if k.layer == "inductor"}
    for mode in ("reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"):
        knobs |= set(torch._inductor.list_mode_options(mode))
    return knobs


def report(results: dict[str, Reads], static: dict[str, set[str]], knobs: set[str]) -> str:
    outside: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for reads in results.values():
        for phase, keys in reads.items():
            if phase.startswith("inside"):
                continue
            for key, readers in keys.items():
                outside[key][phase] |= readers
    lines = [
        "# Inductor options torch reads outside Inductor's own compile",
        "",
        f"torch {torch.__version__}, CPU. `python benchmarks/knob_reads.py`. Scenarios (plain "
        "`torch.compile`, one process, each a cold compile, a second call, a recompile for a "
        "new shape, then the same after `torch._dynamo.reset()` from the warm caches): "
        + ", ".join(SCENARIOS)
        + ".",
        "",
        "A read outside the options patch sees the global config: an option passed only as "
        "`options=` does not reach it. autotune sets the options below marked *set around "
        "calls* for the whole span of each call of a compiled region (autotune.runtime._calls).",
        "",
        "## Options of the built-in spaces and modes",
        "",
        "| option | read outside the options patch (phase: reader) | static reads outside "
        "Inductor | set around calls |",
        "|---|---|---|---|",
    ]
    for key in sorted(knobs):
        phases = outside.get(key, {})
        seen = "; ".join(
            f"{phase}: {', '.join(sorted(readers))}" for phase, readers in sorted(phases.items())
        )
        lines.append(
            f"| `{key}` | {seen or 'no'} | {', '.join(sorted(static.get(key, []))) or '-'} | "
            f"{'yes' if read_outside_compile(key) else 'no'} |"
        )
    others = sorted(k for k in outside if k not in knobs)
    lines += [
        "",
        "## Every other option read outside the patch on this CPU",
        "",
        "Not searched by a built-in space: a space of your own that searches one of these "
        "would not see it take effect through `options=`.",
        "",
        "| option | phases |",
        "|---|---|",
        *(f"| `{k}` | {', '.join(sorted(outside[k]))} |" for k in others),
        "",
        "## Static reads outside Inductor of options no scenario reached",
        "",
        *(
            f"- `{k}`: {', '.join(sorted(v))}"
            for k, v in sorted(static.items())
            if k not in outside
        ),
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "results" / "knob_reads_cpu.md")
    args = parser.parse_args()
    results = {}
    for name, fields in SCENARIOS.items():
        print(f"scenario {name}", flush=True)
        results[name] = run_scenario(fields)
    text = report(results, static_reads(), space_knobs())
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
