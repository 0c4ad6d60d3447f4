"""TOML files read with tomllib, bounded: a file is refused before tomllib spends quadratic
memory on it, and one that cannot be decoded is explained in words that do not point at
Python's settings."""

from __future__ import annotations

import sys
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

# tomllib keeps every prefix of a dotted key (a.b.c...): a key of n parts costs n**2 memory
# (20,000 parts: 1.5 GB). A space or study file holds a few dozen dots.
MAX_DOTS = 4096


class TooManyDots(ValueError):
    """A TOML text with more dots than :data:`MAX_DOTS`."""


def loads(data: bytes) -> dict[str, Any]:
    """The TOML document of ``data`` (UTF-8).

    Raises:
        ValueError: Not UTF-8 (``UnicodeDecodeError``), not TOML (``TOMLDecodeError``), an
            integer longer than Python reads, or more dots than :data:`MAX_DOTS`.
        RecursionError: Arrays or inline tables nested past the recursion limit.
    """
    text = data.decode("utf-8")
    if text.count(".") > MAX_DOTS:
        raise TooManyDots(
            f"it holds {text.count('.'):,} '.' characters, more than the {MAX_DOTS:,} autotune "
            "reads (dotted keys that long take Python's TOML reader quadratic memory)"
        )
    return tomllib.loads(text)


def undecodable(exc: BaseException) -> str:
    """What a ``ValueError`` or ``RecursionError`` of :func:`loads` (other than a
    ``TOMLDecodeError``) says about the file: not UTF-8, too deep, or a number too long."""
    if isinstance(exc, UnicodeDecodeError):
        return f"byte {exc.start} is not UTF-8"
    if isinstance(exc, RecursionError):
        return "it nests too deeply"
    if isinstance(exc, TooManyDots):
        return str(exc)
    return "it holds an integer longer than Python reads"
