"""Finalist rounds: the configs re-measured cold and warm before a study's winner is chosen.

A round is claimed by one process (its ``owner``), filled result by result as the processes
finish, and marked ``done`` when every finalist has both runs; a round left ``measuring`` by a
process that died is never used for a decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from autotune.records._checked import (
    OnBad,
    checked_rows,
    raw_times,
    remedy,
    time_column,
    type_problem,
)
from autotune.records._rows import (
    HasEngine,
    StudyRowError,
    dumps,
    json_column,
    shown,
    utcnow,
)
from autotune.records.tables import finalist_results_table, finalist_rounds_table

# A finalist's cold and warm runs, then the confirmation round's (autotune.decide._confirm)
RUNS = ("cold", "warm", "confirm1", "confirm2", "confirm3", "confirm4")
STATES = ("measuring", "done")


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

    def finalist_rounds(self, study_name: str, on_bad: OnBad | None = None) -> list[FinalistRound]:
        """The finalist rounds of ``study_name``, oldest first, with their results.

        Raises:
            StudyRowError: A round or one of its results breaks autotune's rules (with
                ``on_bad``: the round is left out and the error handed to ``on_bad``).
        """
        if finalist_rounds_table.name in self._missing:  # an older database, read only
            return []
        rounds = (
            sa.select(*raw_times(finalist_rounds_table))
            .where(finalist_rounds_table.c.study_name == study_name)
            .order_by(finalist_rounds_table.c.id)
        )
        results = (
            sa.select(*raw_times(finalist_results_table))
            .join(finalist_rounds_table)
            .where(finalist_rounds_table.c.study_name == study_name)
        )
        with self._engine.connect() as conn:
            read = checked_rows(
                conn.execute(results), study_name, finalist_results_table.name, _Result.of, on_bad
            )
            by_round: dict[int, list[_Result]] = {}
            for r in read:
                by_round.setdefault(r.round_id, []).append(r)
            return checked_rows(
                conn.execute(rounds), study_name, finalist_rounds_table.name,
                lambda row: _round(study_name, row, by_round.get(row["id"], [])), on_bad,
            )  # fmt: skip


@dataclass(frozen=True)
class _Result:
    """A row of autotune_finalist_results as read, its problems kept for its round to say."""

    round_id: int
    key: tuple[int, str]
    value: dict[str, Any]
    problems: list[str]

    @classmethod
    def of(cls, row: Mapping[Any, Any]) -> _Result:
        value, problem = json_column(row["result_json"], "result_json")
        problems = [problem] if problem else []
        number, run = row["trial_number"], row["run"]
        problems += [p for p in [type_problem("trial_number", "int", number)] if p]
        if run not in RUNS:
            problems.append(f"run {shown(run)}: must be one of {', '.join(RUNS)}")
        where = f"of trial {shown(number)}, run {shown(run)}: "
        return cls(row["round_id"], (number, run), value, [where + p for p in problems])


def _round(study: str, row: Mapping[Any, Any], results: list[_Result]) -> FinalistRound:
    finalists, problem = json_column(row["finalists_json"], "finalists_json", list)
    problems = [problem] if problem else []
    if finalists is not None and not all(
        isinstance(n, int) and not isinstance(n, bool) for n in finalists
    ):
        problems.append(f"finalists_json {shown(finalists)}: must list trial numbers")
    if row["state"] not in STATES:
        problems.append(f"state {shown(row['state'])}: must be one of {', '.join(STATES)}")
    owner = type_problem("owner", "str", row["owner"])
    problems += [owner] if owner else []
    created_at, problem = time_column(row["created_at"], "created_at")
    finished_at, finished = time_column(row["finished_at"], "finished_at", optional=True)
    problems += [p for p in (problem, finished) if p]
    problems += [f"its result {p}" for r in results for p in r.problems]
    if problems:
        where = f"id = {row['id']!r}"
        name = f"the row of finalist round {row['id']} in autotune_finalist_rounds"
        raise StudyRowError(study, name, problems, remedy("autotune_finalist_rounds", where))
    return FinalistRound(
        id=row["id"],
        finalists=list(finalists),
        state=row["state"],
        owner=row["owner"],
        created_at=created_at,
        finished_at=finished_at,
        results={r.key: r.value for r in results},
    )
