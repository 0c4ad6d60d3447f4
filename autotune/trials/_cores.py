"""The CPU cores this process may use, and how they are shared: --jobs and a node's GPU
workers both split them with :func:`split_cores`, so that no two share a core."""

from __future__ import annotations

import os
from collections.abc import Sequence


def usable_cores() -> list[int]:
    """The cores this process may run on (its affinity, which a container or a scheduler may
    have narrowed), in order."""
    return sorted(os.sched_getaffinity(0))


def split_cores(cores: Sequence[int], parts: int) -> list[list[int]]:
    """``cores`` as ``parts`` disjoint runs of equal length, in order; the remainder stays
    unused, and every run is empty when there are fewer cores than parts.

    Example:
        >>> split_cores([0, 1, 2, 3, 4], 2)
        [[0, 1], [2, 3]]
    """
    if parts < 1:
        raise ValueError(f"`parts` must be at least 1, but got {parts}.")
    share = len(cores) // parts
    return [list(cores[i * share : (i + 1) * share]) for i in range(parts)]
