"""Finalist rounds: the configs re-measured cold and warm before a study's winner is chosen.

A round is claimed by one process (its ``owner``), filled result by result as the processes
finish, and marked ``done`` when every finalist has both runs; a round left ``measuring`` by a
process that died is never used for a decision.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from autotune.records._rows import HasEngine, as_utc, dumps, utcnow
from autotune.records.tables import finalist_results_table, finalist_rounds_table

RUNS = ("cold", "warm")


@dataclass(frozen=True)
class FinalistRound:
    """One round of finalists and the results recorded for it."""

    id: int
    finalists: list[int]  # trial numbers, in the order they were run cold
    state: str  # measuring | done
    owner: str
    created_at: datetime
    finished_at: datetime | None
    results: dict[tuple[int, str], dict[str, Any]]  # (trial number, cold|warm) -> result

    @property
    def done(self) -> bool:
        return self.state == "done"


class FinalistRows(HasEngine):
    def start_finalist_round(self, study_name: str, finalists: list[int], owner: str) -> int:
        """Records a new round of ``finalists`` measured by ``owner``; returns its id."""
        row = {
            "study_name": study_name,
            "finalists_json": dumps(finalists, "finalists"),
            "state": "measuring",
            "owner": owner[:255],
            "created_at": utcnow(),
        }
        with self._engine.begin() as conn:
            key = conn.execute(finalist_rounds_table.insert().values(row)).inserted_primary_key
        assert key is not None
        return int(key[0])

    def add_finalist_result(
        self, round_id: int, trial_number: int, run: str, result: dict[str, Any]
    ) -> None:
        """Records the ``run`` (cold or warm) of finalist ``trial_number`` in a round."""
        if run not in RUNS:
            raise ValueError(f"`run` must be one of {RUNS}, but got {run!r}.")
        row = {
            "round_id": round_id,
            "trial_number": trial_number,
            "run": run,
            "result_json": dumps(result, "result"),
            "created_at": utcnow(),
        }
        with self._engine.begin() as conn:
            conn.execute(finalist_results_table.insert().values(row))

    def finish_finalist_round(self, round_id: int) -> None:
        """Marks round ``round_id`` done: every finalist has both of its runs."""
        with self._engine.begin() as conn:
            conn.execute(
                finalist_rounds_table.update()
                .where(finalist_rounds_table.c.id == round_id)
                .values(state="done", finished_at=utcnow())
            )

    def finalist_rounds(self, study_name: str) -> list[FinalistRound]:
        """The finalist rounds of ``study_name``, oldest first, with their results."""
        rounds = sa.select(finalist_rounds_table).where(
            finalist_rounds_table.c.study_name == study_name
        )
        results = (
            sa.select(finalist_results_table)
            .join(finalist_rounds_table)
            .where(finalist_rounds_table.c.study_name == study_name)
        )
        with self._engine.connect() as conn:
            by_round: dict[int, dict[tuple[int, str], dict[str, Any]]] = {}
            for r in conn.execute(results):
                key = (r.trial_number, r.run)
                by_round.setdefault(r.round_id, {})[key] = json.loads(r.result_json)
            return [
                FinalistRound(
                    id=r.id,
                    finalists=list(json.loads(r.finalists_json)),
                    state=r.state,
                    owner=r.owner,
                    created_at=as_utc(r.created_at),
                    finished_at=None if r.finished_at is None else as_utc(r.finished_at),
                    results=by_round.get(r.id, {}),
                )
                for r in conn.execute(rounds.order_by(finalist_rounds_table.c.id))
            ]
