"""Reads a search-space TOML file and finds built-in spaces by name."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from autotune.errors import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

BUILTIN_DIR = Path(__file__).resolve().parent.parent / "builtin_spaces"


class SpaceError(UsageError):
    """A search space that cannot be used with the installed torch."""


def builtin_names() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.toml"))


def resolve(name_or_path: str) -> Path:
    """A path as given, or the built-in space of that name."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        if not path.is_file():
            raise SpaceError(
                f"The search-space file {name_or_path!r} does not exist. Pass a TOML file or the "
                f"name of a built-in space ({', '.join(builtin_names())})."
            )
        return path.resolve()
    builtin = BUILTIN_DIR / f"{name_or_path}.toml"
    if not builtin.is_file():
        raise SpaceError(
            f"There is no built-in search space named {name_or_path!r}; the built-in spaces are "
            f"{', '.join(builtin_names())}. Pass one of them or the path of a .toml file."
        )
    return builtin


def read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise SpaceError(f"The search-space file {path} is not valid TOML: {exc}.") from exc
