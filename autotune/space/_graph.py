"""How knobs depend on each other through their conditions: order, activity, and counting."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from autotune.space import _condition
from autotune.space._condition import CONTEXT_NAMES, Condition
from autotune.space._file import SpaceError
from autotune.space._knob import Knob, did_you_mean
from autotune.space._validate import value_problems

LEAVE = object()
"""What a ``pick`` of :meth:`Plan.assign` answers for a knob left to torch."""

CONTEXT_VALUES: dict[str, tuple[Any, ...]] = {
    "device": ("cpu", "cuda"),
    "workload": ("infer", "train", "generate"),
    "accuracy_contract": (True, False),
    "padding": (True, False),
}
MAX_CONTROLLER_VALUES = 10_000
# Counting the space (its size, and each worker's check that it is spent) keeps apart every
# combination of the knobs that conditions still read, step by step: without these bounds a
# space of 30 booleans that one condition reads passes validation and counts for days.
MAX_CONDITION_COMBINATIONS = MAX_CONTROLLER_VALUES
MAX_COUNT_STEPS = 5_000_000
# A step of the count reads a name (about 0.15 us on a 2-core EPYC); measured in steps, a
# combination costs 16 besides the names it reads (its environment), and evaluating a node of
# a condition 3.
_COMBINATION_STEPS = 16
_NODE_STEPS = 3
# Inductor knobs and compile.mode mean nothing to another backend: with a backend choice they
# are suggested only when the backend is inductor.
_INDUCTOR_ONLY = _condition.parse("compile.backend == 'inductor'")
# A backend's own options mean something to that backend only.
_OPENVINO_ONLY = _condition.parse("compile.backend == 'openvino'")
# A combination the count keeps apart: the values of the knobs it keeps, in their order.
_State = tuple[Any, ...]


@dataclass(frozen=True)
class Plan:
    """Knobs in an order where every knob comes after the knobs its conditions read."""

    order: tuple[Knob, ...]
    conditions: Mapping[str, tuple[Condition, ...]]
    controllers: frozenset[str]

    def active(self, knob: Knob, env: Mapping[str, Any]) -> bool:
        return all(c.evaluate(env) for c in self.conditions[knob.param])

    def assign(self, pick: Callable[[Knob], Any], context: Mapping[str, Any]) -> dict[str, Any]:
        """Values of the active knobs, each drawn by ``pick(knob)`` in dependency order; a knob
        ``pick`` answers :data:`LEAVE` for is left to torch (absent, and read by the conditions
        of others as an inactive knob is: None)."""
        env, values = dict(context), {}
        for knob in self.order:
            value = pick(knob) if self.active(knob, env) else LEAVE
            if value is LEAVE:
                env[knob.param] = None
            else:
                values[knob.param] = env[knob.param] = value
        return values

    def reads(self, knob: Knob) -> frozenset[str]:
        """The knobs of the plan that the conditions of ``knob`` read."""
        names = {n for c in self.conditions[knob.param] for n in c.names}
        return frozenset(names & self.controllers)

    def width(self, param: str) -> int:
        """How many values a count tells apart for a knob: its own, and none where a condition
        may switch it off."""
        return self._by_param[param].count + bool(self.conditions[param])

    @cached_property
    def kept(self) -> tuple[tuple[str, ...], ...]:
        """For each step of the count (one per knob, in order, then the end): the knobs placed
        before it that a condition of its knob or of a later one reads."""
        wanted: list[frozenset[str]] = []
        for knob in reversed(self.order):
            wanted.insert(0, self.reads(knob) | (wanted[0] if wanted else frozenset()))
        placed = [k.param for k in self.order]
        return (*(tuple(p for p in placed[:i] if p in w) for i, w in enumerate(wanted)), ())

    @cached_property
    def steps(self) -> tuple[int, ...]:
        """What each knob's step of :meth:`count` may cost at most: for every combination of
        the knobs it keeps apart, its conditions evaluated, then each value it may take (a
        knob no condition reads is taken as one) filed under the combinations of the next."""
        found = []
        for i, knob in enumerate(self.order):
            combinations = math.prod(self.width(p) for p in self.kept[i])
            branches = knob.count if knob.param in self.controllers else 1
            nodes = sum(c.nodes for c in self.conditions[knob.param])
            reads = (
                len(self.kept[i]) + _NODE_STEPS * nodes + branches * (1 + len(self.kept[i + 1]))
            )
            each = _COMBINATION_STEPS + reads
            found.append(combinations * each)
        return tuple(found)

    @cached_property
    def cost_problems(self) -> tuple[str, ...]:
        """Why counting this plan would take too long (see :data:`MAX_COUNT_STEPS`); empty
        when it is bounded."""
        wide = tuple(p for p in map(self._wide_condition, self.order) if p)
        if wide or sum(self.steps) <= MAX_COUNT_STEPS:
            return wide
        i = max(range(len(self.order)), key=self.steps.__getitem__)
        kept = self.kept[i]
        apart = (
            f", which keeps apart the {math.prod(map(self.width, kept)):,} combinations of the "
            f"knobs that its conditions and those of later knobs read ({_listed(kept)})"
            if kept
            else ""
        )
        return (
            f"{self.order[i].param}: counting the space's configurations would take about "
            f"{sum(self.steps):,} steps, more than the {MAX_COUNT_STEPS:,} allowed, most of "
            f"them at this knob{apart}; read fewer knobs in conditions, or list each knob right "
            "after the knobs its condition reads",
        )

    def count(self, context: Mapping[str, Any], leave: Set[str] = frozenset()) -> int:
        """How many distinct assignments of the active knobs the space holds, the knobs named
        in ``leave`` (by param) left to torch: each counts once, as an inactive knob does.

        Raises:
            SpaceError: Counting would take too long (a space validation did not see).
        """
        if self.cost_problems:
            raise SpaceError(f"The search space cannot be counted: {self.cost_problems[0]}")
        ways: dict[_State, int] = {(): 1}
        for i in range(len(self.order)):
            ways = self._step(i, ways, context, leave)
        return sum(ways.values())

    def _step(
        self, i: int, ways: dict[_State, int], context: Mapping[str, Any], leave: Set[str]
    ) -> dict[_State, int]:
        """The ways of the count after the knob at ``i``, by the values of the knobs kept next."""
        knob, kept, after = self.order[i], self.kept[i], self.kept[i + 1]
        out: dict[_State, int] = {}
        for state, count in ways.items():
            env = {**context, **dict(zip(kept, state, strict=True))}
            for value, times in self._values(knob, env, leave):
                env[knob.param] = value
                key = tuple(env[p] for p in after)
                out[key] = out.get(key, 0) + count * times
        return out

    def _values(
        self, knob: Knob, env: Mapping[str, Any], leave: Set[str]
    ) -> list[tuple[Any, int]]:
        """``(value, how many values read as it)`` of the knob under ``env``: None once where
        it is left or inactive, each value where a condition reads it, else all as one."""
        if knob.param in leave or not self.active(knob, env):
            return [(None, 1)]
        if knob.param in self.controllers:
            return self._each_value[knob.param]
        return [(None, knob.count)]

    def _wide_condition(self, knob: Knob) -> str:
        reads = sorted(self.reads(knob))
        combinations = math.prod(map(self.width, reads))
        if combinations <= MAX_CONDITION_COMBINATIONS:
            return ""
        return (
            f"{knob.param}: its conditions read {len(reads)} knobs ({_listed(reads)}), whose "
            f"values combine in {combinations:,} ways (a knob that a condition may switch off "
            "also reads as none), but a condition may read at most "
            f"{MAX_CONDITION_COMBINATIONS:,} combinations, since counting the space's "
            "configurations visits each; read fewer knobs, or knobs with fewer values, or split "
            "the condition between knobs"
        )

    @cached_property
    def _by_param(self) -> dict[str, Knob]:
        return {k.param: k for k in self.order}

    @cached_property
    def _each_value(self) -> dict[str, list[tuple[Any, int]]]:
        return {p: [(v, 1) for v in self._by_param[p].values()] for p in self.controllers}


def make_plan(knobs: Sequence[Knob]) -> Plan:
    """The plan of a validated list of knobs."""
    params = {k.param for k in knobs}
    conditions = {k.param: _conditions(k, params) for k in knobs}
    reads = {p: {n for c in cs for n in c.names if n in params} for p, cs in conditions.items()}
    order = _topological(knobs, reads)
    controllers = frozenset(n for names in reads.values() for n in names)
    return Plan(order=tuple(order), conditions=conditions, controllers=controllers)


def condition_problems(knobs: Sequence[Knob], broken: Set[str] = frozenset()) -> list[str]:
    """Unknown names, literals no knob can take, cycles, oversized controllers and conditions
    that would make counting the space too long; names of ``broken`` knobs (refused for
    another reason) are not checked again."""
    by_param = {k.param: k for k in knobs if k.param not in broken}
    problems: list[str] = []
    for knob in knobs:
        if knob.when is not None:
            cond = _condition.parse(knob.when)
            problems += _name_problems(knob, cond, by_param, broken)
            problems += _literal_problems(knob, cond, by_param)
    if problems or broken:
        return problems
    plan_reads = {k.param: _reads(k, by_param) for k in knobs}
    cycle = _find_cycle(plan_reads)
    if cycle:
        return [f"the conditions of {' -> '.join(cycle)} depend on each other in a cycle"]
    controllers = {n for names in plan_reads.values() for n in names}
    oversized = [
        f"{p}: a knob that conditions read may hold at most {MAX_CONTROLLER_VALUES} values, "
        f"but holds {by_param[p].count}; narrow it or use choices"
        for p in sorted(controllers)
        if by_param[p].count > MAX_CONTROLLER_VALUES
    ]
    return oversized or _cost_problems(knobs)


def _cost_problems(knobs: Sequence[Knob]) -> list[str]:
    """Why counting a space of ``knobs`` would take too long: with all of them, or without
    the [numerics] or [precision] knobs, which a study may leave out (and the rest may then
    count in another order)."""
    for numerics, precision in ((True, True), (False, True), (True, False), (False, False)):
        kept = [
            k for k in knobs
            if (numerics or not k.numerics) and (precision or k.layer != "precision")
        ]  # fmt: skip
        found = make_plan(kept).cost_problems
        if found:
            return list(found)
    return []


def static_value(knob: Knob, context: Mapping[str, Any]) -> bool | None:
    """True/False when the knob's condition reads only context names; None otherwise."""
    if knob.when is None:
        return True
    cond = _condition.parse(knob.when)
    if not cond.names <= set(CONTEXT_NAMES):
        return None
    return cond.evaluate(context)


def _conditions(knob: Knob, params: set[str]) -> tuple[Condition, ...]:
    found = [] if knob.when is None else [_condition.parse(knob.when)]
    inductor_only = knob.layer == "inductor" or knob.param == "compile.mode"
    if inductor_only and "compile.backend" in params:
        found.append(_INDUCTOR_ONLY)
    if knob.layer == "openvino":
        found.append(_OPENVINO_ONLY)
    return tuple(found)


def _reads(knob: Knob, by_param: Mapping[str, Knob]) -> set[str]:
    return {n for c in _conditions(knob, set(by_param)) for n in c.names if n in by_param}


def _name_problems(
    knob: Knob, cond: Condition, by_param: Mapping[str, Knob], broken: Set[str]
) -> list[str]:
    problems = []
    for name in sorted(cond.names):
        target = by_param.get(name)
        if name in CONTEXT_NAMES or name in broken:
            continue
        if target is None:
            known = [*by_param, *CONTEXT_NAMES]
            problems.append(
                f"{knob.param}: when names {name}, which is neither a knob of this space nor one "
                f"of {', '.join(CONTEXT_NAMES)}{did_you_mean(name, known)}"
            )
        elif target is knob:
            problems.append(f"{knob.param}: when names the knob itself")
        elif target.numerics and not knob.numerics:
            problems.append(
                f"{knob.param}: when names {name} of the opt-in [numerics] group; only knobs of "
                "that group may depend on it"
            )
    return problems


def _literal_problems(knob: Knob, cond: Condition, by_param: Mapping[str, Knob]) -> list[str]:
    """A literal the named knob can never take is a typo (``'max-autotun'``); one it can take
    but this space does not offer is fine: a space that extends this one may offer it."""
    problems = []
    for name, literal in cond.compared_literals():
        if literal is None:
            continue
        if name in by_param:
            target = by_param[name]
            refused = value_problems(target.layer, target.name, literal)
        elif name in CONTEXT_VALUES and literal not in CONTEXT_VALUES[name]:
            refused = [f"use one of {', '.join(map(repr, CONTEXT_VALUES[name]))}"]
        else:
            continue
        if refused:
            problems.append(
                f"{knob.param}: when compares {name} with {literal!r}, a value it cannot take: "
                f"{refused[0]}"
            )
    return problems


def _topological(knobs: Sequence[Knob], reads: Mapping[str, set[str]]) -> list[Knob]:
    placed: set[str] = set()
    order: list[Knob] = []
    while len(order) < len(knobs):
        ready = [k for k in knobs if k.param not in placed and reads[k.param] <= placed]
        if not ready:  # a cycle: refused by validation, kept in file order here
            ready = [k for k in knobs if k.param not in placed]
        order.append(ready[0])
        placed.add(ready[0].param)
    return order


def _find_cycle(reads: Mapping[str, set[str]]) -> list[str]:
    state: dict[str, str] = {}

    def visit(path: list[str]) -> list[str]:
        state[path[-1]] = "open"
        for nxt in sorted(reads.get(path[-1], ())):
            if state.get(nxt) == "open":
                return [*path[path.index(nxt) :], nxt]
            found = [] if nxt in state else visit([*path, nxt])
            if found:
                return found
        state[path[-1]] = "done"
        return []

    for node in reads:
        found = [] if node in state else visit([node])
        if found:
            return found
    return []


def _listed(params: Sequence[str], most: int = 4) -> str:
    shown = ", ".join(params[:most])
    return shown if len(params) <= most else f"{shown} and {len(params) - most} more"
