"""One torch.compile configuration (:class:`CompileConfig`, its :class:`Scope`) and the errors
of the config schema. Standard library only; :mod:`autotune.runtime.config` re-exports them
beside the best-config file."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from autotune.runtime._schema import compile_problems, scope_problems, when_problems
from autotune.runtime._shape_rules import pads

# What each torch.compile mode expands to (torch._inductor.list_mode_options); only used to keep
# `brief()` short, never to compile.
_MODE_PRESETS: dict[str, dict[str, Any]] = {
    "default": {},
    "reduce-overhead": {"triton.cudagraphs": True},
    "max-autotune-no-cudagraphs": {"max_autotune": True, "coordinate_descent_tuning": True},
    "max-autotune": {
        "max_autotune": True,
        "coordinate_descent_tuning": True,
        "triton.cudagraphs": True,
    },
}


class ConfigError(ValueError):
    """A config (file, dict or object) breaks the schema; the message lists every problem."""


class UnsafeKnobError(ConfigError):
    """A config sets knobs that autotune never takes from data without an explicit opt-in:
    they name a program, a compiler or its flags, a file or a folder, or turn on debug output
    (see :mod:`autotune.runtime.safety`)."""


class QuantizeError(ConfigError):
    """A config changes the model's weights in a way this machine cannot: it quantizes with
    torchao, which is not installed (``pip install 'autotune[quantize]'``), or with a scheme the
    installed torchao or the device does not run (see :mod:`autotune.runtime.quantize`)."""


class ScopeError(ConfigError):
    """A config's scope names module paths that the model does not have."""


class EnvironmentMismatchWarning(UserWarning):
    """A config is applied in an environment, or to a model, other than the one it was tuned on."""


@dataclass(frozen=True)
class Scope:
    """Which parts of the model are compiled.

    Attributes:
        compile: Dotted module paths compiled separately; ``("",)`` compiles the whole model.
        disable: Dotted module paths kept eager inside the compiled region(s).
    """

    compile: tuple[str, ...] = ("",)
    disable: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        raw = {"compile": self.compile, "disable": self.disable}
        _raise_if(scope_problems(raw, "Scope"), "invalid Scope")
        object.__setattr__(self, "compile", tuple(self.compile))
        object.__setattr__(self, "disable", tuple(self.disable))

    @property
    def kind(self) -> str:
        """``whole``, ``whole+disable``, ``regional`` or ``regional+disable``."""
        base = "whole" if self.compile == ("",) else "regional"
        return f"{base}+disable" if self.disable else base

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``{"compile": [...], "disable": [...]}``."""
        return {"compile": list(self.compile), "disable": list(self.disable)}


@dataclass(frozen=True)
class When:
    """Which calls a :class:`Part` takes: those whose input ``input`` (a keyword argument's
    name, or a positional argument's index as digits) is a tensor with ``min <= size(dim) <=
    max`` (either bound may be None; sizes inclusive).

    Example: ``When("input_ids", 1, max=1)``: calls with one new token per sequence, the
    decode steps of ``generate()``."""

    input: str
    dim: int
    min: int | None = None
    max: int | None = None

    def __post_init__(self) -> None:
        _raise_if(when_problems(self.to_dict(), "When"), "invalid When")

    def to_dict(self) -> dict[str, Any]:
        return {"input": self.input, "dim": self.dim, "min": self.min, "max": self.max}

    def matches(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> bool:
        """Whether a call with ``args`` and ``kwargs`` is one of this rule's."""
        if self.input.isdigit():
            index = int(self.input)
            value = args[index] if index < len(args) else None
        else:
            value = kwargs.get(self.input)
        shape = getattr(value, "shape", None)
        if shape is None or len(shape) <= self.dim:
            return False
        size = int(shape[self.dim])
        return (self.min is None or size >= self.min) and (self.max is None or size <= self.max)

    def describe(self) -> str:
        """E.g. ``input_ids.shape[1] == 1`` or ``1 <= input_ids.shape[1] <= 8``."""
        size = f"{self.input}.shape[{self.dim}]"
        if self.min == self.max:
            return f"{size} == {self.min}"
        if self.min is None:
            return f"{size} <= {self.max}"
        if self.max is None:
            return f"{size} >= {self.min}"
        return f"{self.min} <= {size} <= {self.max}"


@dataclass(frozen=True)
class Part:
    """Calls of the model that compile with a config of their own: a generation's decode
    steps against its prefill, say. The first part whose rule matches a call takes it; a call
    no part takes runs the config the parts belong to.

    Attributes:
        name: The part's name (``decode``), shown in reports.
        when: The rule choosing its calls.
        config: Its config (whole model, no parts of its own); None runs its calls eager.
    """

    name: str
    when: When
    config: CompileConfig | None = None

    def to_dict(self) -> dict[str, Any]:
        config = None if self.config is None else self.config.to_dict()
        return {"name": self.name, "when": self.when.to_dict(), "config": config}

    def brief(self) -> str:
        return f"{self.name}[{self.config.brief() if self.config else 'eager'}]"


@dataclass(frozen=True)
class CompileConfig:
    """One torch.compile configuration, exactly as a trial ran it.

    Attributes:
        backend: ``torch.compile`` backend name.
        mode: The preset ``options`` were expanded from; informational, never passed on.
        dynamic: ``torch.compile(dynamic=...)``; ``None`` is torch's own default.
        fullgraph: ``torch.compile(fullgraph=...)``.
        options: Resolved Inductor options (mode preset included), passed as ``options=``.
        dynamo: ``torch._dynamo.config`` settings patched around every call of a compiled region.
        functorch: ``torch._functorch.config`` settings (AOTAutograd and its partitioner:
            ``activation_memory_budget``) set around every call of a compiled region, where
            the forward and backward graphs are traced and partitioned.
        scope: Which modules are compiled and which are kept eager.
        precision: How the config changes numerics on purpose, set around every call of a
            compiled region: ``autocast`` (``"bfloat16"``, ``"float16"``: the dtype of an
            autocast region on the model's device) and ``matmul`` (``"high"``, ``"medium"``:
            ``torch.set_float32_matmul_precision``, TF32 on CUDA, bf16 matmuls through oneDNN
            on CPU), set around every call; ``weights`` (``"bfloat16"``, ``"float16"``: the
            model cast) and ``quantize`` (a torchao scheme for its Linear layers, with
            ``quantize_layers``), made once to the model before it compiles
            (:mod:`autotune.runtime.quantize`). Empty: as eager. Searched only under an
            accuracy contract.
        train: How a training step runs beside the compiled model: ``optimizer``
            (``"compiled"``: ``optimizer.step`` runs through ``torch.compile``, see
            :func:`autotune.apply_optimizer`). Empty: as the user's loop runs it.
        parts: Calls that compile with configs of their own (:class:`Part`), each chosen per
            call by its rule: ``generate()``'s decode steps apart from its prefill. The rest
            of this config applies to the calls no part takes. With parts, every config
            compiles the whole model, in place. Empty: one config for every call.
        shapes: The shape plan around every call of the model (:mod:`autotune.runtime.shapes`):
            ``plan`` (``"marked"``, ``"pad-pow2"``, ``"pad-64"``, ...) and the padding
            declaration it applies (``inputs``, ``outputs``). A plan that pads compiles with
            ``dynamic=False``: one graph per bucket. Empty: calls reach the compiled code as
            they come.
    """

    backend: str = "inductor"
    mode: str = "default"
    dynamic: bool | None = None
    fullgraph: bool = False
    options: dict[str, Any] = field(default_factory=dict)
    dynamo: dict[str, Any] = field(default_factory=dict)
    scope: Scope = field(default_factory=Scope)
    precision: dict[str, Any] = field(default_factory=dict)
    functorch: dict[str, Any] = field(default_factory=dict)
    train: dict[str, Any] = field(default_factory=dict)
    parts: tuple[Part, ...] = ()
    shapes: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        raw = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if isinstance(self.scope, Scope):
            raw["scope"] = self.scope.to_dict()
        raw["parts"] = [p.to_dict() if isinstance(p, Part) else p for p in self.parts]
        _raise_if(compile_problems(raw, "CompileConfig"), "invalid CompileConfig")
        object.__setattr__(self, "parts", tuple(_build_part(p) for p in self.parts))
        object.__setattr__(self, "options", _json_copy(self.options))
        object.__setattr__(self, "dynamo", _json_copy(self.dynamo))
        object.__setattr__(self, "precision", _json_copy(self.precision))
        object.__setattr__(self, "functorch", _json_copy(self.functorch))
        object.__setattr__(self, "train", _json_copy(self.train))
        object.__setattr__(self, "shapes", _json_copy(self.shapes))
        if isinstance(self.scope, Mapping):
            object.__setattr__(self, "scope", _build_scope(self.scope))

    def __hash__(self) -> int:
        return hash(self.config_hash())

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, keys in a stable order (options and dynamo sorted); ``precision``,
        ``functorch``, ``train`` and ``parts`` only when set, so that a config that sets none
        of them keeps the hash it had before they existed."""
        d: dict[str, Any] = {
            "backend": self.backend,
            "mode": self.mode,
            "dynamic": self.dynamic,
            "fullgraph": self.fullgraph,
            "options": {k: _json_copy(self.options[k]) for k in sorted(self.options)},
            "dynamo": {k: _json_copy(self.dynamo[k]) for k in sorted(self.dynamo)},
            "scope": self.scope.to_dict(),
        }
        if self.precision:
            d["precision"] = {k: self.precision[k] for k in sorted(self.precision)}
        if self.functorch:
            d["functorch"] = {k: _json_copy(self.functorch[k]) for k in sorted(self.functorch)}
        if self.train:
            d["train"] = {k: self.train[k] for k in sorted(self.train)}
        if self.parts:
            d["parts"] = [p.to_dict() for p in self.parts]
        if self.shapes:
            d["shapes"] = _json_copy(self.shapes)
        return d

    @property
    def changes_precision(self) -> bool:
        """The config computes in a lower precision than eager float32 on purpose: it sets
        ``precision``, or a backend's own inference precision below f32."""
        hint = self.options.get("INFERENCE_PRECISION_HINT") if self.backend != "inductor" else None
        return bool(self.precision) or hint not in (None, "f32")

    @property
    def changes_weights(self) -> bool:
        """The config changes the model's own weights before it compiles: a cast
        (``precision.weights``) or a quantization (``precision.quantize``), made in place (see
        :mod:`autotune.runtime.quantize`)."""
        return "weights" in self.precision or "quantize" in self.precision

    @classmethod
    def from_dict(cls, d: Any, where: str = "config") -> CompileConfig:
        """Builds a config from its JSON form; missing keys take their defaults.

        Raises:
            ConfigError: Listing every unknown key, wrong type and bad value at once.
        """
        _raise_if(compile_problems(d, where), f"invalid compile config ({where})")
        return _build_compile(d)

    def config_hash(self) -> str:
        """First 16 hex digits of the sha256 of the canonical JSON of :meth:`to_dict`."""
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    def brief(self) -> str:
        """One short human line, e.g. ``inductor max-autotune dyn=False fg=False freezing=1``."""
        parts = [self.backend]
        if self.backend == "inductor":
            parts.append(self.mode)
        parts += [f"dyn={self.dynamic}", f"fg={self.fullgraph}"]
        preset = _MODE_PRESETS.get(self.mode, {})
        extra = {k: v for k, v in self.options.items() if k not in preset or preset[k] != v}
        parts += [f"{k}={_brief_value(v)}" for k, v in sorted(extra.items())]
        parts += [f"dynamo.{k}={_brief_value(v)}" for k, v in sorted(self.dynamo.items())]
        parts += [f"functorch.{k}={_brief_value(v)}" for k, v in sorted(self.functorch.items())]
        if self.scope.kind != "whole":
            parts.append(f"scope={_brief_paths(self.scope.compile)}")
        if self.scope.disable:
            parts.append(f"eager={_brief_paths(self.scope.disable)}")
        if "autocast" in self.precision:
            parts.append(f"autocast={self.precision['autocast']}")
        if "matmul" in self.precision:
            parts.append(f"matmul={self.precision['matmul']}")
        if "weights" in self.precision:
            parts.append(f"weights={self.precision['weights']}")
        if "quantize" in self.precision:
            kept = "-head" if self.precision.get("quantize_layers") == "except-last" else ""
            parts.append(f"quantize={self.precision['quantize']}{kept}")
        if "optimizer" in self.train:
            parts.append(f"optimizer={self.train['optimizer']}")
        if "plan" in self.shapes:
            parts.append(f"shapes={self.shapes['plan']}")
        parts += [part.brief() for part in self.parts]
        return " ".join(parts)

    def compile_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``torch.compile``; never ``mode`` (options already hold it)."""
        kwargs: dict[str, Any] = {
            "backend": self.backend,
            # a plan that pads shows the compiled code a few static shapes: a graph per bucket
            "dynamic": False if pads(self.shapes) else self.dynamic,
            "fullgraph": self.fullgraph,
        }
        if self.backend == "inductor" and self.options:
            # A fresh copy: torch.compile pops keys out of the dict it is given.
            kwargs["options"] = _json_copy(self.options)
        return kwargs


def _raise_if(problems: list[str], title: str) -> None:
    if problems:
        count = f"{len(problems)} problem" + ("s" if len(problems) > 1 else "")
        lines = "\n".join(f"  - {p}" for p in problems)
        raise ConfigError(f"{title}: {count}:\n{lines}")


def _build_compile(d: Mapping[str, Any]) -> CompileConfig:
    kwargs = {k: _json_copy(v) for k, v in d.items() if k not in ("scope", "parts")}
    if "scope" in d:
        kwargs["scope"] = _build_scope(d["scope"])
    kwargs["parts"] = tuple(_build_part(p) for p in d.get("parts", ()))
    return CompileConfig(**kwargs)


def _build_part(d: Mapping[str, Any] | Part) -> Part:
    if isinstance(d, Part):
        return d
    config = d.get("config")
    built = _build_compile(config) if isinstance(config, Mapping) else config
    return Part(str(d["name"]), When(**d["when"]), built)


def _build_scope(d: Mapping[str, Any] | Scope) -> Scope:
    if isinstance(d, Scope):
        return d
    return Scope(tuple(d.get("compile", ("",))), tuple(d.get("disable", ())))


def _json_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _json_copy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_copy(v) for v in value]
    return value


def _brief_value(value: Any) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, list):
        return ",".join(_brief_value(v) for v in value)
    return str(value)


def _brief_paths(paths: tuple[str, ...]) -> str:
    shown = ",".join(p or "<root>" for p in paths[:3])
    return shown + (f",+{len(paths) - 3}" if len(paths) > 3 else "")


# How the generate workload runs a searched config: its prefill (more than one new position
# per sequence) eager, as transformers' own compile leaves it; the config takes the rest, the
# decode steps.
PREFILL_EAGER = Part("prefill", When("input_ids", 1, min=2), None)
PREFILLS = ("eager", "compiled")
"""How a generate plan runs its prefill: eager, or compiled by :func:`prefill_config`."""


def for_generate(config: CompileConfig, prefill: str = "eager") -> CompileConfig:
    """``config`` as the generate workload runs and ships it: the decode steps compiled by
    ``config``, the prefill eager (:data:`PREFILL_EAGER`) or ``"compiled"`` by
    :func:`prefill_config`. A config with parts is already a plan and comes back as it is."""
    if prefill not in PREFILLS:
        choices = ", ".join(map(repr, PREFILLS))
        raise ConfigError(f"prefill must be one of {choices}, not {prefill!r}")
    if config.parts:
        return config
    part = PREFILL_EAGER
    if prefill == "compiled":
        part = dataclasses.replace(PREFILL_EAGER, config=prefill_config(config))
    return dataclasses.replace(config, parts=(part,))


def prefill_config(decode: CompileConfig) -> CompileConfig:
    """The decode config as a compiled prefill runs it: its backend, knobs and precision,
    without CUDA graphs (a prompt's length varies, and a graph captured per length holds its
    memory for the process's life) and with torch's automatic dynamic shapes unless the decode
    marks every dimension dynamic (``dynamic=False`` would compile once per prompt length)."""
    options = {k: v for k, v in decode.options.items() if k != "triton.cudagraphs"}
    mode = _NO_CUDA_GRAPHS.get(decode.mode, decode.mode)
    dynamic = True if decode.dynamic else None
    return dataclasses.replace(decode, mode=mode, options=options, dynamic=dynamic, parts=())


_NO_CUDA_GRAPHS = {"reduce-overhead": "default", "max-autotune": "max-autotune-no-cudagraphs"}
