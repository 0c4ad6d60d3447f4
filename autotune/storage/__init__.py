"""A study as stored: Optuna's storage opened with autotune's heartbeat and retries, the names of
the attributes autotune writes on Optuna's trials, the study's settings row (each setting
checked when read back as :class:`~autotune.settings.StudySettings`), a trial's record, and
the recovery of trials whose process died, and what the records say of screened and inert
trials. The search (:mod:`autotune.search`) and the decision (:mod:`autotune.decide`) both
read and write the study through these."""

from autotune.storage._attrs import (
    BASELINE_ATTR,
    BATCH_ATTR,
    COMBINATION_ATTR,
    CONSTRAINT_ATTR,
    KERNEL_CACHE_ATTR,
    KEY_ATTR,
    LEFT_ATTR,
    METRIC_PREFIX,
    PRESET_ATTR,
    PRESETS_TOLD_ATTR,
    PRIOR_ATTR,
    PRIOR_OF_ATTR,
    SCOPE_ATTR,
    START_FROM_ATTR,
    STARTED_FROM_ATTR,
    WORKER_ATTR,
)
from autotune.storage._inert import describe as describe_inert
from autotune.storage._inert import inert_in, inert_knobs, measured_leaving, sampled
from autotune.storage._optuna import (
    beating,
    cache_dir_source,
    default_cache_dir,
    grace_s,
    heartbeat_s,
    open_optuna_storage,
    retrying,
    transient,
    user_cache,
)
from autotune.storage._records import (
    EAGER_HASH,
    MEASUREMENTS,
    Ran,
    candidates,
    eager_baseline,
    eager_baselines,
    measurements,
    pooled_measurements,
    screened,
    to_record,
    trial_key,
)
from autotune.storage._settings import settings_from_dict, settings_from_row
from autotune.storage._stale import (
    TELL_REFUSED,
    finished_state,
    metric_attrs,
    recover_stale,
    tell_record,
)

__all__ = [
    "BASELINE_ATTR", "BATCH_ATTR", "COMBINATION_ATTR",
    "CONSTRAINT_ATTR", "EAGER_HASH", "KERNEL_CACHE_ATTR", "KEY_ATTR", "LEFT_ATTR", "MEASUREMENTS",
    "METRIC_PREFIX", "PRESET_ATTR", "PRESETS_TOLD_ATTR", "PRIOR_OF_ATTR",
    "PRIOR_ATTR", "SCOPE_ATTR", "STARTED_FROM_ATTR", "START_FROM_ATTR", "TELL_REFUSED",
    "WORKER_ATTR", "Ran", "cache_dir_source", "describe_inert", "inert_in", "inert_knobs",
    "measured_leaving", "sampled", "screened", "candidates", "default_cache_dir",
    "eager_baseline", "eager_baselines", "finished_state", "grace_s", "heartbeat_s", "beating",
    "measurements", "metric_attrs", "open_optuna_storage",
    "pooled_measurements", "recover_stale",
    "retrying", "settings_from_dict", "settings_from_row", "tell_record", "to_record", "transient",
    "trial_key", "user_cache",
]  # fmt: skip
