"""The readers under fuzzing, bounded for CI: every input (mutated valid documents, hostile
text, random bytes) ends in the reader's documented error or in success.

The same tests drive the long coverage-guided run (``benchmarks/fuzz_readers.py``, atheris
through ``test.hypothesis.fuzz_one_input``); its figures are in
``benchmarks/results/fuzz_readers.md``.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from fuzz_tests import properties, strategies

# Sized for about 10-15 s per reader on a 2-core machine (45 s in all); the long run goes
# much further.
BOUNDED = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@settings(BOUNDED, max_examples=2000)
@given(strategies.best_config_cases())
def test_best_config_reader(case):
    properties.check_best_config(case)


@settings(BOUNDED, max_examples=1200)
@given(strategies.space_cases())
def test_space_reader(case):
    properties.check_space(case)


@settings(BOUNDED, max_examples=3000)
@given(strategies.study_cases())
def test_study_reader(case):
    properties.check_study(case)


@settings(BOUNDED, max_examples=3000)
@given(strategies.settings_cases())
def test_settings_row_reader(case):
    properties.check_settings(case)
