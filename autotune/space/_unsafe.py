"""A space's ``[unsafe]`` table: the knobs refused from data that the user's own file opts into.

::

    [inductor]
    "cpp.cxx" = [["/opt/gcc-14/bin/g++"]]

    [unsafe]
    knobs = ["inductor.cpp.cxx"]  # I wrote this file; run my compiler

A space read from a database (a study's stored space) cannot opt in: its ``[unsafe]`` knobs
count only when the command line names them too (``--allow-unsafe-knob``). See
:mod:`autotune.runtime.safety` for which knobs are refused and why.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from autotune.runtime import safety as _safety
from autotune.space import _levers
from autotune.space._knob import Knob

KEY = "unsafe"
BACKEND = "compile.backend"
_REMEDY_FILE = "name it in this space file's [unsafe] knobs = [...] if you mean it"


def declared(raw: dict[str, Any], problems: list[str]) -> list[str]:
    """The ``layer.name`` knobs the space's ``[unsafe]`` table names (problems appended)."""
    table = raw.get(KEY)
    if table is None:
        return []
    knobs = table.get("knobs") if isinstance(table, dict) else None
    if not isinstance(table, dict) or set(table) != {"knobs"} or not _is_params(knobs):
        problems.append(
            '[unsafe] holds one key, knobs = ["inductor.NAME", ...] (the knobs refused from '
            f"data that this file opts into), got {table!r}"
        )
        return []
    assert isinstance(knobs, list)
    return list(dict.fromkeys(knobs))


def _is_params(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, str)
        and v.startswith(("inductor.", "dynamo.", "functorch.", _safety.BACKEND_OPT_IN))
        for v in value
    )


def problems(
    knobs: list[Knob],
    opted: list[str],
    vouched: Collection[str] | None,
    types_of: Any,
) -> tuple[list[str], tuple[str, ...]]:
    """Problems of knobs refused from data that the space does not (or may not) opt into, and
    the knobs it does opt into.

    Args:
        knobs: The space's knobs.
        opted: What its ``[unsafe]`` table names.
        vouched: None for a file the user named (its ``[unsafe]`` counts); for a space read
            from a database, the knobs the command line names (only those count).
        types_of: ``(layer, name) -> declared type``.
    """
    params = {k.param for k in knobs}
    params |= {
        f"{_safety.BACKEND_OPT_IN}{v}" for k in knobs if k.param == BACKEND for v in k.values()
    }
    honoured = [p for p in opted if (vouched is None or p in vouched) and p in params]
    found = [
        f"[unsafe] names {p}, which is not a knob of this space: drop it"
        for p in opted
        if p not in params
    ]
    for knob in knobs:
        if knob.param == BACKEND:
            found += _backend_problems(knob, opted, honoured, vouched)
        # The lever layers take values from closed lists only (autotune.space._levers).
        if knob.layer in ("compile", *_levers.LAYERS) or knob.param in honoured:
            continue
        declared_type = types_of(knob.layer, knob.name)
        why = next(
            (w for v in knob.values() if (w := _safety.refusal(knob.param, v, declared_type))),
            None,
        )
        if why is None:
            continue
        remedy = _remedy(knob.param, opted, vouched, _REMEDY_FILE)
        found.append(f"{knob.param} {why}; autotune never takes it from data ({remedy})")
    return found, tuple(honoured)


def _remedy(param: str, opted: list[str], vouched: Collection[str] | None, in_file: str) -> str:
    """How to use ``param`` all the same: ``in_file`` for the user's own file; for a space read
    from a database, the command line's say-so, or nothing."""
    if vouched is None:
        return in_file
    if param in opted:
        return (
            "the stored space opts into it, but a space read from a database cannot: pass "
            f"--allow-unsafe-knob {param} if you trust this study"
        )
    return "remove it from the space"


def _backend_problems(
    knob: Knob, opted: list[str], honoured: list[str], vouched: Collection[str] | None
) -> list[str]:
    """The backends the space names that data may not (see runtime.safety.BACKENDS)."""
    found = []
    for value in knob.values():
        param = f"{_safety.BACKEND_OPT_IN}{value}"
        why = _safety.backend_refusal(str(value))
        if why is None or param in honoured:
            continue
        in_file = f"name {param} in this space file's [unsafe] knobs = [...] if you mean it"
        remedy = _remedy(param, opted, vouched, in_file)
        found.append(f"{BACKEND} {value!r} {why}; autotune never takes it from data ({remedy})")
    return found
