"""The preloaded trial host: imports torch, Dynamo and Inductor once, then forks a child per trial.

Run as ``python -m autotune.trials._host`` by :class:`PreloadedHostRunner`. It talks JSON lines:
requests on stdin (``{"spec", "result", "log", "env"}``), replies on stdout (``{"ready"}``,
``{"started": pid}``, ``{"exited": pid, "returncode": rc}``). Each child leads a new session,
writes its output to the trial's log and its result to the trial's file, exactly as a cold
trial process does. The host runs one trial at a time, and is single-threaded when it forks.

CUDA does not survive a fork, and torch refuses CUDA in a child once the parent has only counted
the devices (``torch.cuda.is_available()``), which Dynamo and Inductor do on every compile, CPU
ones included. So for CUDA trials (``AUTOTUNE_HOST_DEVICE=cuda``) the host counts devices through
NVML (``PYTORCH_NVML_BASED_CUDA_CHECK``, which never initializes CUDA) and warms imports only, no
compile; then it proves the point: a forked probe must initialize CUDA. Its ``ready`` message
says ``fork_safe``, and a runner whose host is not fork-safe runs its trials cold.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, TextIO

_child_pid: int | None = None
# The model file whose installed imports the host imports once (unset: none).
MODEL_ENV = "AUTOTUNE_HOST_MODEL"


def main() -> int:
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything the host or torch prints goes to the host log, not the protocol
    _die_with_parent()
    started = time.monotonic()
    from autotune.trials._runner import pin_threads

    pin_threads()  # forked trials inherit the host's cores and thread counts
    cuda = os.environ.get("AUTOTUNE_HOST_DEVICE", "cpu").startswith("cuda")
    if cuda:
        os.environ[_NVML_CHECK] = "1"
    _warm_up(compile_once=not cuda)
    threads = _threads()
    preloaded = _warm_model(os.environ.get(MODEL_ENV))
    ready = {"ready": True, "warm_s": time.monotonic() - started, "pid": os.getpid()}
    if _threads() > threads or _cuda_started():
        # A model import started a Python thread or CUDA: this host must not fork. The runner
        # starts another without the model's imports.
        _send(reply, {**ready, "preloaded": preloaded, "preload_unsafe": True})
        return 0
    _send(
        reply,
        {**ready, "preloaded": preloaded, "fork_safe": _cuda_survives_fork() if cuda else True},
    )
    for line in sys.stdin:
        request = json.loads(line)
        pid = _fork_trial(request, reply)
        _send(reply, {"started": pid})
        _, status = os.waitpid(pid, 0)
        _send(reply, {"exited": pid, "returncode": os.waitstatus_to_exitcode(status)})
    return 0


_NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"
_NVML_CHECK_BEFORE = os.environ.get(_NVML_CHECK)


def _warm_up(compile_once: bool) -> None:
    """Pays the one-time costs every trial would pay: imports, and with ``compile_once`` the C++
    toolchain probes and headers (into the study's cache dir) and Dynamo/Inductor's lazy
    imports (a compile touches CUDA wherever a GPU is visible, so CUDA hosts skip it)."""
    import torch
    import torch._dynamo
    import torch._inductor.config as inductor_config

    from autotune.measure import accuracy, memory, timing  # noqa: F401
    from autotune.trials import _measure_trial  # noqa: F401

    if not compile_once:
        return
    with inductor_config.patch(compile_threads=1):  # no compile-worker pool in the host
        fn = torch.compile(lambda x: (x.sin() + 1).sum(), backend="inductor")
        fn(torch.randn(8))
    torch._dynamo.reset()


def _warm_model(path: str | None) -> list[str]:
    """The study's model file's installed imports (``transformers`` and its model classes),
    imported here once instead of in every forked trial (:mod:`autotune.workload._preload`)."""
    if not path:
        return []
    from autotune.workload import preload

    return preload(path)


def _threads() -> int:
    """This process's Python threads: a process that forks must have one. (Importing torch
    starts a native thread already, which holds no lock of Python's.)"""
    import threading

    return threading.active_count()


def _cuda_started() -> bool:
    import torch

    return bool(torch.cuda.is_initialized())


def _cuda_survives_fork() -> bool:
    """Whether a child forked from this host can initialize CUDA and run a kernel."""
    import torch

    if torch.cuda.is_initialized():
        return False
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            _restore_env()
            torch.ones(1, device="cuda").add_(1).item()
            code = 0
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _restore_env() -> None:
    """A forked child counts CUDA devices as any trial process does."""
    if _NVML_CHECK_BEFORE is None:
        os.environ.pop(_NVML_CHECK, None)
    else:
        os.environ[_NVML_CHECK] = _NVML_CHECK_BEFORE


def _fork_trial(request: dict[str, Any], reply: TextIO) -> int:
    global _child_pid
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _become_trial(request, reply)  # never returns
    _child_pid = pid
    return pid


def _become_trial(request: dict[str, Any], reply: TextIO) -> None:
    code = 1
    try:
        os.setsid()
        reply.close()
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        _restore_env()
        os.environ.update(request["env"])
        from autotune import _process
        from autotune.trials._child import execute

        _process.kill_group_with_parent()
        execute(Path(request["spec"]), Path(request["result"]))
        code = 0
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _die_with_parent() -> None:
    """If the runner dies, the running trial's group goes first, then the host."""

    def stop(*_: object) -> None:
        if _child_pid is not None:
            try:
                os.killpg(_child_pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        os._exit(1)

    from autotune import _process

    _process.on_parent_death(stop, watch=False)


def _send(reply: TextIO, message: dict[str, Any]) -> None:
    reply.write(json.dumps(message) + "\n")
    reply.flush()


if __name__ == "__main__":
    sys.exit(main())
