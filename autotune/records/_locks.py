"""Claims: work one process of a study does alone, and the others wait for or take over.

A claim is a row keyed by (study, name): inserting it claims the work, its owner keeps its
heartbeat fresh while working and marks it done at the end. A process that finds the claim
held by an owner whose heartbeat is older than ``stale_after_s`` (the owner died) takes it
over, and only one such process succeeds (the update names the stale heartbeat it replaces).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from autotune.records._rows import HasEngine, as_utc, utcnow
from autotune.records.tables import claims_table


@dataclass(frozen=True)
class Claim:
    """Who holds a claim, since when, and whether the work is done."""

    name: str
    owner: str
    claimed_at: datetime
    heartbeat_at: datetime
    done_at: datetime | None

    @property
    def done(self) -> bool:
        return self.done_at is not None


class ClaimRows(HasEngine):
    def claim(self, study_name: str, name: str, owner: str, stale_after_s: float | None) -> bool:
        """Claims ``name`` in ``study_name`` for ``owner``: True when this call owns it now
        (new, or taken over from an owner whose heartbeat is stale), False when another owner
        holds it or it is done. With ``stale_after_s`` None a claim is never taken over: its
        owner releases it, or a process that knows the owner is gone does."""
        now = utcnow()
        row = {"study_name": study_name, "name": name, "owner": owner[:255],
               "claimed_at": now, "heartbeat_at": now}  # fmt: skip
        try:
            with self._engine.begin() as conn:
                conn.execute(claims_table.insert().values(row))
            return True
        except IntegrityError:
            pass
        if stale_after_s is None:
            return False
        stale_before = now - timedelta(seconds=stale_after_s)
        with self._engine.begin() as conn:
            taken = conn.execute(
                claims_table.update()
                .where(
                    _key(study_name, name),
                    claims_table.c.done_at.is_(None),
                    claims_table.c.heartbeat_at < stale_before,
                )
                .values(owner=owner[:255], claimed_at=now, heartbeat_at=now)
            )
        return taken.rowcount == 1

    def beat_claim(self, study_name: str, name: str, owner: str) -> bool:
        """Refreshes the heartbeat of ``owner``'s claim; False when it lost the claim."""
        with self._engine.begin() as conn:
            beaten = conn.execute(
                claims_table.update()
                .where(_key(study_name, name), claims_table.c.owner == owner[:255])
                .values(heartbeat_at=utcnow())
            )
        return beaten.rowcount == 1

    def finish_claim(self, study_name: str, name: str, owner: str) -> None:
        """Marks ``owner``'s claim done: nobody takes it over any more."""
        with self._engine.begin() as conn:
            conn.execute(
                claims_table.update()
                .where(_key(study_name, name), claims_table.c.owner == owner[:255])
                .values(done_at=utcnow())
            )

    def release_claim(self, study_name: str, name: str, owner: str) -> None:
        """Gives up ``owner``'s claim unfinished (it stopped early): another may claim it."""
        with self._engine.begin() as conn:
            conn.execute(
                claims_table.delete().where(
                    _key(study_name, name),
                    claims_table.c.owner == owner[:255],
                    claims_table.c.done_at.is_(None),
                )
            )

    def claim_of(self, study_name: str, name: str) -> Claim | None:
        """The claim ``name`` of ``study_name``, if any."""
        if claims_table.name in self._missing:  # an older database, read only
            return None
        with self._engine.connect() as conn:
            row = conn.execute(sa.select(claims_table).where(_key(study_name, name))).first()
        if row is None:
            return None
        return Claim(
            name=row.name,
            owner=row.owner,
            claimed_at=as_utc(row.claimed_at),
            heartbeat_at=as_utc(row.heartbeat_at),
            done_at=None if row.done_at is None else as_utc(row.done_at),
        )


def _key(study_name: str, name: str) -> sa.ColumnElement[bool]:
    return sa.and_(claims_table.c.study_name == study_name, claims_table.c.name == name)
