"""The device slot: where builders share a GPU with the measuring trial, one process at a time
may launch kernels on it, so that no measurement is timed beside another process's kernels.

The slot is an exclusive ``flock`` on a file the search owns (``TrialSpec.device_slot``). The
measuring trial holds it from start to end. A builder holds it too, but lets it go while
Inductor compiles a graph (``compile_fx``: tracing, lowering, code generation and the Triton
and C++ compiles, all on the CPU), which is the work worth overlapping; a config whose compile
itself runs kernels on the device (max-autotune's benchmarks, freezing's constant folding,
another backend) keeps the slot throughout, so its kernel benchmarks run in the measuring slot.
The lock is the kernel's: it goes with the process that holds it, however that process ends."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Callable, Iterator
from typing import IO, Any

from autotune.trials._spec import TrialSpec


@contextlib.contextmanager
def device_slot(spec: TrialSpec) -> Iterator[None]:
    """Holds the spec's device slot (if it names one) while the trial runs; a builder's
    is let go while Inductor compiles, where its config allows."""
    if spec.device_slot is None:
        yield
        return
    with open(spec.device_slot, "a+") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        restore = _release_while_compiling(file) if _compiles_off_device(spec) else None
        try:
            yield
        finally:
            if restore is not None:
                restore()


def _compiles_off_device(spec: TrialSpec) -> bool:
    """A builder's config whose compile launches nothing on the device: Inductor, without
    max-autotune (it benchmarks kernels) or freezing (it folds constants on the device), in
    one config (a config in parts keeps the slot)."""
    config = spec.config or {}
    if not spec.build_only or config.get("backend", "inductor") != "inductor":
        return False
    if config.get("parts"):  # configs of their own: held throughout, as the simplest rule
        return False
    options = config.get("options") or {}
    autotuned = "max-autotune" in str(config.get("mode") or "") or any(
        key.startswith("max_autotune") and value for key, value in options.items()
    )
    return not autotuned and not options.get("freezing")


def _release_while_compiling(file: IO[Any]) -> Callable[[], None]:
    """Lets the slot go for the outermost ``compile_fx`` call of this process (it calls itself
    for some graphs) and takes it back before the compiled graph runs; returns the undo."""
    import torch._inductor.compile_fx as compile_fx_module

    original = compile_fx_module.compile_fx
    depth = [0]

    def compile_fx(*args: Any, **kwargs: Any) -> Any:
        depth[0] += 1
        if depth[0] == 1:
            fcntl.flock(file, fcntl.LOCK_UN)
        try:
            return original(*args, **kwargs)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                fcntl.flock(file, fcntl.LOCK_EX)

    compile_fx_module.compile_fx = compile_fx
    return lambda: setattr(compile_fx_module, "compile_fx", original)
