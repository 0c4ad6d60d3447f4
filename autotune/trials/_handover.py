"""Inside a trial of a search with builders: compile on builder cores, then hand over to the
measuring cores (and the device) once the measuring slot is free.

Every trial of such a search is one process, as without builders; it only changes cores. It
starts on one of the builder core sets (the first whose lock it can take), builds the model,
compiles it, runs its first calls and checks them against eager there, with torch's thread
count already set to the measuring cores' (Inductor's C++ kernels are generated for the thread
count they will run with, and its cache keys it). Then, right before timing, it gives its builder
cores to the next trial, waits (idle) for the measuring slot, moves every one of its threads to
the measuring cores and times there. So while one trial is timed, the next ones compile beside
it; a measurement never shares its cores or its GPU with a compile; nothing is compiled twice;
and a trial that fails to compile or to match eager, or that generates code the study timed
already, never takes the slot.

The locks are ``flock`` on files the search owns: the slot (``TrialSpec.measure_slot``) and
one per builder core set beside it. The kernel holds them for the process, however it ends.
On a GPU the trial takes the slot before its set-up (eager runs on the device) and lets it go
while Inductor compiles a graph (``compile_fx``: tracing, lowering, code generation and the
Triton and C++ compiles, all on the CPU), where the config allows. Max-autotune's compile
runs kernels on the device only to choose among them: it takes the slot back for each of those
benchmarks (Inductor's choice benchmarks, their example inputs made on the device included,
and its benchmarker), and lets it go between them; with a torch that names them otherwise it
keeps the slot throughout. A config whose compile runs other work on the device (freezing's
constant folding, another backend, a config in parts) keeps the slot throughout. Time spent
waiting for a lock is written to ``TrialSpec.waits_path``: the parent does not count it
against the trial's compile budget, nor the trial against its timing deadline, and the trial's
compile time leaves it out.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

from autotune.trials._spec import TrialSpec

_POLL_S = 0.05
_current: Handover | None = None


def core_lock(slot: str, index: int) -> str:
    """The lock file of builder core set ``index`` beside the slot ``slot``."""
    return f"{slot}.build{index}"


def waited_s(path: str | None) -> float:
    """The seconds a trial has waited for a lock so far (a wait going on included), as its
    waits file says; 0 where it says nothing."""
    if path is None:
        return 0.0
    try:
        with open(path) as file:
            total, since = (float(x) for x in file.read().split())
    except (OSError, ValueError):
        return 0.0
    return total + (time.monotonic() - since if since >= 0 else 0.0)


@contextlib.contextmanager
def handover(spec: TrialSpec) -> Iterator[None]:
    """Holds the trial's place in the pipeline while it runs (nothing without a slot)."""
    global _current
    if spec.measure_slot is None:
        yield
        return
    with Handover(spec) as place:
        _current = place
        try:
            yield
        finally:
            _current = None


def waited_so_far() -> float:
    """The seconds this trial has waited for its locks until now (0 outside a pipeline): what
    its compile time leaves out."""
    return _current.waited if _current is not None else 0.0


def take_measuring_slot() -> tuple[float, float]:
    """Before timing: waits for the measuring slot and moves there (:class:`Handover`). The
    seconds this trial waited for locks in all, and since it started its clock (after its
    builder cores): what its deadline moves by; (0, 0) outside a pipeline."""
    if _current is None:
        return 0.0, 0.0
    _current.measure()
    return _current.waited, _current.waited - _current.before_clock


class Handover:
    """A trial's locks: a builder core set while it compiles, the slot while it measures."""

    def __init__(self, spec: TrialSpec) -> None:
        assert spec.measure_slot is not None
        self.spec = spec
        self.waited = 0.0
        self.before_clock = 0.0  # what it waited before the trial started its clock
        self._slot: IO[Any] = open(spec.measure_slot, "a+")  # noqa: SIM115 - held to the end
        self._cores: IO[Any] | None = None
        self._restore: Callable[[], None] | None = None

    def __enter__(self) -> Handover:
        spec = self.spec
        if spec.build_cores:
            self._cores, cores = self._wait(self._free_core_set)
            pin_process(cores)
            _size_threads(spec.measure_cores or cores, compile_threads=len(cores))
        if not spec.device.startswith("cpu"):
            self._wait(lambda: _try(self._slot))  # set-up runs eager on the device
            held = _device_work_while_compiling(spec)
            if held is not None:
                self._restore = _release_while_compiling(self._slot, self._wait, held)
        self.before_clock = self.waited
        return self

    def measure(self) -> None:
        """Gives the builder cores to the next trial, takes the slot (waiting, idle, while
        another trial measures) and moves every thread to the measuring cores."""
        if self._restore is not None:
            self._restore()
            self._restore = None
        if self._cores is not None:
            self._cores.close()
            self._cores = None
        self._wait(lambda: _try(self._slot))
        if self.spec.measure_cores:
            pin_process(self.spec.measure_cores)

    def __exit__(self, *exc: object) -> None:
        if self._restore is not None:
            self._restore()
        if self._cores is not None:
            self._cores.close()
        self._slot.close()

    def _free_core_set(self) -> tuple[IO[Any], list[int]] | None:
        spec = self.spec
        assert spec.measure_slot is not None
        for index, cores in enumerate(spec.build_cores):
            file = open(core_lock(spec.measure_slot, index), "a+")  # noqa: SIM115
            if _try(file):
                return file, cores
            file.close()
        return None

    def _wait(self, attempt: Callable[[], Any]) -> Any:
        """``attempt()`` until it answers, the wait written to the waits file as it goes."""
        got = attempt()
        if got:
            return got
        since = time.monotonic()
        self._note(since)
        while not (got := attempt()):
            time.sleep(_POLL_S)
        self.waited += time.monotonic() - since
        self._note(-1.0)
        return got

    def _note(self, since: float) -> None:
        path = self.spec.waits_path
        if path is None:
            return
        partial = f"{path}.tmp"
        with contextlib.suppress(OSError):
            with open(partial, "w") as file:
                file.write(f"{self.waited} {since}")
            os.replace(partial, path)


def pin_process(cores: list[int]) -> None:
    """Moves every thread of this process (torch's OpenMP pool included) to ``cores``; threads
    started later inherit them."""
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(int(tid), cores)


def _size_threads(measuring: list[int], compile_threads: int) -> None:
    """torch's threads as the measurement will have them (the generated code depends on it),
    Inductor's compile workers as the builder cores allow."""
    import torch
    import torch._inductor.config as inductor_config

    torch.set_num_threads(len(measuring))
    inductor_config.compile_threads = compile_threads  # a trial process: global is fine


def _try(file: IO[Any]) -> bool:
    try:
        fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _device_work_while_compiling(spec: TrialSpec) -> list[tuple[Any, str]] | None:
    """Where this config's compile runs kernels on the device, the slot to be held there: none
    for Inductor in one config; max-autotune's benchmarks (:func:`_benchmarks`); None (held
    throughout) for freezing (it folds constants on the device), another backend, a config in
    parts, or max-autotune with a torch whose benchmarks are not where we look."""
    config = spec.config or {}
    if config.get("backend", "inductor") != "inductor" or config.get("parts"):
        return None
    options = config.get("options") or {}
    if options.get("freezing"):
        return None
    autotuned = "max-autotune" in str(config.get("mode") or "") or any(
        key.startswith("max_autotune") and value for key, value in options.items()
    )
    return _benchmarks() if autotuned else []


def _benchmarks() -> list[tuple[Any, str]] | None:
    """Inductor's kernel benchmarks while it compiles: the choice benchmarks of its autotuned
    templates (their example inputs are made there) and its GPU benchmarker (torch 2.11 and
    2.13 name them alike); None where this torch lacks one of them."""
    from torch._inductor import select_algorithm
    from torch._inductor.runtime import benchmarking

    needed = [
        (select_algorithm.AlgorithmSelectorCache, "benchmark"),
        (benchmarking.benchmarker, "benchmark_gpu"),
    ]
    if not all(callable(getattr(owner, name, None)) for owner, name in needed):
        return None
    later = (benchmarking.benchmarker, "benchmark_gpu_with_cuda_graph")  # not in torch 2.11
    return needed + ([later] if callable(getattr(*later, None)) else [])


def _release_while_compiling(
    file: IO[Any], wait: Callable[[Callable[[], bool]], Any], held: list[tuple[Any, str]]
) -> Callable[[], None]:
    """Lets the slot go for the outermost ``compile_fx`` call of this process (it calls itself
    for some graphs), holds it again inside for each of ``held`` (methods of a class or an
    object), and takes it back (``wait``) before the compiled graph runs; returns the undo."""
    import torch._inductor.compile_fx as compile_fx_module

    original = compile_fx_module.compile_fx
    depth, inside = [0], [0]

    def compile_fx(*args: Any, **kwargs: Any) -> Any:
        depth[0] += 1
        if depth[0] == 1:
            fcntl.flock(file, fcntl.LOCK_UN)
        try:
            return original(*args, **kwargs)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                wait(lambda: _try(file))

    def on_device(method: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            take = depth[0] > 0 and inside[0] == 0  # outside a compile the slot is held
            inside[0] += 1
            if take:
                wait(lambda: _try(file))
            try:
                return method(*args, **kwargs)
            finally:
                inside[0] -= 1
                if take:
                    fcntl.flock(file, fcntl.LOCK_UN)

        return run

    undo = [_patch(compile_fx_module, "compile_fx", compile_fx)]
    for owner, name in held:
        # a class's function (self comes first when called as a method) or an object's bound one
        undo.append(_patch(owner, name, on_device(getattr(owner, name))))

    def restore() -> None:
        for step in reversed(undo):
            step()

    return restore


def _patch(owner: Any, name: str, value: Any) -> Callable[[], None]:
    """Sets ``owner.name``; returns what puts back what was there (an object's own attribute,
    or none: then its class's shows again)."""
    missing = object()
    before = vars(owner).get(name, missing)
    setattr(owner, name, value)
    if before is missing:
        return lambda: delattr(owner, name)
    return lambda: setattr(owner, name, before)
