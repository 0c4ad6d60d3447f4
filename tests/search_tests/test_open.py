"""A worker that joins a study not created yet waits for it, says so once, and gives up at its
deadline (search/_open.join_search)."""

from __future__ import annotations

import dataclasses

import pytest

from autotune._deadline import Deadline
from autotune.search import SearchRequest, StudyNotFound, join_search


@dataclasses.dataclass(frozen=True)
class _SecondLook(Deadline):
    """A deadline that has passed from its second look on, with no time to sleep before it:
    the wait below is decided by looks, not by the machine's speed."""

    looks: list[bool] = dataclasses.field(default_factory=list)

    def passed(self) -> bool:
        self.looks.append(True)
        return len(self.looks) > 1

    def left(self) -> float:
        return 0.0


def test_a_worker_waits_for_a_study_not_created_yet_says_so_once_and_stops_at_its_deadline(
    tmp_path,
):
    deadline = _SecondLook()
    request = SearchRequest("w", f"sqlite:///{tmp_path}/w.db", None, deadline=deadline)
    notes: list[str] = []

    with pytest.raises(StudyNotFound):
        join_search(request, jobs=1, trial_host="preloaded", on_note=notes.append)

    assert notes == ["waiting for study 'w' to be created"]
    assert len(deadline.looks) == 2  # looked again after waiting, then gave up
