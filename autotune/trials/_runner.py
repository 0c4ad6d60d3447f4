"""Runs a trial in a process of its own and turns how it ended into a TrialResult.

The trial process is started, tracked and stopped by :mod:`autotune._process`: it leads a
process group of its own (Inductor's compile workers and g++ are in it), SIGKILLed when the
trial ends, times out, or the parent is interrupted; the trial kills its group if its parent dies.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Protocol

from autotune import _process, _scratch
from autotune.trials._spec import TrialResult, TrialSpec

_TAIL_CHARS = 4000
CORES_ENV = "AUTOTUNE_TRIAL_CORES"


class TrialRunner(Protocol):
    """Anything that can run a trial spec and report its result."""

    def run(self, spec: TrialSpec) -> TrialResult: ...

    def close(self) -> None: ...


class SubprocessRunner:
    """A fresh Python process per trial: the most isolated, and the slowest to start.

    Args:
        cores: CPU cores the trials may use (all by default); see :func:`pin_threads`.
    """

    def __init__(self, python: str = sys.executable, cores: list[int] | None = None) -> None:
        self.python = python
        self.cores = cores

    def __enter__(self) -> SubprocessRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Nothing outlives a trial here."""

    def run(self, spec: TrialSpec) -> TrialResult:
        started = time.monotonic()
        with _scratch.scratch_dir("trial-") as folder:
            (folder / "spec.json").write_text(json.dumps(spec.to_dict()))
            rc, timed_out = self._spawn(spec, folder)
            result = outcome(folder, rc, timed_out, spec.time_limit_s)
        result.wall_time_s = time.monotonic() - started
        return result

    def _spawn(self, spec: TrialSpec, folder: Path) -> tuple[int | None, bool]:
        argv = [
            self.python, "-m", "autotune.trials._child",
            str(folder / "spec.json"), str(folder / "result.json"),
        ]  # fmt: skip
        env = {**child_env(self.cores), **trial_env(spec)}
        with open(folder / "log.txt", "wb") as log:
            rc = _process.run(argv, env=env, output=log, timeout_s=spec.time_limit_s)
        return rc, rc is None


def child_env(cores: list[int] | None = None) -> dict[str, str]:
    """The environment of a trial process: ours, with autotune importable, our scratch root
    and its cores."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", **_scratch.run_root_env())
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    if cores:
        env[CORES_ENV] = ",".join(map(str, cores))
    return env


def pin_threads() -> None:
    """In a trial process: keep to the cores it was given (``--jobs``), and size torch's
    intra-op threads and Inductor's compile workers to them, so parallel trials never
    oversubscribe the CPU. Without given cores, torch's own defaults stand."""
    given = os.environ.get(CORES_ENV)
    if not given:
        return
    import torch
    import torch._inductor.config as inductor_config

    cores = {int(c) for c in given.split(",")}
    os.sched_setaffinity(0, cores)
    torch.set_num_threads(len(cores))
    inductor_config.compile_threads = len(cores)  # a trial process is isolated: global is fine


# The subfolders of a study's cache folder that trials compile into (Inductor's, Triton's):
# the only ones its pruning may touch.
CACHE_PARTS = {"TORCHINDUCTOR_CACHE_DIR": "inductor", "TRITON_CACHE_DIR": "triton"}


def trial_env(spec: TrialSpec) -> dict[str, str]:
    """A trial process's own environment: the study's kernel caches (Inductor and Triton),
    shared by its trials; and for a CPU trial, no GPU in sight (on a GPU node Dynamo would
    start CUDA in each of its compiles: a CUDA context for nothing, and an error in a trial
    forked from the warm host)."""
    env = {"CUDA_VISIBLE_DEVICES": ""} if spec.device.startswith("cpu") else {}
    if spec.cache_dir:
        env.update({v: str(Path(spec.cache_dir, part)) for v, part in CACHE_PARTS.items()})
    return env


def outcome(folder: Path, rc: int | None, timed_out: bool, time_limit_s: float) -> TrialResult:
    """The result a trial wrote, or the failure its ending means."""
    log_tail = tail(folder)
    result_file = folder / "result.json"
    if timed_out:
        error = (
            f"still compiling or running after its compile budget of {time_limit_s:g} s; killed"
        )
        return TrialResult.failed("timeout", error, error_tail=log_tail)
    if result_file.exists():
        result = TrialResult.from_dict(json.loads(result_file.read_text()))
        result.error_tail = log_tail if not result.ok else None
        return result
    return TrialResult.failed("crash", _death(rc), error_tail=log_tail)


def tail(folder: Path) -> str | None:
    """The end of a trial's output."""
    try:
        data = (folder / "log.txt").read_bytes()[-_TAIL_CHARS:]
    except OSError:
        return None
    text = data.decode("utf-8", errors="replace").strip()
    return text or None


def _death(rc: int | None) -> str:
    if rc is not None and rc < 0:
        name = signal.Signals(-rc).name
        hint = " (possibly the kernel's out-of-memory killer)" if -rc == signal.SIGKILL else ""
        return f"the trial process died of {name}{hint}"
    return f"the trial process exited with code {rc} without a result"
