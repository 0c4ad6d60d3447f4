"""Silent fallbacks of OpenVINO's ``torch.compile`` backend, made visible to a trial:
:func:`watch` wraps the functions openvino's backend module calls and fills a
:class:`ConversionReport` (ops run in OpenVINO against ops left to torch, and why). A trial
with any fallback fails as ``backend_fallback``."""

from __future__ import annotations

import contextlib
import operator
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import torch

from autotune.runtime.openvino_backend import BACKEND_MODULE, EXECUTE_MODULE, version


@dataclass
class GraphReport:
    """What became of one graph the backend was given.

    Attributes:
        index: Order in which the backend got the graph, from 0.
        fate: ``"openvino"`` (every op ran in OpenVINO), ``"partial"`` (some ops or partitions
            left to torch), ``"inductor"`` (the whole graph fell back to Inductor),
            ``"eager"`` (no op ran in OpenVINO: nothing supported, or every partition failed
            to convert), or ``"pending"`` (partitioned, never called inside :func:`watch`).
        ops_openvino: FX ``call_function``/``call_method`` nodes inside OpenVINO partitions
            that ran (or are pending).
        ops_torch: Such nodes run by torch: left out of the partitions, in partitions that
            failed, or the whole graph when it went to Inductor.
        partitions: OpenVINO partitions (``fused_N`` submodules).
        partitions_failed: Partitions that fell back to eager torch when first called.
        error: The exception that caused a whole-graph or partition fallback, as text.
        cached: Whether it was a fully supported model read back from the model cache.
    """

    index: int
    fate: str = "pending"
    ops_openvino: int = 0
    ops_torch: int = 0
    partitions: int = 0
    partitions_failed: int = 0
    error: str | None = None
    cached: bool = False


@dataclass
class ConversionReport:
    """What the openvino backend did with the graphs compiled inside :func:`watch`.

    Ops of a converted graph are counted on the ATen graph the backend partitions; those of a
    graph handed to Inductor on Dynamo's graph (the retrace that failed never produced one).

    Attributes:
        known: False when the backend's internals were not where this module expects them
            (another openvino version): then nothing was watched and ``share`` and
            ``fallback`` are None.
        why_unknown: Why ``known`` is False.
        openvino_version: The installed openvino version.
        graphs: One :class:`GraphReport` per graph, in order.
    """

    known: bool = True
    why_unknown: str | None = None
    openvino_version: str | None = None
    graphs: list[GraphReport] = field(default_factory=list)

    @property
    def graphs_seen(self) -> int:
        """Graphs the backend was given."""
        return len(self.graphs)

    @property
    def graphs_converted(self) -> int:
        """Graphs run entirely by OpenVINO."""
        return sum(g.fate == "openvino" for g in self.graphs)

    @property
    def graphs_fallback(self) -> list[GraphReport]:
        """Graphs that fell back whole, to Inductor or to eager torch."""
        return [g for g in self.graphs if g.fate in ("inductor", "eager")]

    @property
    def ops_openvino(self) -> int:
        """FX op nodes run by OpenVINO, over all graphs."""
        return sum(g.ops_openvino for g in self.graphs)

    @property
    def ops_torch(self) -> int:
        """FX op nodes left to torch (eager or Inductor), over all graphs."""
        return sum(g.ops_torch for g in self.graphs)

    @property
    def share(self) -> float | None:
        """Fraction of op nodes run by OpenVINO; None when unknown or no op was seen."""
        total = self.ops_openvino + self.ops_torch
        if not self.known or total == 0:
            return None
        return self.ops_openvino / total

    @property
    def fallback(self) -> bool | None:
        """True when a graph fell back whole or any op was left to torch; None when unknown."""
        if not self.known:
            return None
        return bool(self.graphs_fallback) or self.ops_torch > 0

    def summary(self) -> str:
        """One line, e.g. ``openvino: 2 graphs, 1 converted, 1 fell back, share 0.83``."""
        if not self.known:
            return f"openvino: conversion unknown ({self.why_unknown})"
        share = "n/a" if self.share is None else f"{self.share:.2f}"
        return (
            f"openvino: {self.graphs_seen} graphs, {self.graphs_converted} converted, "
            f"{len(self.graphs_fallback)} fell back, {self.ops_openvino} ops in OpenVINO, "
            f"{self.ops_torch} in torch, share {share}"
        )


def _is_op(node: torch.fx.Node) -> bool:
    return node.op in ("call_function", "call_method")


def _count_ops(gm: Any) -> int:
    graph = getattr(gm, "graph", None)
    if not isinstance(graph, torch.fx.Graph):
        return 0
    return sum(
        _is_op(n) or n.op == "call_module" and not str(n.target).startswith("fused_")
        for n in graph.nodes
    )


def _error_text(exc: BaseException | None) -> str | None:
    if exc is None:
        return None
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 2000 else text[:2000] + "..."


class _Watch:
    """The state of one :func:`watch`: the graphs seen and what each became."""

    def __init__(self, report: ConversionReport) -> None:
        self.report = report
        self.current: GraphReport | None = None
        self.subgraphs: dict[int, Any] = {}  # graph index -> Dynamo's graph
        self.fused: dict[int, Any] = {}  # graph index -> partitioned graph module
        self.errors: dict[int, str] = {}  # id(graph module) -> conversion error

    def new_graph(self, subgraph: Any) -> GraphReport:
        record = GraphReport(index=len(self.report.graphs))
        self.report.graphs.append(record)
        self.subgraphs[record.index] = subgraph
        self.current = record
        return record

    def finish(self) -> None:
        for record in self.report.graphs:
            if record.fate == "inductor":
                record.ops_torch = _count_ops(self.subgraphs.get(record.index))
            elif record.cached:
                record.fate = "openvino"
                record.ops_openvino = _count_ops(self.subgraphs.get(record.index))
            elif record.index in self.fused:
                self._count_partitioned(record, self.fused[record.index])
            elif record.fate == "pending":
                record.fate = "eager"
                record.error = record.error or "the backend returned without partitioning"
        self.subgraphs.clear()
        self.fused.clear()

    def _count_partitioned(self, record: GraphReport, gm: Any) -> None:
        ran, pending, failed = 0, 0, 0
        for node in gm.graph.nodes:
            if node.op == "call_module" and str(node.target).startswith("fused_"):
                record.partitions += 1
                state, inner, error = self._partition_state(getattr(gm, str(node.target)))
                ops = _count_ops(inner)
                if state == "torch":
                    failed += 1
                    record.ops_torch += ops
                    record.error = record.error or error
                else:
                    record.ops_openvino += ops
                    ran += state == "openvino"
                    pending += state == "pending"
            elif _is_op(node) and not _unpacks_partition(node):
                record.ops_torch += 1
        record.partitions_failed = failed
        if record.ops_openvino == 0:
            record.fate = "eager"
            record.error = record.error or "no op of the graph is supported by OpenVINO"
        elif pending and not ran:
            record.fate = "pending"
        else:
            record.fate = "partial" if record.ops_torch else "openvino"

    def _partition_state(self, sub: Any) -> tuple[str, Any, str | None]:
        """("openvino" | "torch" | "pending", the partition's GraphModule, error)."""
        error = None
        for _ in range(64):
            if isinstance(sub, torch.fx.GraphModule):
                return "pending", sub, None  # not yet wrapped: never called
            inner = getattr(sub, "gm", None)
            if not getattr(sub, "perm_fallback", False):
                return "openvino", _innermost(inner), None
            # Fell back: the module runs its inner one. The backend re-wraps an already
            # wrapped partition when a graph meets new input shapes; the outer wrapper then
            # fails and the inner one still runs in OpenVINO.
            error = error or self.errors.get(id(inner))
            if isinstance(inner, torch.fx.GraphModule):
                return "torch", inner, error
            sub = inner
        return "torch", None, error


def _innermost(sub: Any) -> Any:
    for _ in range(64):
        if isinstance(sub, torch.fx.GraphModule) or sub is None:
            return sub
        sub = getattr(sub, "gm", None)
    return None


def _unpacks_partition(node: torch.fx.Node) -> bool:
    """A getitem that only unpacks a fused partition's outputs (made by the partitioner)."""
    if node.target is not operator.getitem or not node.args:
        return False
    src = node.args[0]
    return (
        isinstance(src, torch.fx.Node)
        and src.op == "call_module"
        and str(src.target).startswith("fused_")
    )


def _import_internals() -> tuple[ModuleType, ModuleType]:
    import importlib

    with warnings.catch_warnings():
        # openvino sets torch._dynamo.config.inline_inbuilt_nn_modules, deprecated in torch 2.13
        warnings.simplefilter("ignore", FutureWarning)
        backend = importlib.import_module(BACKEND_MODULE)
    return backend, importlib.import_module(EXECUTE_MODULE)


@contextlib.contextmanager
def watch() -> Iterator[ConversionReport]:
    """Watches what the openvino backend does with the graphs compiled inside the block.

    Compile and call the model inside (the backend converts partitions on their first call);
    the report is complete when the block exits. Graphs Dynamo compiled before the block are
    not seen.

    Wraps, for the block only, four names in openvino's ``torchdynamo`` modules:
    ``backend.fx_openvino`` (one graph), ``backend.Partitioner`` (the partitioned graph),
    ``backend.compile_fx`` (the whole-graph fallback to Inductor, called inside its ``except``)
    and ``execute.openvino_execute`` (a partition's conversion error). When one is missing the
    block runs unwatched and the report says ``known=False``.

    Yields:
        The report, filled in when the block exits.

    Example:
        >>> with watch() as report:
        ...     compiled(x)
        >>> report.share, report.fallback
    """
    report = ConversionReport(openvino_version=version())
    try:
        backend, execute = _import_internals()
    except Exception as exc:  # not installed or moved: unknown, never a crash
        report.known, report.why_unknown = False, f"cannot import openvino's backend: {exc}"
        yield report
        return
    wanted = [
        (backend, "fx_openvino"),
        (backend, "Partitioner"),
        (backend, "compile_fx"),
        (execute, "openvino_execute"),
    ]
    missing = [f"{m.__name__}.{n}" for m, n in wanted if not callable(getattr(m, n, None))]
    if missing or not isinstance(backend.Partitioner, type):
        report.known = False
        report.why_unknown = "openvino internals moved: " + (", ".join(missing) or "Partitioner")
        yield report
        return

    state = _Watch(report)
    saved = {(m, n): getattr(m, n) for m, n in wanted}
    orig_fx_openvino = saved[(backend, "fx_openvino")]
    orig_partitioner = saved[(backend, "Partitioner")]
    orig_compile_fx = saved[(backend, "compile_fx")]
    orig_execute = saved[(execute, "openvino_execute")]

    def fx_openvino(subgraph: Any, example_inputs: Any, *args: Any, **kwargs: Any) -> Any:
        outer = state.current
        state.new_graph(subgraph)
        try:
            return orig_fx_openvino(subgraph, example_inputs, *args, **kwargs)
        finally:
            state.current = outer

    def current(graph: Any) -> GraphReport:
        # With aot_autograd the backend calls the fx_openvino it captured at import (as
        # AOTAutograd's compiler), not the name wrapped above: a graph then starts here.
        record = state.current
        if record is None or record.index in state.fused or record.fate != "pending":
            record = state.new_graph(graph)
        return record

    class Partitioner(orig_partitioner):  # type: ignore[misc, valid-type]
        def make_partitions(self, graph: Any, *args: Any, **kwargs: Any) -> Any:
            record = current(graph)
            fused = super().make_partitions(graph, *args, **kwargs)
            state.fused[record.index] = fused
            return fused

    def compile_fx(graph: Any, *args: Any, **kwargs: Any) -> Any:
        # Called from fx_openvino's `except Exception as e:` block: the exception is current.
        record = state.current
        if record is None or state.subgraphs.get(record.index) is not graph:
            record = state.current = current(graph)
        record.fate = "inductor"
        record.error = _error_text(sys.exc_info()[1]) or "unknown error"
        state.fused.pop(record.index, None)
        return orig_compile_fx(graph, *args, **kwargs)

    def openvino_execute(gm: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return orig_execute(gm, *args, **kwargs)
        except Exception as exc:
            state.errors[id(gm)] = _error_text(exc) or type(exc).__name__
            raise

    patched: list[tuple[ModuleType, str, Any]] = [
        (backend, "fx_openvino", fx_openvino),
        (backend, "Partitioner", Partitioner),
        (backend, "compile_fx", compile_fx),
        (execute, "openvino_execute", openvino_execute),
    ]
    cached_reader = getattr(backend, "openvino_compile_cached_model", None)
    if callable(cached_reader):

        def read_cached(*args: Any, **kwargs: Any) -> Any:
            compiled = cached_reader(*args, **kwargs)
            if state.current is not None:
                state.current.cached = True
            return compiled

        saved[(backend, "openvino_compile_cached_model")] = cached_reader
        patched.append((backend, "openvino_compile_cached_model", read_cached))
    try:
        for module, name, value in patched:
            setattr(module, name, value)
        yield report
    finally:
        for (module, name), value in saved.items():
            setattr(module, name, value)
        state.finish()
