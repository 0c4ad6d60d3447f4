"""A search space: knobs with their choices, suggested through an Optuna trial."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autotune.runtime.config import CompileConfig, for_generate
from autotune.space import _build, _extends, _file, _graph, _levers, _presets, _unsafe
from autotune.space._file import SpaceError
from autotune.space._knob import Knob
from autotune.space._validate import NUMERICS_KNOBS, sets_numerics_knob

if TYPE_CHECKING:
    import optuna


@dataclass(frozen=True)
class SearchSpace:
    """Knobs of the compile, inductor, dynamo and functorch layers (and the levers), validated
    for one device.

    Attributes:
        name: The space's name (its file's stem unless the file names it).
        knobs: Every knob searched (or fixed), in file order; the ``[numerics]`` group last.
        notes: Remarks worth printing (knobs that do nothing on the device, ...).
        description: One line saying what the space is for.
        device: The device the space was validated for (``cpu``, ``cuda``, ``cuda:1``).
        workload: What is measured (``infer``); conditions may read it.
        presets: The settings measured in every study, in order: each mode on its own, then
            the file's ``[presets]`` (see :mod:`autotune.space._presets`).
        preset_table: The file's ``[presets]`` table as written (``extends`` merged).
        unsafe_knobs: Knobs refused from data that the space opts into (its ``[unsafe]``
            table, honoured for a file the user named; see :mod:`autotune.space._unsafe`).
        accuracy_contract: The study states an accuracy contract: the ``[precision]`` knobs
            are searched, and conditions read ``accuracy_contract`` as true.
    """

    name: str
    knobs: tuple[Knob, ...]
    device: str
    workload: str
    notes: tuple[str, ...] = field(default=(), compare=False)
    description: str = ""
    presets: tuple[_presets.Preset, ...] = field(default=(), compare=False)
    preset_table: dict[str, Any] = field(default_factory=dict, compare=False)
    unsafe_knobs: tuple[str, ...] = ()
    accuracy_contract: bool = False
    # The model's padding declaration (autotune.runtime.shapes), which a shape plan applies:
    # stored with the space, so that every process builds the same configs.
    padding: dict[str, Any] | None = None
    # Knobs of the file not searched here ([precision] without a contract): stored with the
    # space all the same, so that a process reading it back says why they are not searched.
    left_out: tuple[Knob, ...] = field(default=(), compare=False)

    @property
    def searches_numerics(self) -> bool:
        """The opt-in ``[numerics]`` group is part of the search."""
        return any(k.numerics for k in self.knobs)

    @cached_property
    def size(self) -> int:
        """How many distinct configurations the space holds (inactive knobs count once)."""
        return self._plan.count(self._context)

    def size_leaving(self, leave: Collection[str]) -> int:
        """How many distinct configurations the space holds with the knobs in ``leave`` (by
        param, e.g. ``inductor.freezing``) left to torch, as :meth:`suggest` leaves them."""
        return self._plan.count(self._context, frozenset(leave)) if leave else self.size

    @cached_property
    def _plan(self) -> _graph.Plan:
        return _graph.make_plan(self.knobs)

    @cached_property
    def _context(self) -> dict[str, Any]:
        return _build.make_context(
            self.device, self.workload, list(self.knobs), self.accuracy_contract,
            self.padding is not None,
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """The resolved space (``extends`` merged), in the file format; stored with the study."""
        tables: dict[str, Any] = {"name": self.name}
        if self.description:
            tables["description"] = self.description
        if self.searches_numerics:
            tables["allow_numerics_changes"] = True
        if self.accuracy_contract:
            tables["accuracy_contract"] = True
        if self.padding is not None:
            tables["padding"] = self.padding
        for knob in (*self.knobs, *self.left_out):
            group = tables.setdefault("numerics", {}) if knob.numerics else tables
            group.setdefault(knob.layer, {})[knob.name] = knob.to_value()
        # Presets naming knobs or values the space leaves out here ([precision] without a
        # contract, a backend not installed) are not stored: they cannot be measured, and a
        # stored space names only what it offers.
        by_param = {k.param: k for k in self.knobs}
        table = {
            name: values
            for name, values in self.preset_table.items()
            if isinstance(values, dict)
            and all(p in by_param and by_param[p].offers(v) for p, v in values.items())
        }
        if table:  # a list: the order is kept where stored keys are sorted
            tables["presets"] = _presets.as_list(table)
        if self.unsafe_knobs:
            tables[_unsafe.KEY] = {"knobs": list(self.unsafe_knobs)}
        return tables

    def content_hash(self) -> str:
        """First 16 hex digits of the sha256 of :meth:`to_dict` (the description and presets
        left out: they change which configurations come first, not which exist)."""
        skip = ("description", "presets")
        content = {k: v for k, v in self.to_dict().items() if k not in skip}
        text = json.dumps(content, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def suggest(self, trial: optuna.Trial, leave: Collection[str] = ()) -> CompileConfig:
        """Draws one configuration, define-by-run: a knob whose condition is false is not
        suggested (not an Optuna param of the trial) and not in the configuration; nor is a
        knob named in ``leave`` (by its param, e.g. ``inductor.freezing``), which is left to
        torch (its default, or the mode's value)."""

        def pick(knob: Knob) -> Any:
            return _graph.LEAVE if knob.param in leave else knob.draw(trial)

        return config_from_values(self._plan.assign(pick, self._context), self.padding)

    def config_from_params(self, params: dict[str, Any]) -> CompileConfig:
        """The configuration of a finished trial, from its Optuna params (fixed knobs added)."""

        def pick(knob: Knob) -> Any:
            return knob.from_param(params[knob.param]) if knob.param in params else knob.first()

        return config_from_values(self._plan.assign(pick, self._context), self.padding)

    def preset(self, name: str) -> _presets.Preset | None:
        return next((p for p in self.presets if p.name == name), None)

    def combine(self, names: Sequence[str]) -> _presets.Preset | None:
        """The presets named, as one (``"a & b"``): every knob each of them sets. None where
        a name is no preset of this space, two of them set one knob apart (two modes), a knob
        one sets is off under another's (``freezing`` under the OpenVINO backend), or they run
        on two backends: a backend's levers are its own (bf16 autocast around OpenVINO, which
        has its own inference precision, left a Llama's outputs at cosine 0.85)."""
        found = [self.preset(name) for name in names]
        presets = [p for p in found if p is not None]
        if len(presets) < len(found) or len({self.preset_config(p).backend for p in presets}) > 1:
            return None
        values: dict[str, Any] = {}
        for preset in presets:
            for param, value in preset.values.items():
                if param in values and values[param] != value:
                    return None
                values[param] = value
        merged = _presets.Preset(" & ".join(names), values)
        _, inactive = _presets.assign(merged, self._plan, self._context)
        return None if inactive else merged

    def preset_params(
        self, preset: _presets.Preset
    ) -> tuple[dict[str, Any], dict[str, optuna.distributions.BaseDistribution]]:
        """The Optuna params (and their distributions) of ``preset`` as the sampler would have
        drawn it: every active knob at the value the preset gives it, the mode's or torch's
        where it names none (see :func:`autotune.space._presets.assign`)."""
        import optuna

        values, _ = _presets.assign(preset, self._plan, self._context)
        fixed = optuna.trial.FixedTrial(values)
        for knob in self._plan.order:
            if knob.param in values:
                knob.draw(fixed)  # type: ignore[arg-type]
        return dict(fixed.params), dict(fixed.distributions)

    def preset_config(self, preset: _presets.Preset) -> CompileConfig:
        """The configuration ``preset`` compiles, the whole model: exactly the knobs it names,
        everything else as torch (and the preset's mode) leaves it, as a user trying it by
        hand would write ``torch.compile(model, mode=..., options=...)``."""
        return config_from_values(dict(preset.values), self.padding)

    def relaxes_numerics(self, config: CompileConfig) -> bool:
        """True when ``config`` changes numerics on purpose: it sets a numerics-changing knob
        (one of the ``[numerics]`` group, or a knob known to change numerics) to a value other
        than torch's default, or a lower precision (see
        :attr:`~autotune.runtime.config.CompileConfig.changes_precision`)."""
        numerics = {k.param for k in self.knobs if k.numerics} | NUMERICS_KNOBS
        return sets_numerics_knob(config, numerics) or config.changes_precision


def config_from_values(
    values: dict[str, Any], padding: dict[str, Any] | None = None
) -> CompileConfig:
    """Builds a CompileConfig; the mode preset is expanded into options so that knobs combine,
    and a shape plan carries the model's ``padding`` declaration."""
    import torch._dynamo.config
    import torch._functorch.config
    import torch._inductor.config

    compile_ = {k.split(".", 1)[1]: v for k, v in values.items() if k.startswith("compile.")}
    backend = compile_.get("backend", "inductor")
    mode = compile_.get("mode", "default")
    dynamic = compile_.get("dynamic", "auto")
    options: dict[str, Any] = {}
    if backend == "inductor":
        options = dict(torch._inductor.list_mode_options(mode))
        options.update(_layer(values, "inductor"))
        options = _non_default(options, torch._inductor.config)
    elif backend == "openvino":
        # Pinned unless searched: OpenVINO's CPU plugin computes in bf16 on AMX by default.
        options = {"INFERENCE_PRECISION_HINT": "f32", **_layer(values, "openvino")}
    config = CompileConfig(
        backend=backend,
        mode=mode if backend == "inductor" else "default",
        dynamic=None if dynamic == "auto" else bool(dynamic),
        fullgraph=bool(compile_.get("fullgraph", False)),
        options=options,
        dynamo=_non_default(_layer(values, "dynamo"), torch._dynamo.config),
        precision=_levers.chosen("precision", _layer(values, "precision")),
        train=_levers.chosen("train", _layer(values, "train")),
        functorch=_non_default(_layer(values, "functorch"), torch._functorch.config),
        shapes=_shape_plan(_levers.chosen("shapes", _layer(values, "shapes")), padding),
    )
    # The generate workload's prefill compiled: a plan in parts (eager's is for_generate's own).
    prefill = _levers.chosen("generate", _layer(values, "generate")).get("prefill")
    return config if prefill is None else for_generate(config, prefill)


def _shape_plan(chosen: dict[str, Any], padding: dict[str, Any] | None) -> dict[str, Any]:
    """A config's ``shapes``: the plan and compile threshold chosen, with the declaration they
    apply (none without one: the space's build refuses a plan a study without a declaration
    could draw)."""
    if not chosen or padding is None:
        return {}
    return {"plan": chosen.get("plan", "auto"), **chosen, **padding}


def _non_default(values: dict[str, Any], config: Any) -> dict[str, Any]:
    """Drops settings equal to torch's default, so equal compiles get equal config hashes."""
    defaults = config.get_config_copy()
    return {k: v for k, v in values.items() if k not in defaults or defaults[k] != v}


def load_space(
    name_or_path: str,
    device: str,
    *,
    workload: str = "infer",
    allow_numerics_changes: bool = False,
    accuracy_contract: bool = False,
    padding: dict[str, Any] | None = None,
) -> SearchSpace:
    """Reads, validates (against the installed torch) and returns a search space.

    Args:
        name_or_path: A built-in space (``cpu``, ``cuda``, ``quick``) or a ``.toml`` path.
        device: ``cpu``, ``cuda`` or ``cuda:N``: validation and conditions depend on it.
        workload: What is measured; conditions may read it.
        allow_numerics_changes: Also search the ``[numerics]`` group.
        accuracy_contract: The study states an accuracy contract: also search the
            ``[precision]`` knobs (see :mod:`autotune.space._levers`).
        padding: The model's padding declaration (:mod:`autotune.runtime.shapes`): the
            ``[shapes]`` plan is searched, and conditions read ``padding`` as true.

    Raises:
        SpaceError: Listing every problem of the file (and of the spaces it extends) at once.

    Example:
        >>> space = load_space("quick", "cpu")  # doctest: +SKIP
        >>> space.suggest(optuna.create_study().ask()).brief()  # doctest: +SKIP
    """
    path = _file.resolve(name_or_path)
    raw, problems = _extends.resolve(_file.read(path), path.parent)
    if padding is not None:
        raw = {**raw, "padding": padding}
    builtin = path.resolve().parent == _file.BUILTIN_DIR.resolve()
    return _make(
        raw, problems, device, str(path), workload, allow_numerics_changes, None,
        contract=accuracy_contract, builtin=builtin,
    )  # fmt: skip


def space_from_dict(
    raw: dict[str, Any],
    device: str,
    source: str = "<dict>",
    *,
    workload: str = "infer",
    allow_numerics_changes: bool = False,
    allow_unsafe_knobs: Collection[str] = (),
) -> SearchSpace:
    """A space from its dict form: a stored :meth:`SearchSpace.to_dict`, read from a study's
    database row. Such data names no file: ``extends`` is refused (a stored space has it
    merged already), and its ``[unsafe]`` table counts only for the knobs that
    ``allow_unsafe_knobs`` (the operator's command line) names too.

    Raises:
        SpaceError: Listing every problem at once.
    """
    problems = []
    if isinstance(raw, dict) and ("extends" in raw or "remove" in raw):
        problems.append(
            "extends/remove name other space files, which a space read from data may not; a "
            "stored space has them merged already"
        )
        raw = {k: v for k, v in raw.items() if k not in ("extends", "remove")}
    vouched = tuple(allow_unsafe_knobs)
    return _make(raw, problems, device, source, workload, allow_numerics_changes, vouched)


def _make(
    raw: dict[str, Any],
    problems: list[str],
    device: str,
    source: str,
    workload: str,
    allow_numerics: bool,
    vouched: Collection[str] | None,
    *,
    contract: bool = False,
    builtin: bool = False,
) -> SearchSpace:
    built = _build.build(raw, device, workload, allow_numerics, vouched, contract, builtin)
    problems = problems + built.problems
    if problems:
        count = f"{len(problems)} problem{'s' if len(problems) > 1 else ''}"
        listed = "\n".join(f"  - {p}" for p in problems)
        raise SpaceError(
            f"The search space {source} cannot be used ({count}):\n{listed}\nFix the space; "
            "`autotune spaces --show NAME` prints a built-in space with the type and default "
            "of each knob, and `torch._inductor.list_options()` lists the Inductor knobs of the "
            "installed torch."
        )
    return SearchSpace(
        name=str(raw.get("name") or Path(source).stem),
        knobs=tuple(built.knobs),
        notes=tuple(built.notes),
        description=str(raw.get("description", "")),
        device=device,
        workload=workload,
        presets=tuple(built.presets),
        preset_table=dict(_presets.as_table(raw.get("presets")) or {}) if not problems else {},
        unsafe_knobs=built.unsafe_knobs,
        accuracy_contract=contract or raw.get("accuracy_contract") is True,
        padding=raw.get("padding") if not problems else None,
        left_out=tuple(built.left_out),
    )


def _layer(values: dict[str, Any], layer: str) -> dict[str, Any]:
    prefix = f"{layer}."
    return {k[len(prefix) :]: v for k, v in values.items() if k.startswith(prefix)}


__all__ = ["Knob", "SearchSpace", "SpaceError", "load_space", "space_from_dict"]
