"""Spaces whose conditions read many knobs: inputs for the bound on counting a space, shared
by the space, CLI and fuzz tests."""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def bool_knobs(count: int) -> tuple[str, ...]:
    """The first ``count`` boolean Inductor knobs (names within ``[inductor]``) that a space
    accepts with the installed torch."""
    import torch._inductor.config

    from autotune.space import SpaceError, space_from_dict

    found: list[str] = []
    options = torch._inductor.config.get_config_copy()
    for name in sorted(n for n, v in options.items() if isinstance(v, bool)):
        try:
            space_from_dict({"inductor": {name: [False, True]}}, "cpu")
        except SpaceError:
            continue
        found.append(name)
        if len(found) == count:
            return tuple(found)
    raise AssertionError(f"this torch has {len(found)} boolean Inductor knobs, not {count}")


def wide_space(reads: int) -> dict[str, Any]:
    """``reads`` boolean knobs, and one more whose condition reads them all (``a or b ...``):
    its values combine in ``2**reads`` ways."""
    *read, last = bool_knobs(reads + 1)
    inductor: dict[str, Any] = {name: [False, True] for name in read}
    when = " or ".join(f"inductor.{name}" for name in read)
    inductor[last] = {"choices": [False, True], "when": when}
    return {"name": f"wide{reads}", "inductor": inductor}


def reader_of(reads: int) -> str:
    """The param of the knob of :func:`wide_space` whose condition reads the others."""
    return f"inductor.{bool_knobs(reads + 1)[-1]}"


def wide_toml(reads: int) -> str:
    """:func:`wide_space` as a space file."""
    lines = ["[inductor]"]
    for name, value in wide_space(reads)["inductor"].items():
        if isinstance(value, dict):
            lines.append(f'"{name}" = {{ choices = [false, true], when = "{value["when"]}" }}')
        else:
            lines.append(f'"{name}" = [false, true]')
    return "\n".join(lines) + "\n"
