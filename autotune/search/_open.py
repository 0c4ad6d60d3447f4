"""What ``autotune search`` and ``autotune.tune`` share before :func:`run_study`: the search of
a set of ``search`` options, the way its file is written, and the lines that open it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from autotune.search._run import Finish
from autotune.search._runners import trial_runner, trial_runners

if TYPE_CHECKING:
    from autotune.search._search import Search
    from autotune.search._session import SearchRequest
    from autotune.settings import SearchOptions

# How often a process that joins a study not created yet looks for it.
JOIN_POLL_S = 2.0


def open_search(
    args: SearchOptions, on_note: Callable[[str], None], runners: bool = True
) -> Search:
    """The search these options ask for (``args.storage`` resolved): its request, the study
    joined or created, and (unless ``runners`` is False: a study created for workers) this
    process's trial runners on the study's device."""
    from autotune._deadline import Deadline
    from autotune._device import resolve_device
    from autotune.search._events import Events
    from autotune.search._request import NO_CUDA, build_request
    from autotune.search._search import Search
    from autotune.search._session import Session

    request = build_request(args, Deadline.after(args.timeout))
    if args.effort:
        on_note(effort_line(args.effort, request))
    session = Session(request, Events(on_note=on_note))
    if not runners:
        return Search(session)
    device = session.local.device
    resolve_device(device, remedy=NO_CUDA, named=f"The study's device {device}")
    jobs = trial_runners(args.jobs, args.trial_host, device)
    return Search(session, jobs)


def join_search(
    request: SearchRequest,
    jobs: int,
    trial_host: str,
    on_note: Callable[[str], None],
) -> Search:
    """The search of a process that joins a study (``autotune worker``): its session, which
    waits for a study not created yet (until the request's deadline), and this process's
    trial runners on the study's device."""
    import time

    from autotune._device import resolve_device
    from autotune.search._events import Events
    from autotune.search._search import Search
    from autotune.search._session import Session, StudyNotFound

    waiting = False
    while True:
        try:
            session = Session(request, Events(on_note=on_note))
            break
        except StudyNotFound:
            if request.deadline.passed():
                raise
        if not waiting:
            waiting = True
            on_note(f"waiting for study {request.study_name!r} to be created")
        time.sleep(min(JOIN_POLL_S, request.deadline.left()))
    device = session.local.device
    resolve_device(device, remedy="Run the worker where the study's device is.")
    return Search(session, trial_runners(jobs, trial_host, device))


def effort_line(effort: str, request: SearchRequest) -> str:
    """What ``--effort`` chose, as the request holds it."""
    s = request.settings
    assert s is not None  # a search's request holds its settings
    return (
        f"effort {effort}: space {s.space.get('name')!r}, {s.trials} trials, compile budget "
        f"{s.compile_budget:.0f} s, {s.finalists} finalists (options given explicitly win)"
    )


def finish_of(args: SearchOptions) -> Finish:
    """How the file of a search with these options is written."""
    return Finish(
        out=args.out, remeasure=args.remeasure, for_device=args.for_device,
        save_cache=args.save_cache, save_aot=args.save_aot, finalist_runner=trial_runner(),
    )  # fmt: skip


def opening_lines(search: Search) -> list[str]:
    """The space's notes, then the study line: new, or resumed with how far it got."""
    space = search.session.space
    lines = [f"note: {note}" for note in (*space.notes, *search.request.notes)]
    s, done = search.session.settings, search.done()
    what = f"{s.model_path} on {s.device}, space {space.name!r} ({space.size:,} configurations)"
    name = search.request.study_name
    if done:
        lines.append(f"study {name!r} (resumed, {done} of {s.trials} trials done): {what}")
    else:
        lines.append(f"study {name!r}: {what}, {s.trials} trials")
    return lines
