"""Compiling ahead while the device measures: builders and one measuring runner (TVM's
builder/runner split; Triton's parallel precompile measured 2.5x faster autotuning from it).

A search with builders runs each compiled trial in two processes. A builder, on CPU cores of
its own, compiles the trial's config, checks its outputs against eager and names its
generated code, filling the study's Inductor and Triton caches on the way; then the
measuring runner, one trial at a time, compiles the config again from those caches (warm: a
fraction of the cold compile) and times it. While the runner measures one trial, the builders
compile the next ones, so a trial's cold compile no longer waits for the device, nor the
device for it.

The builder's cold compile is the trial's compile time (what its budget, start-up and the
amortized objective see); the runner's warm compile is recorded beside it
(``phases.warm_compile_s``). A config that fails to build, or that builds code the study
timed already, never reaches the runner: the failure and the budget are the builder's.
Timings are the runner's alone: on a CPU device the runner's cores are its own, and on a GPU
the device slot (:mod:`autotune.trials._slot`) keeps builders' kernels off the device while it
measures.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from autotune.trials._runner import TrialRunner
from autotune.trials._spec import TrialResult, TrialSpec

# A build that died of these may have died for want of memory beside the other builders: the
# trial is run again alone (the config judged as without builders), and the pool shrinks.
_ALONE = ("oom", "crash")


class BuilderPool:
    """The builders (trial runners on cores of their own), lent one build at a time; the pool
    shrinks by one (never below one) each time a build runs out of memory."""

    def __init__(self, builders: Sequence[TrialRunner]) -> None:
        self.builders = list(builders)
        self.live = len(self.builders)
        self._shrink = 0
        self._lock = threading.Lock()
        self._free: queue.Queue[TrialRunner] = queue.Queue()
        for builder in self.builders:
            self._free.put(builder)

    @contextmanager
    def lease(self) -> Iterator[TrialRunner]:
        """A free builder, for one build (waits while every builder compiles)."""
        builder = self._free.get()
        try:
            yield builder
        finally:
            with self._lock:
                retire = self._shrink > 0 and self.live > 1
                if retire:
                    self._shrink, self.live = self._shrink - 1, self.live - 1
            if retire:
                builder.close()
            else:
                self._free.put(builder)

    def shrink(self) -> None:
        """One builder fewer once one is back (builds ran out of memory side by side)."""
        with self._lock:
            self._shrink += 1

    def close(self) -> None:
        for builder in self.builders:
            builder.close()


@dataclasses.dataclass
class Measurer:
    """The one runner that times trials, and the lock that keeps its trials one at a time."""

    runner: TrialRunner
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)


class PipelinedRunner:
    """One job of a search with builders: it builds a trial's config with a builder of
    ``pool``, then waits its turn to measure it on ``measurer``. A search runs one such job
    per builder, plus one, all sharing the pool and the measurer: while one trial is measured,
    every builder has a trial to compile. ``slot`` is the device slot's lock file, on a GPU
    (None on a CPU device, where builders and runner have cores of their own); ``clock``
    reads the time (a test passes its own)."""

    def __init__(
        self,
        pool: BuilderPool,
        measurer: Measurer,
        slot: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.pool = pool
        self.measurer = measurer
        self.slot = slot
        self.clock = clock

    def run(self, spec: TrialSpec) -> TrialResult:
        spec = dataclasses.replace(spec, device_slot=self.slot)
        if spec.config is None:  # eager: nothing to compile
            with self.measurer.lock:
                return self.measurer.runner.run(spec)
        with self.pool.lease() as builder:
            built = builder.run(dataclasses.replace(spec, build_only=True, progress_path=None))
            if built.failure_kind == "oom":
                self.pool.shrink()  # this builder, as it comes back
        if built.failure_kind in _ALONE:
            with self.measurer.lock:
                return self.measurer.runner.run(spec)
        if not built.ok or built.equivalent_of is not None:
            return built  # failed to build, or built code the study timed: nothing to time
        asked = self.clock()
        with self.measurer.lock:
            waited = self.clock() - asked
            measured = self.measurer.runner.run(spec)
        return merged(built, measured, waited)

    def close(self) -> None:
        """Closes the shared pool and measurer (closing either twice does nothing)."""
        self.pool.close()
        self.measurer.runner.close()


def merged(built: TrialResult, measured: TrialResult, waited_s: float) -> TrialResult:
    """The trial's result: the runner's timings and checks, the builder's cold compile as its
    compile time (and as a traffic's start-up, cold; the runner's is its warm start-up), the
    runner's warm compile beside it, the builder's cache misses beside the runner's hits, and
    the time the built trial waited for the runner."""
    phases = dict(measured.phases)
    phases["warm_compile_s"] = phases.get("compile_s", measured.compile_time_s or 0.0)
    phases["compile_s"] = built.phases.get("compile_s", built.compile_time_s or 0.0)
    phases["build_s"] = built.wall_time_s or 0.0
    phases["waited_s"] = waited_s
    traffic = measured.traffic
    if traffic is not None and built.compile_time_s is not None:
        warm = traffic.get("startup_s")
        traffic = {**traffic, "startup_s": built.compile_time_s, "warm_startup_s": warm}
    return dataclasses.replace(
        measured,
        compile_time_s=built.compile_time_s,
        phases=phases,
        traffic=traffic,
        cache={**measured.cache, "build_fxgraph_miss": built.cache.get("fxgraph_miss", 0)},
        wall_time_s=(built.wall_time_s or 0.0) + (measured.wall_time_s or 0.0),
    )
