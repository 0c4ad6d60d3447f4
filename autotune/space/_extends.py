"""``extends = "cuda"``: a space built on another one, with knobs overridden or removed."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from autotune.space import _file
from autotune.space._file import SpaceError
from autotune.space._knob import did_you_mean
from autotune.space._presets import as_table
from autotune.space._validate import LAYERS, NUMERICS_LAYERS


def resolve(
    raw: dict[str, Any], base_dir: Path, chain: tuple[Path, ...] = ()
) -> tuple[dict[str, Any], list[str]]:
    """The space with every ``extends`` merged in (recursively) and the problems found."""
    child = dict(raw)
    extends, remove = child.pop("extends", None), child.pop("remove", None)
    if extends is None:
        problems = [] if remove is None else ["remove = [...] applies only with extends = ..."]
        return child, problems
    if not isinstance(extends, str):
        return child, [f"extends must be a built-in space name or a .toml path, got {extends!r}"]
    try:
        path = _file.resolve(extends, base_dir)
    except SpaceError as exc:
        return child, [f"extends = {extends!r}: {exc}"]
    if path in chain:
        names = " -> ".join(p.name for p in (*chain, path))
        return child, [f"extends makes a cycle ({names}); a space cannot extend itself"]
    base, problems = resolve(_file.read(path), path.parent, (*chain, path))
    merged, merge_problems = _merge(base, child, remove, extends)
    return merged, problems + merge_problems


def _merge(
    base: dict[str, Any], child: dict[str, Any], remove: Any, extends: str
) -> tuple[dict[str, Any], list[str]]:
    # The knobs are inherited, and the numerics opt-in; a name and a description describe one
    # file. A deep copy: the child's tables must not edit the base's.
    merged = {k: copy.deepcopy(v) for k, v in base.items() if k not in ("name", "description")}
    merged.setdefault("numerics", {})
    problems = _remove(merged, remove, extends)
    for key, value in child.items():
        if key in LAYERS and isinstance(value, dict):
            for name, knob in value.items():
                _drop(merged, key, name)
                _table(merged, key)[name] = knob
        elif key == "numerics" and isinstance(value, dict):
            _merge_numerics(merged, value)
        elif key == "presets" and _both_tables(as_table(base.get(key)), as_table(value) or {}):
            # by name: a child's preset replaces the base's of that name, new ones come after
            merged[key] = {**as_table(merged[key]), **(as_table(value) or {})}
        else:
            merged[key] = value
    if not merged["numerics"]:
        del merged["numerics"]
    return merged, problems


def _both_tables(base: Any, child: Any) -> bool:
    """Two ``[presets]`` tables merge; anything else is the child's, refused by validation."""
    return isinstance(base, dict) and isinstance(child, dict)


def _merge_numerics(merged: dict[str, Any], numerics: dict[str, Any]) -> None:
    if not isinstance(merged["numerics"], dict):
        merged["numerics"] = {}
    for layer, table in numerics.items():
        if layer not in NUMERICS_LAYERS or not isinstance(table, dict):
            merged["numerics"][layer] = table  # refused by validation, with its reason
            continue
        for name, knob in table.items():
            _drop(merged, layer, name)
            _table(merged["numerics"], layer)[name] = knob


def _remove(merged: dict[str, Any], remove: Any, extends: str) -> list[str]:
    if remove is None:
        return []
    if not isinstance(remove, list) or not all(isinstance(r, str) for r in remove):
        return [
            f'remove must be a list of knob names such as ["inductor.freezing"], got {remove!r}'
        ]
    problems = []
    for entry in remove:
        layer, _, name = entry.partition(".")
        if not _drop(merged, layer, name):
            known = _all_names(merged, layer) if layer in LAYERS else []
            problems.append(
                f"remove: {entry} is not a knob of {extends!r}, the space this one extends"
                f"{did_you_mean(name, known, prefix=f'{layer}.')}"
            )
    return problems


def _drop(merged: dict[str, Any], layer: str, name: str) -> bool:
    """Removes ``layer.name`` from the main tables and the numerics group; True if found."""
    found = False
    for table in _tables(merged, layer):
        if name in table:
            del table[name]
            found = True
    return found


def _table(tables: dict[str, Any], layer: str) -> dict[str, Any]:
    table = tables.setdefault(layer, {})
    if not isinstance(table, dict):
        tables[layer] = table = {}
    return table


def _tables(merged: dict[str, Any], layer: str) -> list[dict[str, Any]]:
    numerics = merged.get("numerics")
    group = numerics.get(layer) if isinstance(numerics, dict) else None
    return [t for t in (merged.get(layer), group) if isinstance(t, dict)]


def _all_names(merged: dict[str, Any], layer: str) -> list[str]:
    return [name for table in _tables(merged, layer) for name in table]
