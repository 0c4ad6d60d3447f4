"""``autotune spaces``: list the built-in search spaces, show one, or check a space file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autotune import _toml as toml_file
from autotune._device import resolve_device
from autotune._printable import say
from autotune.cli import _options as options

if TYPE_CHECKING:
    from autotune.space import Knob

INTERRUPTED = "nothing was written."


def add_parser(sub: argparse._SubParsersAction) -> options.Parser:
    """Adds ``autotune spaces [--show NAME | --check PATH]`` to the subcommands."""
    p = options.add_subcommand(
        sub,
        "spaces",
        help="list, show or check search spaces",
        description="Without options, list the built-in search spaces. Spaces are validated "
        "against the installed torch, for --device (default: the device a space is named "
        "after, as the built-in cpu and cuda spaces and search_spaces/cuda.toml are, else cuda "
        "if available); checking a space for cuda needs no GPU.",
    )
    what = p.add_mutually_exclusive_group()
    what.add_argument(
        "--show",
        metavar="NAME_OR_PATH",
        help="print a space with each knob's type and default on this torch",
    )
    what.add_argument(
        "--check",
        metavar="PATH",
        help="validate a space file: 'ok: N configurations', or every problem and exit 2",
    )
    options.add_device(p, "the device the space is validated for")
    options.add(
        p, "--allow-numerics-changes",
        help="--check: count the [numerics] knobs too, as `search --allow-numerics-changes` does",
    )  # fmt: skip
    options.add_debug(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Runs ``autotune spaces``; a bad space raises SpaceError (exit code 2)."""
    if args.check:
        return _check(args.check, args.device, args.allow_numerics_changes)
    if args.show:
        return _show(args.show, args.device)
    return _list()


def _list() -> int:
    from autotune.space import builtin_descriptions

    spaces = builtin_descriptions()
    width = max(map(len, spaces), default=0)
    for name, description in spaces.items():
        say(f"{name:<{width}}  {description}")
    say(
        "\nShow one with `autotune spaces --show NAME`, check a file with "
        "`autotune spaces --check PATH`, search with `autotune search MODEL.py --space NAME`."
    )
    return 0


def _check(path: str, device: str | None, allow_numerics: bool) -> int:
    import torch

    from autotune.space import load_space

    device = _device(device, path)
    space = load_space(path, device, allow_numerics_changes=allow_numerics)
    for note in space.notes:
        say(f"note: {note}")
    say(
        f"ok: {space.size} configurations (space {space.name!r} on {device}, "
        f"torch {torch.__version__})"
    )
    return 0


def _show(name: str, device: str | None) -> int:
    import torch

    from autotune.space import load_space

    device = _device(device, name)
    plain = load_space(name, device)
    space = load_space(name, device, allow_numerics_changes=True)
    more = f" ({space.size} with --allow-numerics-changes)" if space.searches_numerics else ""
    say(
        f"space {space.name!r} on {device}, torch {torch.__version__}: {plain.size} "
        f"configurations{more}"
    )
    if space.description:
        say(space.description)
    say(f"run it: autotune search MODEL.py --device {device} --space {name}\n")
    rows = [("knob", "type", "default", "searched"), *map(_row, space.knobs)]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        say("  ".join([*cells, row[3]]).rstrip())
    if plain.presets:
        say("\npresets, measured in every study after the baselines, in this order:")
        for preset in plain.presets:
            sets = ", ".join(f"{k} = {_toml(v)}" for k, v in preset.values.items())
            say(f"  {preset.name}: {sets}")
    for note in plain.notes:
        say(f"note: {note}")
    return 0


def _row(knob: Knob) -> tuple[str, str, str, str]:
    from autotune.space import describe_knob

    kind, default = describe_knob(knob)
    if knob.range is not None:
        r = knob.range
        searched = f"{_toml(r.low)} to {_toml(r.high)}"
        searched += (f" step {_toml(r.step)}" if r.step != 1 else "") + (" (log)" if r.log else "")
    else:
        searched = ", ".join(map(_toml, knob.choices))
    if knob.when:
        searched += f"  when {knob.when}"
    name = f"{knob.param} [numerics]" if knob.numerics else knob.param
    return name, kind, _toml(default), searched


def _toml(value: Any) -> str:
    """A value as a space file writes it: true/false, "strings", numbers; none for None."""
    if value is None:
        return "none"
    if isinstance(value, (bool, str)):
        return json.dumps(value)
    return repr(value)


def _device(given: str | None, space: str) -> str:
    """A space named after a device (a built-in one, or a file whose ``name`` or file name is
    ``cpu`` or ``cuda``, like ``search_spaces/cuda.toml``) is checked for it; anything else for
    this machine's device."""
    return resolve_device(given, fallback=_named_device(space), remedy="", require_cuda=False)


def _named_device(space: str) -> str | None:
    """The device a space is named after, if any; None for a file that cannot be read (the
    space's loader then says why)."""
    if space in ("cpu", "cuda"):
        return space
    path = Path(space)
    try:
        name = toml_file.loads(path.read_bytes()).get("name")
    except (OSError, ValueError, RecursionError):
        return None
    for candidate in (name, path.stem):
        if candidate in ("cpu", "cuda"):
            return str(candidate)
    return None
