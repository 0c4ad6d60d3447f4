"""What a search tells whoever watches it: each record, each note, each phase. A display
subscribes by setting the callbacks; it never changes the running search."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from autotune.records import TrialRecord


@dataclass
class Events:
    """The search's three callbacks (no-ops by default), and the notes already said."""

    on_record: Callable[[TrialRecord], None] = lambda record: None
    on_note: Callable[[str], None] = lambda note: None
    # ("analyzing" | "probing" | "trial", detail): for a display
    on_phase: Callable[[str, str], None] = lambda phase, detail: None
    noted: set[str] = field(default_factory=set)
    # Where each trial writes its phase ("compiling", "measuring") for a display; None: nowhere.
    phase_dir: str | None = None

    def subscribe(
        self,
        on_record: Callable[[TrialRecord], None],
        on_note: Callable[[str], None],
        on_phase: Callable[[str, str], None],
    ) -> None:
        """Sends what happens from now on to a display (its callbacks replace the ones set)."""
        self.on_record, self.on_note, self.on_phase = on_record, on_note, on_phase

    def note_once(self, note: str) -> None:
        if note not in self.noted:
            self.noted.add(note)
            self.on_note(note)
