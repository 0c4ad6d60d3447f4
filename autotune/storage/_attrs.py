"""The names autotune gives Optuna's trial and study attributes: one place, since the search
writes them and the decision, the reports and the workers read them back."""

from __future__ import annotations

# On a trial
BASELINE_ATTR = "autotune.baseline"  # "eager" or "default": a baseline, not a sampled config
BATCH_ATTR = "autotune.batch_size"  # the batch size a throughput trial measures
KEY_ATTR = "autotune.key"  # what the trial measures: config hash (and batch size)
SCOPE_ATTR = "autotune.scope"  # the scope candidate a trial compiles
LEFT_ATTR = "autotune.left_to_torch"  # knobs not drawn: shown to change nothing on this model
PRESET_ATTR = "autotune.preset"  # the space preset a trial measures
COMBINATION_ATTR = "autotune.combination"  # [preset names]: presets that won, measured together
WORKER_ATTR = "autotune.worker"  # the autotune_workers id of the process that runs a trial
METRIC_PREFIX = "autotune."  # the user attributes of metric_attrs
CONSTRAINT_ATTR = "autotune.constraint"  # [violation]: > 0 means infeasible
START_FROM_ATTR = "autotune.start_from"  # "STUDY#N": a queued config of an earlier study
PRIOR_ATTR = "autotune.prior"  # a result told to the sampler as a prior, not a trial measured
PRIOR_OF_ATTR = "autotune.prior_of"  # the preset or combination trial a prior tells of

# On the study
STARTED_FROM_ATTR = "autotune.started_from"  # queued once
PRESETS_TOLD_ATTR = "autotune.presets_told"  # presets and combinations told to the sampler
KERNEL_CACHE_ATTR = "autotune.kernel_cache."  # + a cache folder's id: {"host", "path"} it made
