"""Knob conditions (``when = "compile.mode == 'max-autotune'"``): parsed, interpreted, no eval.

A condition is a Python-like expression read with :func:`ast.parse` and interpreted here over a
whitelist of node types, so a space file can never run code. It may use knob names
(``compile.mode``, ``inductor.freezing``), the context names of :data:`CONTEXT_NAMES`, literals
(strings, numbers, ``true``/``false``, ``none``, lists), ``==``, ``!=``, ``<``, ``<=``, ``>``,
``>=``, ``in``, ``not in``, ``and``, ``or``, ``not`` and parentheses. A knob that is not suggested
reads as ``none``.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

CONTEXT_NAMES = (
    "device", "workload", "cpu_vector_widths", "cpu_flags", "cuda_capability",
    "accuracy_contract", "padding",
)  # fmt: skip
"""Names a condition may use besides knobs: the device type (``"cpu"``, ``"cuda"``), the
workload (``"infer"``, ``"train"`` or ``"generate"``: ``workload != 'train'`` for both kinds of
inference), the vector widths this CPU supports (e.g.
``[256, 512]``), this CPU's flags (``'amx_bf16' in cpu_flags``), the CUDA device's compute
capability (``cuda_capability >= [8, 0]``; none on a CPU), whether the study states an
accuracy contract, and whether the model declares how its inputs pad (``padding``)."""

SYNTAX = (
    "conditions use knob names, device, workload, cpu_vector_widths, cpu_flags, "
    "cuda_capability, accuracy_contract, padding, literals, ==, !=, <, <=, >, >=, in, not in, "
    "and, or, not and parentheses"
)
_LITERAL_NAMES = {"true": True, "false": False, "none": None, "True": True, "False": False}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


class ConditionError(ValueError):
    """A condition that is not valid syntax or uses something outside the condition language."""


@dataclass(frozen=True)
class Condition:
    """A parsed ``when`` expression: the names it reads and a total, side-effect-free evaluator."""

    text: str
    tree: ast.expr = field(compare=False, repr=False)
    names: frozenset[str] = frozenset()

    def evaluate(self, env: Mapping[str, Any]) -> bool:
        """True when the condition holds; names missing from ``env`` read as ``none``."""
        return bool(_value(self.tree, env))

    def compared_literals(self) -> Iterator[tuple[str, Any]]:
        """``(name, literal)`` for every literal a name is compared with (``==``, ``in``, ...)."""
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                for left, op, right in zip(operands[:-1], node.ops, operands[1:], strict=True):
                    yield from _pair(left, op, right)


def parse(text: str) -> Condition:
    """Parses a condition.

    Raises:
        ConditionError: Bad syntax, or a construct outside the condition language.
    """
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ConditionError(f"it is not valid syntax ({exc.msg}); {SYNTAX}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ConditionError(f"it cannot be read ({exc}); {SYNTAX}") from None
    names: set[str] = set()
    _check(tree, names)
    return Condition(text=text, tree=tree, names=frozenset(names))


def _check(node: ast.expr, names: set[str]) -> None:
    if isinstance(node, ast.BoolOp):
        for value in node.values:
            _check(value, names)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        _check(node.operand, names)
    elif isinstance(node, ast.Compare):
        unknown = [op for op in node.ops if type(op) not in _COMPARE]
        if unknown:
            raise ConditionError(f"{type(unknown[0]).__name__} is not allowed; {SYNTAX}")
        for operand in [node.left, *node.comparators]:
            _check(operand, names)
    elif isinstance(node, (ast.List, ast.Tuple)):
        for element in node.elts:
            _literal(element)
    elif isinstance(node, ast.Constant):
        _literal(node)
    elif _dotted(node) is not None:
        name = _dotted(node)
        if name not in _LITERAL_NAMES:
            names.add(str(name))
    else:
        raise ConditionError(f"`{ast.unparse(node)}` is not allowed; {SYNTAX}")


def _literal(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float, str)):
        return node.value
    if isinstance(node, ast.Constant) and node.value is None:
        return None
    name = _dotted(node)
    if name in _LITERAL_NAMES:
        return _LITERAL_NAMES[name]
    raise ConditionError(f"`{ast.unparse(node)}` is not a literal; lists hold literals only")


def _dotted(node: ast.expr) -> str | None:
    """``compile.mode`` for ``Attribute(Name('compile'), 'mode')``; None for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _value(node: ast.expr, env: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.BoolOp):
        results = (bool(_value(v, env)) for v in node.values)
        return all(results) if isinstance(node.op, ast.And) else any(results)
    if isinstance(node, ast.UnaryOp):
        return not _value(node.operand, env)
    if isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        return all(
            _compare(op, _value(a, env), _value(b, env))
            for a, op, b in zip(operands[:-1], node.ops, operands[1:], strict=True)
        )
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Constant):
        return node.value
    name = str(_dotted(node))
    return _LITERAL_NAMES[name] if name in _LITERAL_NAMES else env.get(name)


def _compare(op: ast.cmpop, left: Any, right: Any) -> bool:
    """Comparisons that make no sense (``none < 3``, ``x in 5``) are false, never an error."""
    try:
        return bool(_COMPARE[type(op)](left, right))
    except TypeError:
        return False


def _pair(left: ast.expr, op: ast.cmpop, right: ast.expr) -> Iterator[tuple[str, Any]]:
    if _is_literal(left) and isinstance(op, (ast.Eq, ast.NotEq)):
        left, right = right, left
    name = _dotted(left)
    if name is None or name in _LITERAL_NAMES:
        return
    if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.List, ast.Tuple)):
        yield from ((name, _literal(e)) for e in right.elts)
    elif isinstance(op, (ast.Eq, ast.NotEq)) and _is_literal(right):
        yield name, _literal(right)


def _is_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) or _dotted(node) in _LITERAL_NAMES
