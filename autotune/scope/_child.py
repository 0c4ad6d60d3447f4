"""The analysis runs in a process of its own, like a trial: the parent never builds the model.

Run as ``python -m autotune.scope._child SPEC.json RESULT.json``, started and stopped as every
child is (:mod:`autotune._process`): its process group is SIGKILLed when it ends or outlives its
budget, and it takes that group down itself when its parent dies.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback
from pathlib import Path
from typing import Any

from autotune import _process, _scratch, trials
from autotune.errors import UsageError
from autotune.scope._tree import ModelTree

_TAIL_CHARS = 2000


class ScopeAnalysisError(UsageError):
    """The model's module tree could not be analyzed (its file or its eager run failed).

    Attributes:
        tail: The end of the analysis process's output (its traceback), if any.
    """

    def __init__(self, message: str, tail: str | None = None) -> None:
        super().__init__(message)
        self.tail = tail


def analyze_model_file(
    model_path: str,
    device: str,
    *,
    seed: int = 0,
    time_limit_s: float = 600.0,
    traffic: list[dict[str, Any]] | None = None,
) -> ModelTree:
    """Builds the model of a model file in a child process and analyzes it there.

    Raises:
        ScopeAnalysisError: The model file, the model's eager run or the process failed, or
            it outlived ``time_limit_s``; the message carries the reason.
    """
    spec = {"model_path": model_path, "device": device, "seed": seed, "traffic": traffic}
    with _scratch.scratch_dir("scope-") as folder:
        (folder / "spec.json").write_text(json.dumps(spec))
        rc = _spawn(folder, time_limit_s)
        result = _read(folder / "result.json")
        tail = _tail(folder / "log.txt")
    if result is not None and "tree" in result:
        return ModelTree.from_dict(result["tree"])
    why = result["error"] if result is not None else _death(rc, time_limit_s)
    raise ScopeAnalysisError(
        f"Cannot analyze the module tree of {model_path} on {device}: {why}. The scope search "
        "needs the model to build and run in eager mode; fix the model file.",
        tail,
    )


def _spawn(folder: Path, time_limit_s: float) -> int | None:
    argv = [sys.executable, "-m", "autotune.scope._child",
            str(folder / "spec.json"), str(folder / "result.json")]  # fmt: skip
    with open(folder / "log.txt", "wb") as log:
        return _process.run(argv, env=trials.child_env(), output=log, timeout_s=time_limit_s)


def _read(path: Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None


def _death(rc: int | None, time_limit_s: float) -> str:
    if rc is None:
        return f"still running after the budget of {time_limit_s:g} s; killed"
    if rc < 0:
        return f"the analysis process died of {signal.Signals(-rc).name}"
    return f"the analysis process exited with code {rc} without a result"


def _tail(path: Path) -> str | None:
    try:
        text = path.read_bytes()[-_TAIL_CHARS:].decode("utf-8", errors="replace").strip()
    except OSError:
        return None
    return text or None


def main(argv: list[str]) -> int:
    _process.kill_group_with_parent()
    spec = json.loads(Path(argv[1]).read_text())
    try:
        payload: dict[str, Any] = {"tree": _analyze(**spec).to_dict()}
    except Exception as exc:
        traceback.print_exc()
        lines = str(exc).strip().splitlines()
        payload = {"error": f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")}
    out = Path(argv[2])
    out.with_suffix(".tmp").write_text(json.dumps(payload))
    os.replace(out.with_suffix(".tmp"), out)
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown, as a trial does: nothing it started may keep it alive.
    os._exit(0)


def _analyze(
    model_path: str, device: str, seed: int, traffic: list[dict[str, Any]] | None
) -> ModelTree:
    import torch

    from autotune.scope._analysis import analyze_module
    from autotune.workload import build_calls, build_model, load_model_file

    module = load_model_file(model_path)
    torch.manual_seed(seed)
    model = build_model(module, device).eval()
    torch.manual_seed(seed)
    calls = build_calls(module, device, None, traffic)
    with torch.no_grad():
        return analyze_module(model, lambda: [model(*c.args, **c.kwargs) for c in calls], device)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
