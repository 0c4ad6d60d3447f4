"""A search space: knobs with their choices, suggested through an Optuna trial."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autotune.runtime.config import CompileConfig
from autotune.space import _file, _validate
from autotune.space._file import SpaceError

if TYPE_CHECKING:
    import optuna


@dataclass(frozen=True)
class Knob:
    """One searched (or fixed, with a single choice) setting."""

    layer: str
    name: str
    choices: tuple[Any, ...]

    @property
    def param(self) -> str:
        """The Optuna parameter name, e.g. ``inductor.freezing``."""
        return f"{self.layer}.{self.name}"


@dataclass(frozen=True)
class SearchSpace:
    """Knobs of the compile, inductor and dynamo layers, validated for one device."""

    name: str
    knobs: tuple[Knob, ...]
    notes: tuple[str, ...] = ()

    @property
    def size(self) -> int:
        """How many distinct configurations the space holds."""
        return math.prod(len(k.choices) for k in self.knobs)

    def to_dict(self) -> dict[str, Any]:
        tables: dict[str, Any] = {"name": self.name}
        for knob in self.knobs:
            tables.setdefault(knob.layer, {})[knob.name] = list(knob.choices)
        return tables

    def content_hash(self) -> str:
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def suggest(self, trial: optuna.Trial) -> CompileConfig:
        """Draws one configuration: every knob with several choices is an Optuna parameter."""
        values = {
            k.param: trial.suggest_categorical(k.param, list(k.choices))
            if len(k.choices) > 1
            else k.choices[0]
            for k in self.knobs
        }
        return config_from_values(values)

    def config_from_params(self, params: dict[str, Any]) -> CompileConfig:
        """The configuration of a finished trial, from its Optuna params (fixed knobs added)."""
        values = {k.param: params.get(k.param, k.choices[0]) for k in self.knobs}
        return config_from_values(values)


def config_from_values(values: dict[str, Any]) -> CompileConfig:
    """Builds a CompileConfig; the mode preset is expanded into options so that knobs combine."""
    import torch._dynamo.config
    import torch._inductor.config

    compile_ = {k.split(".", 1)[1]: v for k, v in values.items() if k.startswith("compile.")}
    backend = compile_.get("backend", "inductor")
    mode = compile_.get("mode", "default")
    dynamic = compile_.get("dynamic", "auto")
    options: dict[str, Any] = {}
    if backend == "inductor":
        options = dict(torch._inductor.list_mode_options(mode))
        options.update(_layer(values, "inductor"))
    return CompileConfig(
        backend=backend,
        mode=mode if backend == "inductor" else "default",
        dynamic=None if dynamic == "auto" else bool(dynamic),
        fullgraph=bool(compile_.get("fullgraph", False)),
        options=_non_default(options, torch._inductor.config),
        dynamo=_non_default(_layer(values, "dynamo"), torch._dynamo.config),
    )


def _non_default(values: dict[str, Any], config: Any) -> dict[str, Any]:
    """Drops settings equal to torch's default, so equal compiles get equal config hashes."""
    defaults = config.get_config_copy()
    return {k: v for k, v in values.items() if k not in defaults or defaults[k] != v}


def load_space(name_or_path: str, device: str) -> SearchSpace:
    """Reads, validates (against the installed torch) and returns a search space.

    Raises:
        SpaceError: listing every problem of the file at once.
    """
    path = _file.resolve(name_or_path)
    return space_from_dict(_file.read(path), device, source=str(path))


def space_from_dict(raw: dict[str, Any], device: str, source: str = "<dict>") -> SearchSpace:
    problems, notes = _validate.validate(raw, device)
    if problems:
        listed = "; ".join(problems)
        raise SpaceError(
            f"The search space {source} cannot be used ({len(problems)} problem"
            f"{'s' if len(problems) > 1 else ''}): {listed}. Fix the file; `torch._inductor."
            "list_options()` lists the Inductor knobs of the installed torch."
        )
    knobs = tuple(
        Knob(layer, name, tuple(value if isinstance(value, list) else [value]))
        for layer in _validate.LAYERS
        for name, value in raw.get(layer, {}).items()
    )
    name = str(raw.get("name") or Path(source).stem)
    return SearchSpace(name=name, knobs=knobs, notes=tuple(notes))


def _layer(values: dict[str, Any], layer: str) -> dict[str, Any]:
    prefix = f"{layer}."
    return {k[len(prefix) :]: v for k, v in values.items() if k.startswith(prefix)}


__all__ = ["Knob", "SearchSpace", "SpaceError", "load_space", "space_from_dict"]
