"""A study's settings read back from a row: what an older autotune stored loads with defaults."""

from __future__ import annotations

from autotune.settings import StudySettings
from autotune.storage import settings_from_dict

STORED = StudySettings(
    model_path="/m.py", device="cpu", space={"name": "cpu"}, space_hash="a" * 16,
    torch_version="2.13.0", seed=7, trials=20,
)  # fmt: skip


def test_settings_stored_by_an_older_autotune_load_with_defaults():
    old = {k: v for k, v in STORED.to_dict().items() if k not in ("trials", "batch_sizes")}
    old["removed_setting"] = 1
    loaded = settings_from_dict(old)
    assert (loaded.trials, loaded.batch_sizes, loaded.seed) == (20, None, 7)
