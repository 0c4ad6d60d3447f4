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
    """The names of the built-in spaces (``search_spaces/*.toml``)."""
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.toml"))


def builtin_descriptions() -> dict[str, str]:
    """Name -> description of every built-in space (read without importing torch)."""
    return {
        name: str(read(BUILTIN_DIR / f"{name}.toml").get("description", ""))
        for name in builtin_names()
    }


def resolve(name_or_path: str, base_dir: Path | None = None) -> Path:
    """A path as given (relative to ``base_dir``, default the current folder), or the built-in
    space of that name."""
    path = Path(name_or_path)
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    if path.suffix == ".toml" or path.exists():
        if not path.is_file():
            raise SpaceError(
                f"The search-space file {str(path)!r} does not exist. Pass a TOML file or the "
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
    """The TOML document of ``path``."""
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise SpaceError(f"The search-space file {path} is not valid TOML: {exc}.") from exc
    except OSError as exc:
        raise SpaceError(f"The search-space file {path} cannot be read: {exc}.") from exc
