"""What ``autotune search`` and ``autotune worker`` show while they run.

In a terminal, a live panel (rich) under the lines of the finished trials: the study's trials
done of its budget, time spent and left, what runs now and in which phase, the best trial so
far and the failures by kind. Elsewhere (CI, logs, Slurm) one plain line per trial and per
note. With ``quiet``, neither: the command prints only what it ends with.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections import Counter
from typing import TYPE_CHECKING, Protocol

from autotune._printable import printable
from autotune._scratch import scratch_dir
from autotune.records import TrialRecord
from autotune.reports import terminal
from autotune.reports._format import clip
from autotune.reports._standing import Standing
from autotune.trials import read_phase

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console, RenderableType
    from rich.live import Live

    from autotune.scoring import Objective

    Reader = Callable[[], Standing]  # where the study stands, read from its storage

POLL_S = 2.0  # the study's counts are read this often, by a thread of the display's own
_REFRESH_PER_S = 2
_WIDTH = 96  # of the "now" row: the config is clipped to it


class Watched(Protocol):
    """The events a search tells a display (``autotune.search.Events``): the panel subscribes to
    them and says where its trials write their phase."""

    phase_dir: str | None

    def subscribe(
        self,
        on_record: Callable[[TrialRecord], None],
        on_note: Callable[[str], None],
        on_phase: Callable[[str, str], None],
    ) -> None: ...


class Progress:
    """Shows a search's trials, notes and phases; a context manager around the running part.

    Args:
        quiet: Print nothing of the run (the command prints its ending itself).
        console: Where the live panel goes (default: stdout); tests pass a recording console.
        live: Show the live panel (default: when ``console`` or stdout is a terminal).
        poll_s: How often the study's counts are read while the panel shows.

    Example:
        >>> progress = Progress()  # doctest: +SKIP
        >>> search = Search(request, on_note=progress.note)  # doctest: +SKIP
        >>> search.show_in(progress, "search")  # doctest: +SKIP
        >>> with progress:  # doctest: +SKIP
        ...     search.run()
    """

    def __init__(
        self,
        quiet: bool = False,
        console: Console | None = None,
        live: bool | None = None,
        poll_s: float = POLL_S,
    ) -> None:
        if live is None:
            live = console.is_terminal if console is not None else sys.stdout.isatty()
        self.quiet, self.live, self.poll_s = quiet, live and not quiet, poll_s
        self._console = console
        self._events: Watched | None = None  # the search's, subscribed to by attach
        self._budget: int | None = None
        self._objective: Objective | None = None
        self._read: Callable[[], Standing] | None = None
        self._title = ""
        self._lock = threading.Lock()
        self._phase, self._detail = "starting", ""
        self._standing: Standing | None = None
        self._best: tuple[float, int, float | None] | None = None  # score, trial, speedup
        self._failures: Counter[str] = Counter()
        self._walls: list[float] = []
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None
        self._live: Live | None = None
        self._phase_dir: str | None = None
        self._scratch = contextlib.ExitStack()

    def attach(
        self, events: Watched, title: str, budget: int, objective: Objective, read: Reader
    ) -> None:
        """Shows a search's records, notes and phases from now on, under ``title``: subscribes
        to its ``events``; ``read`` says where the study stands, from its storage (never from
        the running search). A search attaches itself: ``Search.show_in(progress, command)``."""
        self._title, self._budget, self._objective, self._read = title, budget, objective, read
        self._events = events
        events.subscribe(self.record, self.note, self.phase)

    def __enter__(self) -> Progress:
        self._started = time.monotonic()
        if not self.live:
            return self
        from rich.live import Live

        if self._events is not None:
            self._phase_dir = str(self._scratch.enter_context(scratch_dir("phases-")))
            self._events.phase_dir = self._phase_dir
            self._poller = threading.Thread(target=self._poll, daemon=True)
            self._poller.start()
        self._live = Live(
            get_renderable=self.render, console=self.console, transient=False,
            refresh_per_second=_REFRESH_PER_S,
        )  # fmt: skip
        self._live.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        self.finish(stopped=exc_type is not None)

    def finish(self, stopped: bool = False) -> None:
        """Stops the panel (Ctrl-C and SIGTERM included), leaving the terminal as it was; once."""
        if self._stop.is_set():
            return
        self._stop.set()
        self.phase("stopped" if stopped else "done")
        if self._poller is not None:
            self._poller.join(timeout=1.0)
            if not stopped:
                self._read_standing()  # the panel left on screen shows the study as it ended
        if self._live is not None:
            self._live.stop()
            self._live = None
        if self._events is not None:
            self._events.phase_dir = None
        self._scratch.close()

    @property
    def console(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console()
        return self._console

    def say(self, line: str) -> None:
        """Prints ``line`` (above the panel while it shows), even when quiet."""
        line = printable(line)  # text from data never reaches the terminal raw
        if self.live:  # markup and highlighting off: "[eager]" is text, not a style tag
            self.console.print(line, markup=False, highlight=False, emoji=False, soft_wrap=True)
        else:
            print(line, flush=True)

    def note(self, line: str) -> None:
        """A line about the run: shown unless quiet."""
        if not self.quiet:
            self.say(line)

    def phase(self, name: str, detail: str = "") -> None:
        """What runs now: ``analyzing``, ``probing``, ``trial``, ``finalists``, ``waiting``."""
        with self._lock:
            self._phase, self._detail = name, detail

    def record(self, r: TrialRecord) -> None:
        """A finished trial: its line, and its part in the best and the failures."""
        objective = self._objective
        with self._lock:
            self._count(r, objective.score(r) if objective is not None else r.speedup_vs_eager)
            if self._phase == "trial" and self._detail.startswith(f"#{r.trial_number} "):
                self._phase, self._detail = "sampling", "the next configuration"
        self.note(terminal.trial_line(r, objective))

    def _count(self, r: TrialRecord, score: float | None) -> None:
        if r.duplicate_of is not None:
            return
        if r.failure_kind is not None:
            self._failures[r.failure_kind] += 1
        if r.wall_time_s is not None:
            self._walls.append(r.wall_time_s)
        if score is not None and (self._best is None or score > self._best[0]):
            self._best = (score, r.trial_number, r.speedup_vs_eager)

    def _poll(self) -> None:
        while True:
            self._read_standing()
            if self._stop.wait(self.poll_s):
                return

    def _read_standing(self) -> None:
        assert self._read is not None
        try:
            found = self._read()
        except Exception:  # noqa: BLE001 - the search rides out the database itself;
            return  # the panel keeps its last figures until the next read
        with self._lock:
            self._standing = found

    def render(self) -> RenderableType:
        """The live panel as it stands now."""
        from rich.panel import Panel
        from rich.table import Table
        from rich.text import Text

        with self._lock:
            rows = self.rows()
        grid = Table.grid(padding=(0, 2))
        grid.add_column(no_wrap=True, style="bold")
        grid.add_column(no_wrap=True, overflow="ellipsis")
        for name, value in rows:
            grid.add_row(name, Text(printable(value)))
        return Panel(grid, title=Text(printable(self._title)), title_align="left")

    def rows(self) -> list[tuple[str, str]]:
        """The panel's rows, as (name, text)."""
        rows = [("trials", self._trials()), ("time", self._times()), ("now", self._now())]
        rows.append(("best", _best_text(self._best, self._standing)))
        failures = ", ".join(f"{n} {kind}" for kind, n in self._failures.most_common())
        rows.append(("failures", failures or "none"))
        return rows

    def _trials(self) -> str:
        budget = self._budget
        s = self._standing
        if s is None:
            return f"? of {budget} done" if budget else "?"
        running = f", {s.running} running" if s.running else ""
        return f"{s.done} of {budget} done{running} (study-wide)"

    def _times(self) -> str:
        text = f"elapsed {_duration(time.monotonic() - self._started)}"
        s, budget = self._standing, self._budget or 0
        if s is None or not self._walls or s.done >= budget:
            return text
        mean = sum(self._walls) / len(self._walls)
        left = mean * (budget - s.done) / max(1, s.running)
        return f"{text}, trials left ~{_duration(left)}"

    def _now(self) -> str:
        phase = self._phase
        if phase == "trial":
            phase = _trial_phases(self._phase_dir) or "starting"
        return clip(f"{phase}: {self._detail}" if self._detail else phase, _WIDTH)


def _trial_phases(phase_dir: str | None) -> str:
    """The phases the running trials of this process wrote ("compiling", "measuring")."""
    if phase_dir is None:
        return ""
    try:
        names = sorted(os.listdir(phase_dir))
    except OSError:
        return ""
    paths = [os.path.join(phase_dir, n) for n in names if n.endswith(".phase")]
    phases = Counter(p for p in map(read_phase, paths) if p is not None)
    if len(phases) == 1 and sum(phases.values()) == 1:
        return next(iter(phases))
    return ", ".join(f"{n} {phase}" for phase, n in phases.most_common())


def _best_text(best: tuple[float, int, float | None] | None, s: Standing | None) -> str:
    """This process's best trial, or the study's when another process found a better one."""
    if s is not None and s.best_trial is not None and s.best_score is not None:
        if best is None or s.best_score > best[0]:
            best = (s.best_score, s.best_trial, s.best_speedup)
    if best is None:
        return "-"
    _, number, speedup = best
    return f"trial #{number}, {speedup or 0:.2f}x eager"


def _duration(seconds: float) -> str:
    """``45s``, ``3m12s``, ``2h05m``."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"
