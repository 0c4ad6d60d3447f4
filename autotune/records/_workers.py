"""The ``autotune_workers`` rows: every process that ran trials of a study."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from autotune.records._rows import HasEngine, as_utc, utcnow
from autotune.records.tables import workers_table


@dataclass(frozen=True)
class Worker:
    """A process that ran (or runs) trials of a study."""

    id: int
    host: str
    pid: int
    gpu: str | None
    device: str
    started_at: datetime
    heartbeat_at: datetime
    stopped_at: datetime | None
    ended: str | None


class WorkerRows(HasEngine):
    def start_worker(
        self, study_name: str, host: str, pid: int, gpu: str | None, device: str
    ) -> int:
        """Records a worker joining ``study_name``; returns its id."""
        now = utcnow()
        row = {"study_name": study_name, "host": host[:255], "pid": pid, "gpu": gpu,
               "device": device, "started_at": now, "heartbeat_at": now}  # fmt: skip
        with self._engine.begin() as conn:
            key = conn.execute(workers_table.insert().values(row)).inserted_primary_key
        assert key is not None
        return int(key[0])

    def beat_worker(self, worker_id: int) -> None:
        with self._engine.begin() as conn:
            conn.execute(
                workers_table.update()
                .where(workers_table.c.id == worker_id)
                .values(heartbeat_at=utcnow())
            )

    def stop_worker(self, worker_id: int, ended: str) -> None:
        with self._engine.begin() as conn:
            conn.execute(
                workers_table.update()
                .where(workers_table.c.id == worker_id)
                .values(stopped_at=utcnow(), ended=ended[:255])
            )

    def workers(self, study_name: str) -> list[Worker]:
        """The workers of ``study_name``, in the order they joined."""
        if workers_table.name in self._missing:  # an older database, read only
            return []
        query = (
            sa.select(workers_table)
            .where(workers_table.c.study_name == study_name)
            .order_by(workers_table.c.id)
        )
        with self._engine.connect() as conn:
            return [
                Worker(
                    id=r.id,
                    host=r.host,
                    pid=r.pid,
                    gpu=r.gpu,
                    device=r.device,
                    started_at=as_utc(r.started_at),
                    heartbeat_at=as_utc(r.heartbeat_at),
                    stopped_at=None if r.stopped_at is None else as_utc(r.stopped_at),
                    ended=r.ended,
                )  # fmt: skip
                for r in conn.execute(query)
            ]
