"""RecordStore: autotune's studies, trials and finalists in any SQLAlchemy database, beside
Optuna's. Each kind of row has its module (``_studies``, ``_trials``, ``_finalists``,
``_claims``, ``_workers``)."""

from __future__ import annotations

from types import TracebackType

from autotune.records._engine import open_engine
from autotune.records._finalists import FinalistRows
from autotune.records._locks import ClaimRows
from autotune.records._readonly import open_read_only
from autotune.records._studies import StudyRows
from autotune.records._trials import TrialRows
from autotune.records._workers import WorkerRows


class RecordStore(StudyRows, TrialRows, FinalistRows, ClaimRows, WorkerRows):
    """autotune's studies and trials in the database at ``url`` (the one Optuna uses).

    Creates the ``autotune_*`` tables when missing and refuses a database written by a newer
    autotune. Every method runs in its own short transaction, so many workers may share one
    database. With ``read_only``, nothing is created or written (a SQLite file that does not
    exist is refused, a database without autotune's tables raises
    :class:`~autotune.records.EmptyStorageError`), and only the reading methods may be used.

    Example:
        >>> with RecordStore("sqlite:///autotune.db") as store:  # doctest: +SKIP
        ...     settings = store.save_study("resnet", optuna_study_id=1, settings={"seed": 0})
    """

    def __init__(self, url: str, read_only: bool = False) -> None:
        if read_only:
            self._engine, self._missing = open_read_only(url)
        else:
            self._engine = open_engine(url)

    def close(self) -> None:
        """Closes every connection of this store."""
        self._engine.dispose()

    def __enter__(self) -> RecordStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
