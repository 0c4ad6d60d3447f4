"""What ``autotune search`` and ``autotune.tune`` share before :func:`run_study`: the search of
a set of ``search`` options, the way its file is written, and the lines that open it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from autotune.pipeline._run import Finish
from autotune.pipeline._runners import trial_runner, trial_runners

if TYPE_CHECKING:
    from autotune.study import Search


def open_search(args: Any, on_note: Callable[[str], None], runners: bool = True) -> Search:
    """The search these options of ``autotune search`` ask for (``args.storage`` resolved):
    its request, the study joined or created, and (unless ``runners`` is False: a study
    created for workers) this process's trial runners on the study's device."""
    from autotune._deadline import Deadline
    from autotune.pipeline._device import resolve_device
    from autotune.pipeline._request import NO_CUDA, build_request
    from autotune.study import Events, Search, Session

    request = build_request(args, Deadline.after(args.timeout))
    if getattr(args, "effort_line", None):
        on_note(args.effort_line)
    session = Session(request, Events(on_note=on_note))
    if not runners:
        return Search(session)
    device = session.local.device
    resolve_device(device, remedy=NO_CUDA, named=f"The study's device {device}")
    return Search(session, trial_runners(args, device))


def finish_of(args: Any) -> Finish:
    """How the file of a search with these options is written."""
    return Finish(
        args.out, remeasure=args.remeasure, for_device=args.for_device,
        save_cache=args.save_cache, save_aot=args.save_aot, finalist_runner=trial_runner(),
    )  # fmt: skip


def opening_lines(search: Search) -> list[str]:
    """The space's notes, then the study line: new, or resumed with how far it got."""
    space = search.session.space
    lines = [f"note: {note}" for note in space.notes]
    s, done = search.session.settings, search.done()
    what = f"{s.model_path} on {s.device}, space {space.name!r} ({space.size:,} configurations)"
    name = search.request.study_name
    if done:
        lines.append(f"study {name!r} (resumed, {done} of {s.trials} trials done): {what}")
    else:
        lines.append(f"study {name!r}: {what}, {s.trials} trials")
    return lines
