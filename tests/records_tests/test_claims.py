"""Claims and workers in the records, on every backend: one owner at a time, taken over only
from an owner whose heartbeat went stale."""

from __future__ import annotations

import time

from autotune.records import RecordStore


def test_one_owner_claims_the_others_are_refused(store: RecordStore) -> None:
    assert store.claim("s", "scope_plan", "a", stale_after_s=60)
    assert not store.claim("s", "scope_plan", "b", stale_after_s=60)
    held = store.claim_of("s", "scope_plan")
    assert held is not None and held.owner == "a" and not held.done
    assert store.claim("s", "finalists", "b", stale_after_s=60)  # another claim, another name


def test_a_stale_claim_is_taken_over_by_one_process(store: RecordStore) -> None:
    assert store.claim("s", "scope_plan", "dead", stale_after_s=60)
    time.sleep(0.05)
    assert store.claim("s", "scope_plan", "alive", stale_after_s=0.01)
    assert not store.claim("s", "scope_plan", "late", stale_after_s=60)
    assert not store.beat_claim("s", "scope_plan", "dead")  # it lost the claim
    assert store.beat_claim("s", "scope_plan", "alive")
    assert store.claim_of("s", "scope_plan").owner == "alive"  # type: ignore[union-attr]


def test_a_done_claim_is_never_taken_over_and_a_released_one_is_free(store: RecordStore) -> None:
    assert store.claim("s", "scope_plan", "a", stale_after_s=60)
    store.finish_claim("s", "scope_plan", "a")
    time.sleep(0.05)
    assert not store.claim("s", "scope_plan", "b", stale_after_s=0.01)
    assert store.claim_of("s", "scope_plan").done  # type: ignore[union-attr]
    assert store.claim("s", "finalists", "a", stale_after_s=60)
    store.release_claim("s", "finalists", "a")
    assert store.claim_of("s", "finalists") is None
    assert store.claim("s", "finalists", "b", stale_after_s=60)


def test_workers_are_recorded_in_the_order_they_joined(store: RecordStore) -> None:
    first = store.start_worker("s", "node-1", 11, "0", "cuda")
    second = store.start_worker("s", "node-2", 22, None, "cpu")
    store.beat_worker(first)
    store.stop_worker(second, "budget met")
    workers = store.workers("s")
    assert [w.id for w in workers] == [first, second]
    assert (workers[0].host, workers[0].gpu, workers[0].stopped_at) == ("node-1", "0", None)
    assert workers[1].ended == "budget met" and workers[1].stopped_at is not None


def test_a_study_made_anew_under_its_name_starts_empty(store: RecordStore, new_record) -> None:
    """The rows belong to Optuna's study id: when the Optuna study of a name was deleted and
    created again, the old trials, finalists, claims and workers go with the old study."""
    store.add_trial("s", new_record(0))
    store.claim("s", "scope_plan", "a", stale_after_s=60)
    store.start_worker("s", "h", 1, None, "cpu")
    settings, created = store.open_study("s", optuna_study_id=1, settings={"seed": 9})
    assert (settings, created) == ({"seed": 0}, False)  # the same Optuna study: kept
    settings, created = store.open_study("s", optuna_study_id=2, settings={"seed": 9})
    assert (settings, created) == ({"seed": 9}, True)
    assert store.trials("s") == [] and store.workers("s") == []
    assert store.claim_of("s", "scope_plan") is None
