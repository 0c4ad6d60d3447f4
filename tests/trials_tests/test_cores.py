"""The one way cores are shared (autotune/trials/_cores.py): --jobs and a node's GPU workers
split them into disjoint equal runs."""

from __future__ import annotations

import os

import pytest

from autotune.trials import split_cores, usable_cores


@pytest.mark.parametrize(
    ("cores", "parts", "runs"),
    [
        (range(16), 4, [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]]),
        (range(5), 2, [[0, 1], [2, 3]]),  # the remainder stays unused
        (range(2), 3, [[], [], []]),  # fewer cores than parts: nothing to split
        ([3, 7, 9], 1, [[3, 7, 9]]),
    ],
)
def test_cores_split_into_disjoint_equal_runs_in_order(cores, parts, runs):
    assert split_cores(list(cores), parts) == runs


def test_a_split_needs_a_part():
    with pytest.raises(ValueError, match="at least 1"):
        split_cores([0, 1], 0)


def test_the_usable_cores_are_this_processs_affinity_in_order():
    assert usable_cores() == sorted(os.sched_getaffinity(0))
