"""The isolated probe: each top-level part and each repeated block class, compiled on its own.

A probe is an ordinary trial (a process of its own, bounded by the compile budget) whose scope
compiles one module path, so every way a compile can go wrong is caught and classified exactly
as in the search, and the study process survives aborts and hangs.

The probe compiles without ``fullgraph``, the way that can work, and reads the graph breaks off
the trial: a part that compiles but breaks its graph is ``graph_break``, still compilable, but
never inside a ``fullgraph=True`` region (a fullgraph probe would only add a second process
for the same fact).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from autotune._deadline import Deadline
from autotune.runtime.config import CompileConfig, Scope
from autotune.scope._tree import ModelTree
from autotune.trials import MeasureSettings, TrialResult, TrialRunner, TrialSpec

# A probe's timing only has to tell "reliably slower" from the rest; compile dominates it.
PROBE_MEASURE = MeasureSettings(warmup=1, min_rounds=5, max_rounds=20, target_seconds=0.3)


@dataclass(frozen=True)
class ProbeTarget:
    """One thing to probe: a top-level unit (``kind="unit"``) or a block class (``"block"``).

    Attributes:
        name: The unit's path (``pooler``) or the block class (``BertLayer``).
        kind: ``"unit"`` or ``"block"``.
        paths: Every path the verdict covers; a block class is compiled as its first instance.
    """

    name: str
    kind: str
    paths: tuple[str, ...]


def probe_targets(tree: ModelTree) -> list[ProbeTarget]:
    """Each repeated block class, then each unit that is no block instance.

    When the tree was profiled, parts the model never called are left out: compiling them
    could not change a thing.
    """
    targets = [
        ProbeTarget(block.name, "block", block.paths)
        for block in tree.blocks
        if not tree.profiled or any(part.calls for part in block.instances)
    ]
    in_blocks = {path for block in tree.blocks for path in block.paths}
    targets += [
        ProbeTarget(unit.path, "unit", (unit.path,))
        for unit in tree.units
        if unit.path not in in_blocks and (not tree.profiled or unit.calls)
    ]
    return targets


@dataclass(frozen=True)
class ProbeResult:
    """How one target fared, compiled on its own in a trial process.

    Attributes:
        target: The unit's path or the block class's name.
        kind: ``"unit"`` or ``"block"``.
        paths: Every path the verdict covers (a block class: all its instances).
        status: ``ok``; ``graph_break`` (compiles, in several graphs); or the trial's failure
            kind (``crash``, ``timeout``, ``compile_error``, ``oom``, ``accuracy``, ...).
        compilable: Whether the trial succeeded; ``False`` excludes ``paths`` from every
            candidate's compile paths and disables them inside compiled regions.
        reason: Why, for any status but ``ok``.
        compile_time_s: The probe trial's compile time.
        speedup_vs_eager: The model with only this target compiled, over eager (median).
        speedup_vs_eager_q3: The upper quartile of that speedup.
        graphs: Graphs compiled.
        graph_breaks: Graph breaks.
    """

    target: str
    kind: str
    paths: tuple[str, ...]
    status: str
    compilable: bool
    reason: str | None = None
    compile_time_s: float | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_eager_q3: float | None = None
    graphs: int | None = None
    graph_breaks: int | None = None

    @property
    def path(self) -> str:
        """The path that was compiled (a block class's first instance)."""
        return self.paths[0]

    @property
    def excluded(self) -> bool:
        """Whether the target is kept eager everywhere."""
        return not self.compilable

    def brief(self) -> str:
        """One human line, e.g. ``unit crashy: crash (the trial process died of SIGABRT)``."""
        line = f"{self.kind} {self.target}: {self.status}"
        if self.compile_time_s is not None:
            line += f", compile {self.compile_time_s:.1f}s"
        return line + (f" ({self.reason})" if self.reason else "")

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "paths": list(self.paths)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProbeResult:
        return cls(**{**data, "paths": tuple(data["paths"])})


@dataclass(frozen=True)
class Prober:
    """Runs probe trials of one model with one backend.

    Attributes:
        runner: Runs each probe trial.
        backend: The ``torch.compile`` backend the probes compile with.
        base: The probes' trial, its config aside: the model, device, workload (``train``:
            a probe runs training steps, backward too), seed, timing, kernel cache and
            traffic of the study, and the study's compile budget as its time limit.
    """

    runner: TrialRunner
    backend: str
    base: TrialSpec

    def spec(self, path: str, time_limit_s: float | None = None) -> TrialSpec:
        """The trial that compiles ``path`` alone, the rest of the model staying eager."""
        config = CompileConfig(backend=self.backend, scope=Scope(compile=(path,)))
        limit = self.base.time_limit_s if time_limit_s is None else time_limit_s
        return dataclasses.replace(self.base, config=config.to_dict(), time_limit_s=limit)

    def probe(self, target: ProbeTarget, deadline: Deadline = Deadline()) -> ProbeResult:  # noqa: B008
        """Probes ``target``; a probe the deadline cut short says nothing of the part, so it
        raises :class:`DeadlineReached` instead of a ``timeout`` verdict."""
        budget = deadline.budget(self.base.time_limit_s)
        result = self.runner.run(self.spec(target.paths[0], budget))
        if result.failure_kind == "timeout" and budget < self.base.time_limit_s:
            deadline.check("during the scope probes")
        return verdict(target, result)


def verdict(target: ProbeTarget, result: TrialResult) -> ProbeResult:
    """Turns a probe trial's result into a :class:`ProbeResult`."""
    status, reason = "ok", None
    if not result.ok:
        status, reason = result.failure_kind or "crash", result.error or "no error recorded"
    elif result.graph_breaks:
        reasons = "; ".join(result.graph_break_reasons) or "no reason recorded"
        status = "graph_break"
        reason = (
            f"compiles, but in {result.graphs} graphs ({result.graph_breaks} graph breaks: "
            f"{reasons}); never compiled with fullgraph=True"
        )
    return ProbeResult(
        target=target.name,
        kind=target.kind,
        paths=target.paths,
        status=status,
        compilable=result.ok,
        reason=reason,
        compile_time_s=result.compile_time_s,
        speedup_vs_eager=result.speedup_vs_eager,
        speedup_vs_eager_q3=result.speedup_vs_eager_q3,
        graphs=result.graphs,
        graph_breaks=result.graph_breaks,
    )
