"""Trials forked from a preloaded host: the isolation of a fresh process without its start-up tax.

A fresh Python process spends seconds importing torch and Inductor and probing the C++
toolchain before a trial does any work. The host pays that once; each trial is a fork of it,
in a session of its own, so a crash, hang, leak or config change in one trial cannot reach the
next. If the host dies, the trial in flight is a ``crash`` and the next trial starts a new host.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from autotune import _process, _scratch
from autotune.trials import _host, _runner
from autotune.trials._spec import TrialResult, TrialSpec
from autotune.workload import found_beside

_READY_TIMEOUT_S = 600.0
_REPLY_TIMEOUT_S = 60.0


# The preloaded host's log, beside the study's kernel caches (one per process of the study).
HOST_LOG_PREFIX = "autotune-host-"


class HostDied(Exception):
    """The host closed its pipe or did not answer in time."""


class _Host:
    """One host process and its JSON-lines pipe."""

    def __init__(self, python: str, env: dict[str, str], log: Path) -> None:
        with open(log, "ab") as err:
            self.proc = _process.start(
                [python, "-m", "autotune.trials._host"], env=env, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=err,
            )  # fmt: skip
        self.log = log
        self._buffer = b""
        self.ready: dict[str, Any] | None = None

    def wait_ready(self) -> dict[str, Any]:
        if self.ready is None:
            self.ready = self.recv(_READY_TIMEOUT_S)
            if self.ready is None:
                raise HostDied(f"the trial host did not start up in {_READY_TIMEOUT_S:g} s")
        return self.ready

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError) as exc:
            raise HostDied("the trial host is gone") from exc

    def recv(self, timeout: float) -> dict[str, Any] | None:
        """The next message, or None when ``timeout`` passes first."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                raise HostDied(f"the trial host exited (see {self.log})")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return dict(json.loads(line))

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        _process.wait(self.proc, 5)  # the end of its input ends it; stop kills what is left
        _process.stop(self.proc)


class PreloadedHostRunner:
    """Runs each trial as a fork of a preloaded host process (the default runner).

    Use it as a context manager, or call :meth:`close`, so the host goes when the study does.
    """

    def __init__(
        self,
        python: str = sys.executable,
        log_dir: str | None = None,
        cores: list[int] | None = None,
    ) -> None:
        self.python = python
        self.log_dir = log_dir
        self.cores = cores
        self._host: _Host | None = None
        self._host_key: tuple[str | None, str] | None = None
        self._preload = True  # the host imports the model file's packages (until that fails)
        self._cold: _runner.SubprocessRunner | None = None  # when forks cannot use CUDA

    def __enter__(self) -> PreloadedHostRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._host is not None:
            self._host.close()
            self._host = None

    def run(self, spec: TrialSpec) -> TrialResult:
        if self._cold is not None:
            return self._cold.run(spec)
        started = time.monotonic()
        with _scratch.scratch_dir("trial-") as folder:
            (folder / "spec.json").write_text(json.dumps(spec.to_dict()))
            try:
                rc, timed_out = self._run_in_host(spec, folder)
                result = _runner.outcome(folder, rc, timed_out, spec.time_limit_s)
            except _ForkUnsafe:
                self.close()
                self._cold = _runner.SubprocessRunner(self.python, self.cores)
                return self._cold.run(spec)
            except HostDied as exc:
                self.close()
                result = TrialResult.failed("crash", str(exc), error_tail=_runner.tail(folder))
        result.wall_time_s = time.monotonic() - started
        return result

    def _run_in_host(self, spec: TrialSpec, folder: Path) -> tuple[int | None, bool]:
        host = self._ensure_host(spec)
        host.send({
            "spec": str(folder / "spec.json"), "result": str(folder / "result.json"),
            "log": str(folder / "log.txt"), "env": _runner.trial_env(spec),
        })  # fmt: skip
        started = host.recv(_REPLY_TIMEOUT_S)
        if started is None:
            raise HostDied("the trial host did not start the trial")
        pid = int(started["started"])
        _process.track(pid)
        try:
            exited = host.recv(spec.time_limit_s)
            if exited is None:
                _process.kill_group(pid)
                host.recv(_REPLY_TIMEOUT_S)
                return None, True
            return int(exited["returncode"]), False
        finally:
            _process.kill_group(pid)
            _process.untrack(pid)

    def _ensure_host(self, spec: TrialSpec) -> _Host:
        key = (spec.cache_dir, spec.device.split(":")[0])
        if self._host is not None and (self._host_key != key or self._shadows(spec)):
            self.close()
        if self._host is None:
            self._host, self._host_key = self._start_host(spec), key
        ready = self._host.wait_ready()
        if ready.get("preload_unsafe"):  # the model's imports started a thread or CUDA
            self.close()
            self._preload = False
            self._host, self._host_key = self._start_host(spec), key
            ready = self._host.wait_ready()
        if not ready.get("fork_safe", True):
            raise _ForkUnsafe
        return self._host

    def _shadows(self, spec: TrialSpec) -> bool:
        """Whether the host imported a package (for the model it started with) that ``spec``'s
        model would import from its own folder instead: a fork would hand it the wrong one."""
        assert self._host is not None
        imported = (self._host.ready or {}).get("preloaded", [])
        return any(found_beside(spec.model_path, module) for module in imported)

    def _start_host(self, spec: TrialSpec) -> _Host:
        env = {**_runner.child_env(self.cores), **_runner.trial_env(spec)}
        env["AUTOTUNE_HOST_DEVICE"] = spec.device.split(":")[0]
        if self._preload:
            env[_host.MODEL_ENV] = spec.model_path
        folder = Path(self.log_dir or spec.cache_dir or _scratch.run_root())
        folder.mkdir(parents=True, exist_ok=True)
        log = folder / f"{HOST_LOG_PREFIX}{os.getpid()}.log"
        return _Host(self.python, env, log)


class _ForkUnsafe(Exception):
    """The host's forked probe could not use CUDA: trials run as fresh processes instead."""
