"""A running trial's phase ("compiling", "measuring"), in a small file its parent's display
reads: the trial process writes it, nothing else depends on it."""

from __future__ import annotations

import os


def write_phase(path: str | None, phase: str) -> None:
    """Replaces the phase in ``path`` at once (a reader never sees half a word); a phase that
    cannot be written is left out, never the trial's failure."""
    if path is None:
        return
    partial = f"{path}.{os.getpid()}.tmp"
    try:
        with open(partial, "w") as file:
            file.write(phase)
        os.replace(partial, path)
    except OSError:
        pass


def read_phase(path: str) -> str | None:
    """The phase last written to ``path``, or None when there is none (yet)."""
    try:
        with open(path) as file:
            return file.read().strip() or None
    except OSError:
        return None
