"""How knobs depend on each other through their conditions: order, activity, and counting."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

from autotune.space import _condition
from autotune.space._condition import CONTEXT_NAMES, Condition
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
# Inductor knobs and compile.mode mean nothing to another backend: with a backend choice they
# are suggested only when the backend is inductor.
_INDUCTOR_ONLY = _condition.parse("compile.backend == 'inductor'")
# A backend's own options mean something to that backend only.
_OPENVINO_ONLY = _condition.parse("compile.backend == 'openvino'")
_Memo = dict[tuple[int, frozenset[tuple[str, Any]]], int]


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

    def count(self, context: Mapping[str, Any], leave: Set[str] = frozenset()) -> int:
        """How many distinct assignments of the active knobs the space holds, the knobs named
        in ``leave`` (by param) left to torch: each counts once, as an inactive knob does."""
        needed = [set[str]() for _ in range(len(self.order) + 1)]
        for i in range(len(self.order) - 1, -1, -1):
            knob = self.order[i]
            reads = {n for c in self.conditions[knob.param] for n in c.names}
            needed[i] = needed[i + 1] | (reads & self.controllers)
        return self._count(0, dict(context), needed, {}, leave)

    def _count(
        self, i: int, env: dict[str, Any], needed: list[set[str]], memo: _Memo, leave: Set[str]
    ) -> int:
        if i == len(self.order):
            return 1
        key = (i, frozenset((n, _hashable(env.get(n))) for n in needed[i]))
        if key not in memo:
            knob = self.order[i]
            if knob.param in leave or not self.active(knob, env):
                memo[key] = self._count(i + 1, {**env, knob.param: None}, needed, memo, leave)
            elif knob.param in self.controllers:
                memo[key] = sum(
                    self._count(i + 1, {**env, knob.param: v}, needed, memo, leave)
                    for v in knob.values()
                )
            else:
                memo[key] = knob.count * self._count(i + 1, env, needed, memo, leave)
        return memo[key]


def make_plan(knobs: Sequence[Knob]) -> Plan:
    """The plan of a validated list of knobs."""
    params = {k.param for k in knobs}
    conditions = {k.param: _conditions(k, params) for k in knobs}
    reads = {p: {n for c in cs for n in c.names if n in params} for p, cs in conditions.items()}
    order = _topological(knobs, reads)
    controllers = frozenset(n for names in reads.values() for n in names)
    return Plan(order=tuple(order), conditions=conditions, controllers=controllers)


def condition_problems(knobs: Sequence[Knob], broken: Set[str] = frozenset()) -> list[str]:
    """Unknown names, literals no knob can take, cycles and oversized controllers; names of
    ``broken`` knobs (refused for another reason) are not checked again."""
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
    return [
        f"{p}: a knob that conditions read may hold at most {MAX_CONTROLLER_VALUES} values, "
        f"but holds {by_param[p].count}; narrow it or use choices"
        for p in sorted(controllers)
        if by_param[p].count > MAX_CONTROLLER_VALUES
    ]


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


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value
