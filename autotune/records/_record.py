"""TrialRecord: one trial of a study, as autotune keeps it."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from autotune.trials import FAILURE_KINDS, TrialFigures

STATUSES = ("ok", "failed")
BASELINES = ("eager", "default")
# TrialRecord.environment key -> column of autotune_trials.
ENV_KEYS = {
    "host": "host",
    "python": "python_version",
    "torch": "torch_version",
    "triton": "triton_version",
    "cuda": "cuda_version",
    "driver": "driver_version",
    "device_name": "device_name",
    "cpu_model": "cpu_model",
}


@dataclasses.dataclass
class TrialRecord(TrialFigures):
    """One trial of a study as stored in ``autotune_trials``: its :class:`TrialFigures` (for
    a config measured in several processes, pooled), and what the study adds.

    ``environment`` fills ``environment_json`` and the environment columns (its keys ``host``,
    ``python``, ``torch``, ``triton``, ``cuda``, ``driver``, ``device_name``, ``cpu_model``);
    ``result`` is the trial child's full JSON result. ``created_at`` is set when written.
    """

    trial_number: int
    config: dict[str, Any]
    config_hash: str
    brief: str
    status: str
    optuna_trial_id: int | None = None
    baseline: str | None = None
    speedup_vs_default: float | None = None
    duplicate_of: int | None = None
    result: dict[str, Any] = dataclasses.field(default_factory=dict)
    created_at: datetime | None = None

    @property
    def relaxed_numerics(self) -> bool:
        """Whether the trial was held to the looser gate of --allow-numerics-changes."""
        return bool((self.result.get("accuracy") or {}).get("relaxed"))

    @property
    def equivalent_of(self) -> int | None:
        """The earlier trial whose generated code this one's matched exactly, so that its
        measurement was reused instead of timing the same code again; None when timed."""
        value = self.result.get("equivalent_of")
        return None if value is None else int(value)

    @property
    def per_shape(self) -> list[dict[str, Any]]:
        """Over a shape distribution, each input's figures (``inputs``, ``latency_median_s``,
        ``eager_latency_median_s``, ``speedup_vs_eager``); empty otherwise."""
        return list(self.result.get("per_shape") or [])

    @property
    def traffic(self) -> dict[str, Any] | None:
        """Over a traffic mix (``get_traffic``), its weighted figures: ``mean_s``, ``p50_s``,
        ``p95_s``, ``p99_s``, their ``eager_`` twins, ``requests`` and ``startup_s``; None
        otherwise."""
        value = self.result.get("traffic")
        return dict(value) if isinstance(value, dict) else None

    @property
    def pruned(self) -> bool:
        """Whether timing stopped early: the trial was clearly slower than the best so far."""
        return bool(self.result.get("pruned"))

    @property
    def batch_size(self) -> int | None:
        """The batch size the trial's inputs were built with (``--batch-sizes``), if any."""
        value = self.result.get("batch_size")
        return None if value is None else int(value)

    def samples_per_s(self, speedup: float | None = None) -> float | None:
        """Samples per second (calls per second without a batch size), from the trial's own
        eager latency and ``speedup`` over it (default: its median speedup)."""
        return self._per_s(self.batch_size or 1, speedup)

    @property
    def units(self) -> str | None:
        """What the model file counts one call's work in (``tokens``, ``samples``), when its
        ``units(inputs)`` says."""
        units = self.result.get("units")
        return str(units["name"]) if isinstance(units, dict) and units.get("name") else None

    def units_per_s(self, speedup: float | None = None) -> float | None:
        """The model file's units (:attr:`units`) processed per second, from the trial's own
        eager latency and ``speedup`` over it (default: its median speedup); None when the
        file counts none."""
        units = self.result.get("units")
        if not isinstance(units, dict) or self.units is None:
            return None
        return self._per_s(float(units["per_sweep"]), speedup)

    def _per_s(self, count: float, speedup: float | None) -> float | None:
        """``count`` per second at ``speedup`` over the trial's own eager latency (default:
        its median speedup)."""
        speedup = self.speedup_vs_eager if speedup is None else speedup
        if not speedup or not self.eager_latency_median_s:
            return None
        return count * speedup / self.eager_latency_median_s

    def __post_init__(self) -> None:
        _check_choice("status", self.status, STATUSES)
        if self.baseline is not None:
            _check_choice("baseline", self.baseline, BASELINES)
        if self.failure_kind is not None:
            _check_choice("failure_kind", self.failure_kind, FAILURE_KINDS)
        if len(self.config_hash) > 32:
            raise ValueError(
                f"`len(config_hash) <= 32` must hold, but got {self.config_hash!r} "
                f"({len(self.config_hash)} characters); store a 32-character hex digest."
            )


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"`{name}` must be one of {choices}, but got {value!r}.")
