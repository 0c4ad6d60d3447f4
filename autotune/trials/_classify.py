"""Turns an exception raised while compiling or running a trial into a failure kind."""

from __future__ import annotations

import traceback

import torch

from autotune.runtime.config import CompileConfig


class TrialFailure(Exception):
    """A classified failure: ends the trial with this kind."""

    def __init__(self, kind: str, error: str) -> None:
        super().__init__(error)
        self.kind = kind


_OOM_MARKERS = ("out of memory", "can't allocate memory", "cannot allocate memory")


def classify(exc: BaseException, config: CompileConfig | None) -> TrialFailure:
    traceback.print_exception(exc)  # lands in the trial log: the error tail of the record
    chain = list(_chain(exc))
    if any(_is_oom(e) for e in chain):
        return TrialFailure("oom", _summary(exc))
    if isinstance(exc, TimeoutError):
        return TrialFailure("timeout", _summary(exc))
    if config is not None and config.fullgraph and any(_is_break(e) for e in chain):
        return TrialFailure("graph_break", "fullgraph=True, but " + _summary(exc))
    return TrialFailure("compile_error", _summary(exc))


def _chain(exc: BaseException | None) -> list[BaseException]:
    seen: list[BaseException] = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def _is_oom(exc: BaseException) -> bool:
    if isinstance(exc, (torch.OutOfMemoryError, MemoryError)):
        return True
    return isinstance(exc, RuntimeError) and any(m in str(exc) for m in _OOM_MARKERS)


def _is_break(exc: BaseException) -> bool:
    import torch._dynamo.exc as dynamo_exc

    return isinstance(exc, (dynamo_exc.Unsupported, dynamo_exc.UserError))


def _summary(exc: BaseException) -> str:
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    text = " ".join(lines[:3]) if lines else ""
    text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return text if len(text) <= 600 else text[:597] + "..."
