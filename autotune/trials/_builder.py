"""Builders compile the next trials while one trial is measured: the parent's side.

A search with builders (``--builders N``) runs one job per builder, plus one, each running its
trials in processes of their own as without builders. A trial starts on a builder core set,
compiles there, then waits for the measuring slot and moves to the measuring cores to be
checked and timed (:mod:`autotune.trials._handover`, inside the trial): while one trial is
measured, up to N others compile beside it, on cores it does not use. This is TVM's
builder/runner split (Triton's parallel precompile measured 2.5x faster autotuning from the
same overlap), without its second compile: the process that compiled is the one that measures.

Here: the core sets and lock files the jobs share (:class:`Pipeline`), and one job's runner
(:class:`PipelinedRunner`), which gives each trial its place and, when a trial ran out of memory
beside the others, takes one builder out of use and runs that trial again.
"""

from __future__ import annotations

import dataclasses
import fcntl
import math
import threading
from typing import IO, Any

from autotune._deadline import Deadline
from autotune.trials._handover import core_lock
from autotune.trials._runner import TrialRunner
from autotune.trials._spec import TrialResult, TrialSpec


@dataclasses.dataclass
class Pipeline:
    """What a search's jobs share: the measuring slot's lock file, the builder core sets (each
    with a lock beside it) and the measuring cores (None: the trial keeps the cores it has)."""

    slot: str
    build_cores: list[list[int]]
    measure_cores: list[int] | None = None
    deadline: Deadline | None = None  # the search's --timeout: no trial runs past it
    _retired: list[IO[Any]] = dataclasses.field(default_factory=list)
    _lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    @property
    def live(self) -> int:
        """The builders in use."""
        return len(self.build_cores) - len(self._retired)

    def place(self, spec: TrialSpec) -> TrialSpec:
        """``spec`` with its place in the pipeline, and the search's time left."""
        left = self.deadline.left() if self.deadline is not None else math.inf
        return dataclasses.replace(
            spec, measure_slot=self.slot, build_cores=[list(c) for c in self.build_cores],
            measure_cores=list(self.measure_cores) if self.measure_cores else None,
            wall_limit_s=left if math.isfinite(left) else None,
        )  # fmt: skip

    def retire_one(self) -> bool:
        """Takes the last builder core set in use out of use for good (its lock held here,
        once the trial compiling there has moved on); False, and nothing done, when one is all
        that is left."""
        with self._lock:
            if self.live <= 1:
                return False
            index = self.live - 1
            file = open(core_lock(self.slot, index), "a+")  # noqa: SIM115 - held to the end
            fcntl.flock(file, fcntl.LOCK_EX)
            self._retired.append(file)
            return True

    def close(self) -> None:
        for file in self._retired:
            file.close()


class PipelinedRunner:
    """One job of a search with builders: runs each trial with ``runner`` in its place in
    ``pipeline``; a trial that ran out of memory beside the others runs again with one builder
    fewer (down to one), so that N builders fit in memory or become fewer."""

    def __init__(self, runner: TrialRunner, pipeline: Pipeline) -> None:
        self.runner = runner
        self.pipeline = pipeline

    def run(self, spec: TrialSpec) -> TrialResult:
        placed = self.pipeline.place(spec)
        result = self.runner.run(placed)
        if result.failure_kind == "oom" and self.pipeline.retire_one():
            result = self.runner.run(placed)
        return result

    def close(self) -> None:
        self.runner.close()
