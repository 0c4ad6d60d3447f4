"""The space's presets among a study's records: which trials measured them, and the best."""

from __future__ import annotations

import functools
import json

from autotune.records import TrialRecord
from autotune.scoring import Objective
from autotune.settings import StudySettings


def preset_hashes(settings: StudySettings) -> dict[str, str]:
    """The config hash of each preset of the study's space, to its name (none when the stored
    space does not load with this torch). Finalize asks twice (finalists, then the decision):
    the space is validated once."""
    space = json.dumps(settings.space, sort_keys=True)
    return dict(_preset_hashes(space, settings.device, settings.workload))


@functools.lru_cache(maxsize=8)
def _preset_hashes(space_json: str, device: str, workload: str) -> tuple[tuple[str, str], ...]:
    from autotune.space import SpaceError, space_from_dict

    try:
        space = space_from_dict(json.loads(space_json), device, workload=workload)
    except (SpaceError, RuntimeError):  # e.g. a CUDA study's space read where torch lacks CUDA
        return ()
    return tuple((space.preset_config(p).config_hash(), p.name) for p in space.presets)


def measured_presets(records: list[TrialRecord], settings: StudySettings) -> list[TrialRecord]:
    """The study's measured presets (not duplicates), best-scoring first."""
    hashes = preset_hashes(settings)
    measured = [
        r for r in records
        if r.config_hash in hashes and r.status == "ok" and r.baseline is None
        and r.duplicate_of is None and r.equivalent_of is None
    ]  # fmt: skip
    objective = Objective.of(settings)
    return sorted(measured, key=lambda r: objective.score(r) or 0.0, reverse=True)
