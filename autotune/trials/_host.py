"""The warm trial host: imports torch, Dynamo and Inductor once, then forks one child per trial.

Run as ``python -m autotune.trials._host`` by :class:`WarmHostRunner`. It talks JSON lines:
requests on stdin (``{"spec", "result", "log", "env"}``), replies on stdout (``{"ready"}``,
``{"started": pid}``, ``{"exited": pid, "returncode": rc}``). Each child leads a new session,
writes its output to the trial's log and its result to the trial's file, exactly as a cold
trial process does. The host never touches CUDA (CUDA does not survive a fork), runs one trial
at a time, and is single-threaded when it forks.
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


def main() -> int:
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything the host or torch prints goes to the host log, not the protocol
    _die_with_parent()
    started = time.monotonic()
    from autotune.trials._runner import pin_threads

    pin_threads()  # forked trials inherit the host's cores and thread counts
    _warm_up()
    _send(reply, {"ready": True, "warm_s": time.monotonic() - started, "pid": os.getpid()})
    for line in sys.stdin:
        request = json.loads(line)
        pid = _fork_trial(request, reply)
        _send(reply, {"started": pid})
        _, status = os.waitpid(pid, 0)
        _send(reply, {"exited": pid, "returncode": os.waitstatus_to_exitcode(status)})
    return 0


def _warm_up() -> None:
    """Pays the one-time costs every trial would pay: imports, the C++ toolchain probes and
    headers (into the study's cache dir), and Dynamo/Inductor's lazy imports."""
    import torch
    import torch._dynamo
    import torch._inductor.config as inductor_config

    from autotune import measure  # noqa: F401
    from autotune.trials import _measure_trial  # noqa: F401

    with inductor_config.patch(compile_threads=1):  # no compile-worker pool in the host
        fn = torch.compile(lambda x: (x.sin() + 1).sum(), backend="inductor")
        fn(torch.randn(8))
    torch._dynamo.reset()


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
        os.environ.update(request["env"])
        from autotune.trials import _guard
        from autotune.trials._child import execute

        _guard.kill_group_with_parent()
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

    from autotune.trials import _guard

    _guard.on_parent_death(stop, watch=False)


def _send(reply: TextIO, message: dict[str, Any]) -> None:
    reply.write(json.dumps(message) + "\n")
    reply.flush()


if __name__ == "__main__":
    sys.exit(main())
