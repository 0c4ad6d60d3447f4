"""Text from data, made safe for a terminal: what autotune prints of a file, a database row or a
trial's error never moves the cursor, clears the screen, retitles the window or reorders text.

One function decides it, :func:`printable` (:func:`inline` for a value shown within a line);
:func:`say` is ``print`` through it, which every command uses for what it prints.
"""

from __future__ import annotations

import sys
import unicodedata
from typing import IO, Any

_KEEP = frozenset("\n\t")  # the layout autotune's own text uses


def printable(text: str) -> str:
    """``text`` with every control character (C0 but newline and tab, DEL, C1: ESC, BEL, CR,
    backspace, the CSI of a terminal sequence) and every invisible format character (bidi
    overrides and isolates, zero-width ones) written as a visible escape: ``\\x1b``,
    ``\\u202e``."""
    if text.isprintable():
        return text
    return "".join(c if c in _KEEP or not _hidden(c) else _escape(c) for c in text)


def inline(text: str) -> str:
    """:func:`printable`, with newline and tab escaped too (``\\n``, ``\\t``): a value read
    from data that a message shows within a line, where it must not fake a line of its own."""
    return printable(text.replace("\n", "\\n").replace("\t", "\\t"))


def _hidden(c: str) -> bool:
    return unicodedata.category(c) in ("Cc", "Cf")


def _escape(c: str) -> str:
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def say(*values: Any, sep: str = " ", end: str = "\n", file: IO[str] | None = None,
        flush: bool = False) -> None:  # fmt: skip
    """``print``, through :func:`printable`."""
    print(printable(sep.join(map(str, values))), end=end, file=file or sys.stdout, flush=flush)
