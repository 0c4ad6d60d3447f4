"""How a search ends (:class:`Ended`), and where the sampler has nothing left to give: the space
left to search (the knobs shown inert left to torch, see :mod:`autotune.storage._inert`) measured
whole, or draw after draw of configurations the study measured before. Reused trials do not
count against ``--trials``, so without these stops a search whose space collapsed below its
budget would draw for ever."""

from __future__ import annotations

import enum
from collections.abc import Collection

from autotune.scope import ScopePlan
from autotune.search._queue import batches
from autotune.search._session import Session
from autotune.storage import inert_in, measured_leaving


class Ended(enum.Enum):
    """How a process's search ended (its value is what the worker row and the output say)."""

    NOT_STARTED = "not started"
    BUDGET_MET = "budget met"
    SPACE_EXHAUSTED = "space exhausted"
    COMPILE_DOES_NOT_PAY = "compile does not pay"
    TIMEOUT = "timeout"
    FAILED = "failed"  # an exception ended it: Search.ended_text says which

    @property
    def study_ended(self) -> bool:
        """The search ended the study, not only this process's part of it: the decision may
        be made and the file written."""
        return self in (Ended.BUDGET_MET, Ended.SPACE_EXHAUSTED, Ended.COMPILE_DOES_NOT_PAY)


# Sampled trials in a row, in one process, that drew a configuration measured before, after
# which the search stops: each is drawn at random (see ExploringSampler), so a space with a
# twentieth of its configurations unmeasured stops here by chance once in 27 searches.
REPEATS = 64


def space_spent(session: Session, plan: ScopePlan | None, repeats: int) -> str:
    """Why the search must stop drawing, or "": every distinct configuration of the space left
    to search was measured, or the last ``repeats`` (at least :data:`REPEATS`) trials of this
    process each drew one the study had measured (what is left unmeasured is drawn too
    rarely to spend more trials finding it)."""
    trials = session.db(lambda: session.study.get_trials(deepcopy=False))
    records = session.db(session.records.trials, session.name)
    inert = inert_in(trials, records)
    size = study_size(session, plan, inert)
    measured = measured_leaving(trials, records, inert)
    if inert:
        left = (
            f"the space left to search ({', '.join(inert)} left to torch) holds {size:,} "
            "distinct configurations"
        )
    else:
        left = f"the space holds {size:,} distinct configurations"
    if measured >= size:
        return f"{left}, all measured" if inert else f"all {size:,} configurations were measured"
    if repeats >= REPEATS:
        return (
            f"the last {repeats} configurations drawn had all been measured ({left}, "
            f"{measured:,} measured): the rest is drawn too rarely to spend more trials on"
        )
    return ""


def study_size(session: Session, plan: ScopePlan | None, inert: Collection[str] = ()) -> int:
    """The study's configurations: the space's (``inert`` knobs left to torch), times its
    scope candidates and batch sizes."""
    scopes = plan.size if plan is not None else 1
    return session.space.size_leaving(inert) * scopes * len(batches(session.settings))
