"""How two tensors differ, element by element, in chunks that bound the memory a comparison
takes: the counts and worst errors behind :func:`autotune.measure.accuracy.compare_outputs`."""

from __future__ import annotations

import dataclasses
import math

import torch

# Elements compared at once: bounds the float64 copies of a large output to ~100 MB.
CHUNK_ELEMENTS = 1 << 22


@dataclasses.dataclass
class Tally:
    bad: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    first_bad: int = -1
    dot: float = 0.0  # sums of expected * actual, expected ** 2 and actual ** 2: the cosine
    expected_sq: float = 0.0
    actual_sq: float = 0.0

    def cosine(self) -> float:
        if self.expected_sq == 0.0 and self.actual_sq == 0.0:
            return 1.0
        if self.expected_sq == 0.0 or self.actual_sq == 0.0:
            return 0.0
        return self.dot / math.sqrt(self.expected_sq * self.actual_sq)


def tensor_mismatch(
    expected: torch.Tensor, actual: torch.Tensor, float_dtypes_may_differ: bool = False
) -> str:
    both_float = expected.dtype.is_floating_point and actual.dtype.is_floating_point
    for what in ("shape", "dtype", "device"):
        if what == "dtype" and both_float and float_dtypes_may_differ:
            continue
        want, got = getattr(expected, what), getattr(actual, what)
        if want != got:
            return f"{what} differs: expected {_show(want)}, got {_show(got)}"
    return ""


def count_differences(
    expected: torch.Tensor, actual: torch.Tensor, rtol: float, atol: float
) -> Tally:
    """Compare same-shape tensors elementwise, chunk by chunk on CPU."""
    flat_expected = expected.detach().reshape(-1)
    flat_actual = actual.detach().reshape(-1)
    tally = Tally()
    for start in range(0, flat_expected.numel(), CHUNK_ELEMENTS):
        stop = start + CHUNK_ELEMENTS
        chunk = (flat_expected[start:stop].cpu(), flat_actual[start:stop].cpu())
        _chunk(tally, *chunk, rtol=rtol, atol=atol, offset=start)
    return tally


def _chunk(
    tally: Tally,
    raw_expected: torch.Tensor,
    raw_actual: torch.Tensor,
    *,
    rtol: float,
    atol: float,
    offset: int,
) -> None:
    wide = torch.complex128 if raw_expected.dtype.is_complex else torch.float64
    expected, actual = raw_expected.to(wide), raw_actual.to(wide)
    # Compared in the original dtype (int64 beyond 2**53 is not exact in float64), unless the
    # dtypes differ (a float tensor of autocast against eager's float32).
    raw_same = raw_expected == raw_actual if raw_expected.dtype == raw_actual.dtype else None
    same = (expected == actual if raw_same is None else raw_same) | (
        expected.isnan() & actual.isnan()
    )
    diff = torch.where(same, 0.0, (actual - expected).abs())
    diff = torch.where(diff.isnan(), math.inf, diff)
    close = same
    if raw_expected.dtype.is_floating_point or raw_expected.dtype.is_complex:
        # Finite expected only: an infinite tolerance would pass any actual value.
        # Finite actual too: with an infinite tolerance (an accuracy contract judging by its
        # metrics alone) a NaN must still fail.
        within = diff <= atol + rtol * expected.abs()
        close = same | (expected.isfinite() & actual.isfinite() & within)
    relative = torch.where(diff == 0, 0.0, diff / expected.abs())
    relative = torch.where(relative.isnan(), math.inf, relative)
    bad = ~close
    tally.bad += int(bad.sum())
    tally.max_abs = max(tally.max_abs, float(diff.max()))
    tally.max_rel = max(tally.max_rel, float(relative.max()))
    if tally.first_bad < 0 and bool(bad.any()):
        tally.first_bad = offset + int(bad.to(torch.uint8).argmax())
    if not raw_expected.dtype.is_complex:
        tally.dot += float((expected * actual).sum())
        tally.expected_sq += float((expected * expected).sum())
        tally.actual_sq += float((actual * actual).sum())


def tensor_failure(
    expected: torch.Tensor, actual: torch.Tensor, tally: Tally, rtol: float, atol: float
) -> str:
    dtype = str(expected.dtype).removeprefix("torch.")
    if rtol == 0 and atol == 0:
        rule = f"{dtype} must match exactly"
    elif math.isinf(atol) or math.isinf(rtol):
        rule = f"{dtype} non-finite where eager is not (or a NaN/infinity that differs)"
    else:
        rule = f"{dtype} outside tolerance (rtol={rtol:.3g}, atol={atol:.3g})"
    flat = tally.first_bad
    index = [int(i) for i in torch.unravel_index(torch.tensor(flat), expected.shape)]
    want, got = expected.reshape(-1)[flat].item(), actual.reshape(-1)[flat].item()
    return (
        f"{rule} at {tally.bad} of {expected.numel()} elements: max abs diff "
        f"{tally.max_abs:.3g}, max rel diff {tally.max_rel:.3g}; first at {index}: "
        f"expected {want!r}, got {got!r}"
    )


def _show(value: object) -> str:
    return str(tuple(value)) if isinstance(value, torch.Size) else str(value)
