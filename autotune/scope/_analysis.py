"""Module-tree analysis: top-level parts, repeated block classes, and their share of eager time.

It runs where the model lives: in the analysis child process (see ``_child``), never in the
study process, so that building a model on CUDA never initializes CUDA in the parent of trials.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from autotune.scope._tree import BlockClass, ModelTree, ModulePart

# Containers whose elements can be repeated blocks (BERT's `encoder.layer`, timm's `blocks`).
_CONTAINERS = (nn.ModuleList, nn.Sequential, nn.ModuleDict)
_MIN_PASSES = 3
_MAX_PASSES = 200


def analyze_module(
    model: nn.Module,
    sweep: Callable[[], object] | None = None,
    device: str = "cpu",
    *,
    target_s: float = 0.3,
) -> ModelTree:
    """Describes ``model``'s top-level parts and repeated blocks, and profiles them.

    Args:
        model: The eager model, on ``device``.
        sweep: One pass over the workload (every input shape once); ``None`` skips profiling.
        device: Where the model runs; CUDA is synchronized around every timed forward.
        target_s: Profile for at least this long (and at least 3 passes).

    Returns:
        A :class:`ModelTree` whose time shares come from forward pre/post hooks on the root,
        each top-level child, each unit and each block instance.
    """
    children = [name for name, _ in model.named_children()]
    units = _units(model)
    blocks = _blocks(model)
    timing = None
    if sweep is not None:
        hooked = {"", *children, *units, *(p for _, paths in blocks for p in paths)}
        hooked = {p for p in hooked if _has_forward(model.get_submodule(p))}
        timing = _profile(model, hooked, sweep, device, target_s)
    describe = _Describer(model, timing, units)
    return ModelTree(
        root_class=type(model).__name__,
        parameters=_parameters(model),
        children=tuple(describe(path) for path in children),
        units=tuple(describe(path) for path in units),
        blocks=tuple(
            BlockClass(name, tuple(describe(p) for p in paths)) for name, paths in blocks
        ),
        eager_time_s=None if timing is None else timing.seconds.get("", 0.0) / timing.passes,
    )


def _has_forward(module: nn.Module) -> bool:
    # ModuleList and ModuleDict keep nn.Module's unimplemented forward: they cannot be called,
    # so they cannot be compiled either.
    return type(module).forward is not nn.Module.forward


def _is_block(module: nn.Module) -> bool:
    """A callable module that is more than one built-in layer (not nn.Linear, nn.ReLU...)."""
    if not _has_forward(module):
        return False
    builtin = type(module).__module__.startswith("torch.")
    return not builtin or next(module.children(), None) is not None


def _units(module: nn.Module, prefix: str = "") -> list[str]:
    paths = []
    for name, child in module.named_children():
        path = prefix + name
        paths += [path] if _has_forward(child) else _units(child, path + ".")
    return paths


def _blocks(model: nn.Module) -> list[tuple[str, list[str]]]:
    """Repeated block classes, outermost first: ``(name, instance paths)``."""
    held: dict[type, list[str]] = defaultdict(list)
    for path, module in model.named_modules():
        if isinstance(module, _CONTAINERS):
            kids = [(f"{path}.{n}" if path else n, c) for n, c in module.named_children()]
            counts = Counter(type(c) for _, c in kids)
            for kid_path, kid in kids:
                if counts[type(kid)] >= 2 and _is_block(kid):
                    held[type(kid)].append(kid_path)
    taken: list[str] = []
    found: list[tuple[type, list[str]]] = []
    for cls in sorted(held, key=lambda c: min(p.count(".") for p in held[c])):
        paths = [p for p in held[cls] if not any(_under(p, t) for t in taken + held[cls])]
        if len(paths) >= 2:
            found.append((cls, paths))
            taken += paths
    return [(_class_name(cls, [c for c, _ in found]), paths) for cls, paths in found]


def _under(path: str, ancestor: str) -> bool:
    return path.startswith(ancestor + ".")


def _class_name(cls: type, others: list[type]) -> str:
    clash = any(o is not cls and o.__name__ == cls.__name__ for o in others)
    return f"{cls.__module__}.{cls.__qualname__}" if clash else cls.__name__


def _parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


@dataclass
class _Timing:
    seconds: dict[str, float]
    calls: dict[str, int]
    passes: int


class _Clock:
    """Forward pre/post hooks that add each module's wall time (nested calls stack)."""

    def __init__(self, device: str) -> None:
        self.cuda = torch.device(device).type == "cuda"
        self.device = device
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.started: dict[str, list[float]] = defaultdict(list)

    def pre(self, path: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: Any) -> None:
            self._sync()
            self.started[path].append(time.perf_counter())

        return hook

    def post(self, path: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: Any, output: Any) -> None:
            self._sync()
            self.seconds[path] += time.perf_counter() - self.started[path].pop()
            self.calls[path] += 1

        return hook

    def reset(self) -> None:
        self.seconds.clear()
        self.calls.clear()

    def _sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize(self.device)


@contextmanager
def _hooked(model: nn.Module, paths: set[str], clock: _Clock) -> Iterator[None]:
    handles = []
    for path in sorted(paths):
        module = model.get_submodule(path)
        handles.append(module.register_forward_pre_hook(clock.pre(path)))
        handles.append(module.register_forward_hook(clock.post(path)))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def _profile(
    model: nn.Module, paths: set[str], sweep: Callable[[], object], device: str, target_s: float
) -> _Timing:
    clock = _Clock(device)
    with _hooked(model, paths, clock):
        sweep()  # warm-up: lazy initialization, allocator and caches are not the model's time
        clock.reset()
        passes, started = 0, time.perf_counter()
        while passes < _MIN_PASSES or (
            passes < _MAX_PASSES and time.perf_counter() - started < target_s
        ):
            sweep()
            passes += 1
    return _Timing(dict(clock.seconds), dict(clock.calls), passes)


class _Describer:
    """Turns a path into a ModulePart; a container's time and calls are its units'."""

    def __init__(self, model: nn.Module, timing: _Timing | None, units: list[str]) -> None:
        self.model = model
        self.timing = timing
        self.units = units

    def __call__(self, path: str) -> ModulePart:
        module = self.model.get_submodule(path)
        part = ModulePart(path, type(module).__name__, _parameters(module))
        if self.timing is None:
            return part
        covered = [path] if _has_forward(module) else [u for u in self.units if _under(u, path)]
        seconds = sum(self.timing.seconds.get(p, 0.0) for p in covered)
        calls = sum(self.timing.calls.get(p, 0) for p in covered)
        total = self.timing.seconds.get("", 0.0)
        share = seconds / total if total > 0 else None
        return dataclasses.replace(part, calls=round(calls / self.timing.passes), time_share=share)
