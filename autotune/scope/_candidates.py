"""Candidate scopes, and the plan that hands them to Optuna as one categorical parameter.

One parameter over a handful of named candidates keeps the encoding small whatever the size of
the model (never one boolean per module), so TPE can learn which granularity pays off:

- ``whole``: the whole model as one region;
- ``regional:<Class>``: each instance of a repeated block class compiled on its own (the
  instances share one graph); ``regional:<A>+<B>`` when there are several classes;
- ``children``: each top-level unit compiled on its own;
- ``whole-disable:<target>``: the whole model with a part kept eager that breaks its graph or
  made the model slower when compiled alone.

Whatever the probe excluded is in no candidate's compile paths, and is disabled
(``torch.compiler.disable``) in every candidate whose compiled region holds it, except where
its caller runs it in a loop: an element of an ``nn.Sequential`` or ``nn.ModuleList`` (a path
ending in an index). Dynamo runs a frame whose loop meets a graph break eagerly, whole: on torch
2.13, ``nn.Sequential`` compiled with one child disabled compiles no graph at all. A region
holding such a part is compiled instead part by part around it: the parts of the tree it holds
that do not hold the part kept eager.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from autotune.runtime.config import Scope
from autotune.scope._probe import ProbeResult
from autotune.scope._tree import ModelTree

if TYPE_CHECKING:
    import optuna

SCOPE_PARAM = "scope.kind"
# Cap on whole-disable candidates: each one is a choice TPE has to learn about.
_MAX_DISABLE_CANDIDATES = 4
# A part is "reliably slower compiled" when three rounds in four ran it below this ratio.
_SLOWER_Q3 = 0.95


@dataclass(frozen=True)
class NamedScope:
    """A candidate scope.

    Attributes:
        name: The Optuna choice, e.g. ``regional:BertLayer``.
        scope: What it compiles and what it keeps eager.
        fullgraph: Whether ``fullgraph=True`` can work: ``False`` when a compiled region holds
            a disabled module or a part that breaks its graph.
        note: One human line.
    """

    name: str
    scope: Scope
    fullgraph: bool = True
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "scope": self.scope.to_dict(), "fullgraph": self.fullgraph,
                "note": self.note}  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NamedScope:
        scope = Scope(tuple(data["scope"]["compile"]), tuple(data["scope"]["disable"]))
        return cls(data["name"], scope, bool(data["fullgraph"]), str(data.get("note", "")))


@dataclass
class ScopePlan:
    """The candidate scopes of one model, and the probe results that shaped them.

    Stored with the study, so that a resumed run and every worker draw from the same choices
    without probing again.

    Attributes:
        candidates: The named scopes, ``whole`` first.
        probes: Every probe result (see :attr:`excluded` for those that failed).
        tree: The module-tree analysis the plan was made from.
        backend: The backend the probes compiled with.
    """

    candidates: list[NamedScope]
    probes: list[ProbeResult] = field(default_factory=list)
    tree: ModelTree | None = None
    backend: str = "inductor"

    @property
    def excluded(self) -> list[ProbeResult]:
        """The probe results that keep their paths eager everywhere."""
        return [probe for probe in self.probes if probe.excluded]

    @property
    def size(self) -> int:
        """The number of candidates."""
        return len(self.candidates)

    @property
    def names(self) -> list[str]:
        """The candidates' names: the choices of ``scope.kind``."""
        return [candidate.name for candidate in self.candidates]

    def candidate(self, name: str) -> NamedScope:
        """The candidate called ``name``.

        Raises:
            KeyError: No candidate has that name.
        """
        for candidate in self.candidates:
            if candidate.name == name:
                return candidate
        raise KeyError(f"scope candidate {name!r} is not in this plan; it has {self.names}")

    def suggest_named(self, trial: optuna.Trial) -> NamedScope:
        """Draws a candidate as the categorical parameter ``scope.kind`` (fixed if alone)."""
        if len(self.candidates) == 1:
            return self.candidates[0]
        return self.candidate(trial.suggest_categorical(SCOPE_PARAM, self.names))

    def suggest(self, trial: optuna.Trial) -> Scope:
        """Draws a candidate's scope (see :meth:`suggest_named`)."""
        return self.suggest_named(trial).scope

    def scope_from_params(self, params: dict[str, Any]) -> Scope:
        """The scope of a finished trial, from its Optuna params."""
        return self.candidate(params.get(SCOPE_PARAM, self.names[0])).scope

    def content_hash(self) -> str:
        """First 16 hex digits of the sha256 of the candidates' canonical JSON."""
        text = json.dumps([c.to_dict() for c in self.candidates], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "candidates": [c.to_dict() for c in self.candidates],
            "probes": [p.to_dict() for p in self.probes],
            "tree": None if self.tree is None else self.tree.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScopePlan:
        tree = data.get("tree")
        return cls(
            candidates=[NamedScope.from_dict(c) for c in data["candidates"]],
            probes=[ProbeResult.from_dict(p) for p in data.get("probes", [])],
            tree=None if tree is None else ModelTree.from_dict(tree),
            backend=str(data.get("backend", "inductor")),
        )


def build_plan(tree: ModelTree, probes: list[ProbeResult], backend: str) -> ScopePlan:
    """The plan of a model from its tree and its probe results."""
    return ScopePlan(build_candidates(tree, probes), list(probes), tree, backend)


def build_candidates(tree: ModelTree, probes: list[ProbeResult]) -> list[NamedScope]:
    """Every candidate scope, deduplicated (the first name of equal scopes is kept)."""
    verdicts = _Verdicts(probes, tree)
    candidates = [verdicts.named("whole", [""], "the whole model as one region")]
    candidates += _regional(tree, verdicts)
    candidates += _children(tree, verdicts)
    candidates += _whole_disable(probes, verdicts)
    unique: dict[Scope, NamedScope] = {}
    for candidate in candidates:
        if candidate is not None:  # None: it would compile nothing, so measure eager
            unique.setdefault(candidate.scope, candidate)
    if not unique:  # nothing compiles around what stays eager: keep the whole-model region
        return [verdicts.whole_unsplit()]
    return list(unique.values())


class _Verdicts:
    """The probe results by path; builds candidates that respect them."""

    def __init__(self, probes: list[ProbeResult], tree: ModelTree | None = None) -> None:
        self.by_path = {path: probe for probe in probes for path in probe.paths}
        # The parts the tree knows by path: where a region can be split around a part.
        known = [] if tree is None else [p.path for p in (*tree.children, *tree.units)]
        known += [] if tree is None else [path for block in tree.blocks for path in block.paths]
        self.known = list(dict.fromkeys(known))
        self.bad = _outermost(p for probe in probes if probe.excluded for p in probe.paths)
        self.breaking = [
            p for probe in probes if probe.status == "graph_break" and probe.compilable
            for p in probe.paths
        ]  # fmt: skip

    def healthy(self, path: str) -> bool:
        probe = self.by_path.get(path)
        return probe is not None and probe.compilable

    def named(
        self,
        name: str,
        compile_paths: list[str],
        note: str,
        eager: Iterable[str] = (),
        split: bool = True,
    ) -> NamedScope | None:
        """The candidate, or ``None`` when splitting around a looped part leaves nothing to
        compile (every other part of the region is kept eager too)."""
        assert not set(compile_paths) & set(self.bad), (name, compile_paths)
        kept = _outermost([*self.bad, *eager])
        looped = [b for b in kept if _looped(b) and _inside(b, compile_paths)]
        if split and looped:
            compile_paths = self.around(compile_paths, looped)
            note += "; compiled part by part around " + _brief(looped) + " (called in a loop)"
        if not compile_paths:
            return None
        disable = [b for b in kept if _inside(b, compile_paths)]
        breaks = any(_inside(b, compile_paths, itself=True) for b in self.breaking)
        if disable:
            note += "; kept eager: " + _brief(disable)
        scope = Scope(tuple(compile_paths), tuple(disable))
        return NamedScope(name, scope, fullgraph=not disable and not breaks, note=note)

    def whole_unsplit(self) -> NamedScope:
        """The whole model as one region, whatever it holds that stays eager."""
        whole = self.named("whole", [""], "the whole model as one region", split=False)
        assert whole is not None  # unsplit, its one path stays
        return whole

    def around(self, regions: list[str], looped: list[str]) -> list[str]:
        """``regions``, each that holds a part of ``looped`` replaced by the known parts inside
        it that hold none and are not broken (a region the tree knows nothing inside of stays
        as it is)."""
        paths: list[str] = []
        for region in regions:
            held = [p for p in looped if _inside(p, [region])]
            inside = [p for p in self.known if _inside(p, [region])]
            if not held or not inside:
                paths.append(region)
                continue
            paths += [
                p for p in inside if not any(_inside(h, [p], itself=True) for h in held)
                and not any(_inside(p, [b], itself=True) for b in self.bad)  # never compiled
            ]  # fmt: skip
        return _outermost(paths)


def _looped(path: str) -> bool:
    """Whether ``path`` is an element of an indexed container (``nn.Sequential``,
    ``nn.ModuleList``), which its caller runs in a loop."""
    return path.rsplit(".", 1)[-1].isdigit()


def _regional(tree: ModelTree, verdicts: _Verdicts) -> list[NamedScope | None]:
    healthy = [block for block in tree.blocks if verdicts.healthy(block.paths[0])]
    candidates = [
        verdicts.named(
            f"regional:{block.name}",
            list(block.paths),
            f"each of the {len(block.paths)} {block.name} blocks compiled on its own "
            "(they share one graph)",
        )  # fmt: skip
        for block in healthy
    ]
    if len(healthy) > 1:
        name = "regional:" + "+".join(block.name for block in healthy)
        paths = [path for block in healthy for path in block.paths]
        candidates.append(verdicts.named(name, paths, "every repeated block compiled on its own"))
    return candidates


def _children(tree: ModelTree, verdicts: _Verdicts) -> list[NamedScope | None]:
    """Each healthy unit; for a unit the probe excluded, the healthy blocks inside it."""
    paths: list[str] = []
    for unit in tree.units:
        if verdicts.healthy(unit.path):
            paths.append(unit.path)
        elif unit.path in verdicts.by_path:
            paths += [
                path for block in tree.blocks for path in block.paths
                if _inside(path, [unit.path]) and verdicts.healthy(path)
            ]  # fmt: skip
    if not paths:
        return []
    note = "each top-level part compiled on its own: " + _brief(paths)
    return [verdicts.named("children", paths, note)]


def _whole_disable(probes: list[ProbeResult], verdicts: _Verdicts) -> list[NamedScope]:
    candidates = []
    for probe in probes:
        q3 = probe.speedup_vs_eager_q3
        if probe.excluded:
            continue
        if probe.status == "graph_break":
            why = "it breaks the graph"
        elif q3 is not None and q3 < _SLOWER_Q3:
            why = f"compiled alone it made the model slower ({q3:.2f}x eager or less)"
        else:
            continue
        note = f"the whole model with {probe.target} kept eager ({why})"
        candidate = verdicts.named(f"whole-disable:{probe.target}", [""], note, eager=probe.paths)
        if candidate is not None:
            candidates.append(candidate)
    return candidates[:_MAX_DISABLE_CANDIDATES]


def _inside(path: str, regions: list[str], itself: bool = False) -> bool:
    """Whether ``path`` lies inside one of ``regions`` (``""`` is the whole model)."""
    return any(r == "" or path.startswith(r + ".") or (itself and path == r) for r in regions)


def _outermost(paths: Iterable[str]) -> list[str]:
    """The paths, minus those inside another one, in their first order, without repeats."""
    unique = list(dict.fromkeys(paths))
    return [p for p in unique if not _inside(p, [q for q in unique if q != p and q])]


def _brief(paths: list[str]) -> str:
    shown = ", ".join(paths[:4])
    return shown + (f" and {len(paths) - 4} more" if len(paths) > 4 else "")
