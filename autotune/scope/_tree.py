"""The module tree of a model, as plain JSON-able data (standard library only)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ModulePart:
    """One submodule: where it is, what it is, how big and how busy.

    Attributes:
        path: Dotted path from the root, e.g. ``encoder.layer.0``.
        module_class: The name of its class, e.g. ``BertLayer``.
        parameters: Its parameter count (a tensor shared by two submodules counts once).
        calls: How many times one eager pass over the inputs ran its forward; for a container
            without a forward (``ModuleList``), its parts' calls.
        time_share: Its share of the root's eager forward time (``None`` when not profiled).
    """

    path: str
    module_class: str
    parameters: int
    calls: int = 0
    time_share: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "module_class": self.module_class,
            "parameters": self.parameters,
            "calls": self.calls,
            "time_share": self.time_share,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModulePart:
        return cls(**data)


@dataclass(frozen=True)
class BlockClass:
    """A repeated block class: its instances are compiled one by one and share one graph.

    Attributes:
        name: The class name (module-qualified when two classes share it).
        instances: The instances, outermost only, in model order.
    """

    name: str
    instances: tuple[ModulePart, ...]

    @property
    def paths(self) -> tuple[str, ...]:
        """The dotted paths of the instances."""
        return tuple(part.path for part in self.instances)

    @property
    def parameters(self) -> int:
        """The parameter count of all instances together."""
        return sum(part.parameters for part in self.instances)

    @property
    def time_share(self) -> float | None:
        """The share of eager time of all instances together."""
        shares = [part.time_share for part in self.instances]
        return None if None in shares else sum(s for s in shares if s is not None)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "instances": [p.to_dict() for p in self.instances]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BlockClass:
        return cls(data["name"], tuple(ModulePart.from_dict(p) for p in data["instances"]))


@dataclass(frozen=True)
class ModelTree:
    """What a scope search needs to know about a model's structure and eager time.

    Attributes:
        root_class: The name of the model's class.
        parameters: The model's parameter count.
        children: The top-level children.
        units: What compiling "the top-level children" means: the top-level children, with
            containers that have no forward (``ModuleList``, ``ModuleDict``) replaced by
            their elements.
        blocks: The repeated block classes, outermost first.
        eager_time_s: One eager pass over all inputs (``None`` when not profiled).
    """

    root_class: str
    parameters: int
    children: tuple[ModulePart, ...]
    units: tuple[ModulePart, ...]
    blocks: tuple[BlockClass, ...] = ()
    eager_time_s: float | None = None

    @property
    def profiled(self) -> bool:
        """Whether calls and time shares were measured."""
        return self.eager_time_s is not None

    def block_of(self, path: str) -> BlockClass | None:
        """The repeated block class that ``path`` is an instance of, if any."""
        return next((b for b in self.blocks if path in b.paths), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "root_class": self.root_class,
            "parameters": self.parameters,
            "children": [p.to_dict() for p in self.children],
            "units": [p.to_dict() for p in self.units],
            "blocks": [b.to_dict() for b in self.blocks],
            "eager_time_s": self.eager_time_s,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelTree:
        return cls(
            root_class=data["root_class"],
            parameters=data["parameters"],
            children=tuple(ModulePart.from_dict(p) for p in data["children"]),
            units=tuple(ModulePart.from_dict(p) for p in data["units"]),
            blocks=tuple(BlockClass.from_dict(b) for b in data.get("blocks", [])),
            eager_time_s=data.get("eager_time_s"),
        )
