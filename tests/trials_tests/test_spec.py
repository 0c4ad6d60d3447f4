"""A trial's spec built from its study's settings: every setting a trial runs with is the
study's, the rest is the trial's own."""

from __future__ import annotations

import dataclasses

from autotune.measure import MeasureSettings
from autotune.settings import StudySettings, TrialFields
from autotune.trials import TrialSpec

SETTINGS = StudySettings(
    model_path="/m.py", device="cuda", space={"name": "cuda"}, space_hash="a" * 16,
    torch_version="2.13.0", workload="generate", seed=7, traffic=None,
    accuracy="top1>=0.99", compile_budget=300.0, measure=MeasureSettings(target_seconds=1.0),
)  # fmt: skip


def test_the_spec_carries_every_setting_a_trial_runs_with_from_the_study():
    config = {"backend": "aot_eager"}
    spec = TrialSpec.from_settings(SETTINGS, config, cache_dir="/here", relaxed_numerics=True)
    for name in (f.name for f in dataclasses.fields(TrialFields)):
        expected = "/here" if name == "cache_dir" else getattr(SETTINGS, name)
        assert getattr(spec, name) == expected, name  # this machine's cache, the study's rest
    assert spec.config == config and spec.relaxed_numerics
    assert spec.time_limit_s == 300.0 and spec.measure == SETTINGS.measure
    assert spec.batch_size is None


def test_a_trial_may_have_its_own_timing_budget_and_batch_size():
    short = MeasureSettings(target_seconds=0.1)
    spec = TrialSpec.from_settings(
        SETTINGS, None, cache_dir=None, relaxed_numerics=False, batch_size=4, measure=short,
        time_limit_s=60.0,
    )  # fmt: skip
    assert (spec.time_limit_s, spec.measure, spec.batch_size) == (60.0, short, 4)
    assert spec.config is None and spec.cache_dir is None and spec.seed == 7
