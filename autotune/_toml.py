"""TOML files read with tomllib, bounded: a file is refused before tomllib spends quadratic
memory on it, and one that cannot be decoded is explained in words that do not point at
Python's settings."""

from __future__ import annotations

import sys
from pathlib import Path
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


def read(path: Path, what: str, remedy: str, error: type[Exception]) -> dict[str, Any]:
    """The TOML document of the file at ``path`` (``what``: "The study file"), or ``error``
    with one paragraph: not valid TOML, or not decodable as TOML (``remedy`` completes "fix
    it: ..."). A file that cannot be opened raises ``OSError`` as it is."""
    try:
        return loads(path.read_bytes())
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{what} {path} is not valid TOML: {exc}.") from exc
    except (ValueError, RecursionError) as exc:  # not UTF-8, too long, too deep
        raise error(
            f"{what} {path} cannot be read as TOML ({undecodable(exc)}); fix it: {remedy}"
        ) from exc
