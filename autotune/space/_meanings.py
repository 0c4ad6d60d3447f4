"""What each knob does, in one line: the comment above it in the built-in space files, which
is where every knob says why it is searched."""

from __future__ import annotations

import functools
import re
from importlib import resources

_TABLE = re.compile(r"^\[(?:numerics\.)?(compile|inductor|dynamo|functorch)\]\s*$")
_KEY = re.compile(r'^(?:"([^"]+)"|([A-Za-z0-9_.]+))\s*=')
_MAX = 110


@functools.cache
def knob_meanings() -> dict[str, str]:
    """``{"inductor.freezing": "Inference only: constant-folds the weights, ...", ...}``:
    the first sentence of the comment above each knob of the built-in spaces (the first
    space to describe a knob wins)."""
    meanings: dict[str, str] = {}
    folder = resources.files("autotune") / "builtin_spaces"
    for name in ("cpu", "cuda", "quick"):
        text = (folder / f"{name}.toml").read_text(encoding="utf-8")
        for knob, meaning in _described(text):
            meanings.setdefault(knob, meaning)
    return meanings


def _described(text: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    layer: str | None = None
    comment: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        table = _TABLE.match(line)
        if line.startswith("["):
            layer, comment = (table.group(1) if table else None), []
        elif line.startswith("#"):
            comment.append(line.lstrip("#").strip())
        elif layer and (key := _KEY.match(line)):
            if comment:
                found.append((f"{layer}.{key.group(1) or key.group(2)}", _sentence(comment)))
            comment = []
        else:
            comment = []
    return found


def _sentence(lines: list[str]) -> str:
    text = " ".join(lines)
    end = re.search(r"[.;](\s|$)", text)
    first = text[: end.start()] + "." if end else text
    return first if len(first) <= _MAX else first[: _MAX - 1] + "…"
