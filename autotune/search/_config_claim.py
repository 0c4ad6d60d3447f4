"""Which trial measures a configuration that several draw: one claim per configuration key,
so that two processes never compile and time the same configuration, and the trials that drew
it reuse the one result; and the heartbeat that keeps a trial alive while it waits or runs."""

from __future__ import annotations

import threading
import time
from contextlib import AbstractContextManager, suppress
from typing import Any

import optuna

from autotune.search._events import Events
from autotune.search._session import Session
from autotune.storage import beating
from autotune.trials import TrialResult

POLL_S = 1.0


class ConfigClaims:
    """The claims this process's trials hold on their configurations (``stopping`` set when
    the search stops: a trial then measures without waiting)."""

    def __init__(self, session: Session, events: Events, stopping: threading.Event) -> None:
        self.session = session
        self.events = events
        self.stopping = stopping
        self.claimed: dict[int, str] = {}  # trial number -> the claim it holds

    def reuse_or_claim(self, trial: optuna.Trial, key: str) -> tuple[TrialResult, int] | None:
        """A configuration measured (or being measured) in this study is not compiled again:
        the result of the earliest trial with the same key is reused, waiting for it while it
        runs in another process. A failed baseline is measured again.

        Which trial measures is settled by a claim on the key (one row, inserted by one
        process only): two processes that draw the same configuration at the same moment
        cannot both measure it. The holder releases the claim once its record is written or
        it gave up; a holder that died is found by its trial no longer running."""
        s = self.session
        name, owner = _claim_of(key), _owner(trial)
        while True:
            found = s.db(lambda: s.records.find_by_hash(s.name, key))
            if found is not None and (found.status == "ok" or found.baseline is None):
                return TrialResult.from_dict(found.result), found.trial_number
            if self.stopping.is_set():
                return None
            holder = None
            if not s.db(s.records.claim, s.name, name, owner, None):
                holder = s.db(s.records.claim_of, s.name, name)
                if holder is None:
                    continue  # let go since the claim was tried: try again
            if holder is None or holder.owner == owner:  # a retried claim may find its own row
                self.claimed[trial.number] = name
                # A holder may have written its record and let go between the read above
                # and this claim: read it once more before measuring.
                found = s.db(lambda: s.records.find_by_hash(s.name, key))
                if found is not None and (found.status == "ok" or found.baseline is None):
                    self.release(trial)
                    return TrialResult.from_dict(found.result), found.trial_number
                return None
            number = _number_of(holder.owner)
            if number is None or not any(t.number == number for t in s.running()):
                # Its trial ended without a record (failed, or its process died and the trial
                # was failed as stale): the claim is stale and goes.
                s.db(s.records.release_claim, s.name, name, holder.owner)
                continue
            self.events.note_once(
                f"trial {trial.number} waits for trial {number}, which measures the same "
                "configuration in another process"
            )
            with heartbeat(s.study, trial):
                time.sleep(POLL_S)
            s.recover_stale()

    def release(self, trial: optuna.Trial) -> None:
        """Lets go of the claim ``trial`` holds on its configuration, if any."""
        name = self.claimed.pop(trial.number, None)
        if name is not None:
            s = self.session
            with suppress(Exception):  # the database is gone: the claim goes once found stale
                s.db(s.records.release_claim, s.name, name, _owner(trial))


def _claim_of(key: str) -> str:
    return f"config:{key}"


def _owner(trial: optuna.Trial) -> str:
    return f"trial:{trial.number}"


def _number_of(owner: str) -> int | None:
    """The trial number a configuration claim's owner names (None: not one of ours)."""
    kind, _, number = owner.partition(":")
    return int(number) if kind == "trial" and number.isdigit() else None


def heartbeat(study: optuna.Study, trial: optuna.Trial) -> AbstractContextManager[None]:
    """Keeps the trial's heartbeat fresh while its process runs, so that only trials whose
    owner died are failed as stale (by this or any other process of the study)."""
    storage: Any = study._storage
    return beating(lambda: storage.record_heartbeat(trial._trial_id))
