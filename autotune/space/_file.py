"""Reads a search-space TOML file and finds built-in spaces by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autotune._toml import read as read_toml
from autotune.errors import UsageError

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
    try:
        return _find(name_or_path, base_dir)
    except OSError as exc:  # a name longer than the file system takes, ...
        raise SpaceError(
            f"The search space {name_or_path[:80]!r} cannot be looked up ({exc.strerror}). Pass "
            f"a TOML file or the name of a built-in space ({', '.join(builtin_names())})."
        ) from exc


def _find(name_or_path: str, base_dir: Path | None) -> Path:
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
    remedy = "`autotune spaces --show cpu` prints a space to start from."
    try:
        return read_toml(path, "The search-space file", remedy, SpaceError)
    except OSError as exc:
        raise SpaceError(f"The search-space file {path} cannot be read: {exc}.") from exc
