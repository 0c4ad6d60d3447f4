"""Runs a trial in a process of its own and turns how it ended into a TrialResult.

The child leads a new process group (``start_new_session``); whatever it started (Inductor's
compile workers, g++) is in that group, and the group is SIGKILLed when the trial ends, times
out, or the parent is interrupted. The child kills its own group if this process dies.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Protocol

from autotune.trials._spec import TrialResult, TrialSpec

_TAIL_CHARS = 4000
_live_groups: set[int] = set()
_lock = threading.Lock()


class TrialRunner(Protocol):
    """Anything that can run a trial spec and report its result."""

    def run(self, spec: TrialSpec) -> TrialResult: ...


class SubprocessRunner:
    """One fresh Python process per trial (the most isolated, and the slowest to start)."""

    def __init__(self, python: str = sys.executable, grace_s: float = 0.0) -> None:
        self.python = python
        self.grace_s = grace_s

    def run(self, spec: TrialSpec) -> TrialResult:
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="autotune-trial-") as tmp:
            folder = Path(tmp)
            (folder / "spec.json").write_text(json.dumps(spec.to_dict()))
            rc, timed_out = self._spawn(spec, folder)
            result = _outcome(folder, rc, timed_out, spec.budget_s)
        result.wall_time_s = time.monotonic() - started
        return result

    def _spawn(self, spec: TrialSpec, folder: Path) -> tuple[int | None, bool]:
        argv = [
            self.python, "-m", "autotune.trials._child",
            str(folder / "spec.json"), str(folder / "result.json"),
        ]  # fmt: skip
        with open(folder / "log.txt", "wb") as log:
            proc = subprocess.Popen(
                argv, env=_child_env(spec), stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
            with _lock:
                _live_groups.add(proc.pid)
            try:
                return proc.wait(timeout=spec.budget_s + self.grace_s), False
            except subprocess.TimeoutExpired:
                return None, True
            finally:
                _kill_group(proc.pid)
                proc.wait()
                with _lock:
                    _live_groups.discard(proc.pid)


def kill_all_trials() -> None:
    """SIGKILLs the process group of every running trial (on interrupt or exit)."""
    with _lock:
        groups = list(_live_groups)
    for pgid in groups:
        _kill_group(pgid)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _child_env(spec: TrialSpec) -> dict[str, str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    if spec.cache_dir:
        env["TORCHINDUCTOR_CACHE_DIR"] = str(Path(spec.cache_dir, "inductor"))
        env["TRITON_CACHE_DIR"] = str(Path(spec.cache_dir, "triton"))
    return env


def _outcome(folder: Path, rc: int | None, timed_out: bool, budget_s: float) -> TrialResult:
    tail = _tail(folder / "log.txt")
    result_file = folder / "result.json"
    if timed_out:
        error = f"still compiling or running after its compile budget of {budget_s:g} s; killed"
        return TrialResult.failed("timeout", error, error_tail=tail)
    if result_file.exists():
        result = TrialResult.from_dict(json.loads(result_file.read_text()))
        result.error_tail = tail if not result.ok else None
        return result
    return TrialResult.failed("crash", _death(rc), error_tail=tail)


def _death(rc: int | None) -> str:
    if rc is not None and rc < 0:
        name = signal.Signals(-rc).name
        hint = " (possibly the kernel's out-of-memory killer)" if -rc == signal.SIGKILL else ""
        return f"the trial process died of {name}{hint}"
    return f"the trial process exited with code {rc} without a result"


def _tail(path: Path) -> str | None:
    try:
        data = path.read_bytes()[-_TAIL_CHARS:]
    except OSError:
        return None
    text = data.decode("utf-8", errors="replace").strip()
    return text or None
