"""One trial measures a configuration that several draw: the claim on its key decides which,
whatever order the trials' numbers and their reads of the study fall in."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import optuna
import pytest

from autotune.records import RecordStore, TrialRecord
from autotune.search._config_claim import ConfigClaims
from autotune.search._events import Events
from autotune.trials import TrialResult

KEY = "0123456789abcdef"


class Session:
    """What ConfigClaims reads of a search's session: the records, the study, its running
    trials, and the database calls (here without retries)."""

    def __init__(self, records: RecordStore, study: optuna.Study) -> None:
        self.records, self.study, self.name = records, study, "s"

    def db(self, fn: Any, *args: Any) -> Any:
        return fn(*args)

    def running(self) -> list[optuna.trial.FrozenTrial]:
        states = (optuna.trial.TrialState.RUNNING,)
        return self.study.get_trials(deepcopy=False, states=states)

    def recover_stale(self) -> None:
        pass


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    url = f"sqlite:///{tmp_path / 'autotune.db'}"
    study = optuna.create_study(study_name="s", storage=url)
    with RecordStore(url) as records:
        records.save_study("s", optuna_study_id=study._study_id, settings={})
        yield Session(records, study)


def claims(session: Session, stopping: threading.Event | None = None) -> ConfigClaims:
    return ConfigClaims(session, Events(), stopping or threading.Event())  # type: ignore[arg-type]


def record(trial: optuna.Trial, speedup: float) -> TrialRecord:
    result = TrialResult(status="ok", latency_median_s=0.001, speedup_vs_eager=speedup)
    return TrialRecord(
        trial_number=trial.number, config={"mode": "default"}, config_hash=KEY,
        brief="mode=default", status="ok", result=result.to_dict(), environment={},
    )  # fmt: skip


def test_the_lower_numbered_trial_waits_when_a_later_one_claimed_first(session):
    """Trial 1 read the study before trial 0 set its key: the rule "the earliest trial
    measures" let both measure. With the claim, trial 0 (claiming second) waits for trial 1's
    record and reuses it."""
    first, second = session.study.ask(), session.study.ask()
    assert claims(session).reuse_or_claim(second, KEY) is None  # claimed: trial 1 measures
    outcome: list[Any] = []
    waiter = threading.Thread(target=lambda: outcome.append(
        claims(session).reuse_or_claim(first, KEY)))  # fmt: skip
    waiter.start()
    waiter.join(1.5)
    assert waiter.is_alive(), "trial 0 measured the configuration trial 1 holds"
    session.records.add_trial("s", record(second, 1.7))
    waiter.join(10)
    ((result, source),) = outcome
    assert source == second.number and result.speedup_vs_eager == 1.7


def test_the_claim_goes_with_the_record_and_a_dead_holder_loses_it(session):
    other, later = session.study.ask(), session.study.ask()
    mine = claims(session)
    assert mine.reuse_or_claim(other, KEY) is None
    mine.release(other)  # given up unmeasured: the next trial claims it at once
    assert session.records.claim_of("s", f"config:{KEY}") is None
    assert claims(session).reuse_or_claim(later, KEY) is None
    # The holder's trial fails without a record (its process died, the trial was failed as
    # stale): a new trial takes the configuration over instead of waiting for ever.
    session.study.tell(later, state=optuna.trial.TrialState.FAIL)
    retry = session.study.ask()
    taker = claims(session)
    assert taker.reuse_or_claim(retry, KEY) is None
    assert session.records.claim_of("s", f"config:{KEY}").owner == f"trial:{retry.number}"


def test_a_claim_retried_after_a_lost_reply_finds_its_own_row(session):
    trial = session.study.ask()
    session.records.claim("s", f"config:{KEY}", f"trial:{trial.number}", None)  # committed
    assert claims(session).reuse_or_claim(trial, KEY) is None  # not a wait on itself
