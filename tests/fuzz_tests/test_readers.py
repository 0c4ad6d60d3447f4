"""The readers under fuzzing, bounded for CI: every input (mutated valid documents, hostile
text, random bytes) ends in the reader's documented error or in success.

The same tests drive the long coverage-guided run (``benchmarks/fuzz_readers.py``, atheris
through ``test.hypothesis.fuzz_one_input``); its figures are in
``benchmarks/results/fuzz_readers.md``.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from fuzz_tests import properties, strategies

# Sized for a few seconds per reader on a 2-core machine (about 25 s in all on the 2-core
# EPYC); the long run goes much further, and the crashes it found are
# test_regressions.py's cases.
BOUNDED = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@settings(BOUNDED, max_examples=600)
@given(strategies.best_config_cases())
def test_best_config_reader(case):
    properties.check_best_config(case)


@settings(BOUNDED, max_examples=400)
@given(strategies.space_cases())
def test_space_reader(case):
    properties.check_space(case)


@settings(BOUNDED, max_examples=1000)
@given(strategies.study_cases())
def test_study_reader(case):
    properties.check_study(case)


@settings(BOUNDED, max_examples=1000)
@given(strategies.settings_cases())
def test_settings_row_reader(case):
    properties.check_settings(case)
