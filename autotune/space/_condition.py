"""Knob conditions (``when = "compile.mode == 'max-autotune'"``): parsed, interpreted, no eval.

A condition is a Python-like expression read with :func:`ast.parse` and interpreted here over a
whitelist of node types, so a space file can never run code. It may use knob names
(``compile.mode``, ``inductor.freezing``), the context names of :data:`CONTEXT_NAMES`, literals
(strings, numbers, ``true``/``false``, ``none``, lists), ``==``, ``!=``, ``<``, ``<=``, ``>``,
``>=``, ``in``, ``not in``, ``and``, ``or``, ``not`` and parentheses. A knob that is not suggested
reads as ``none``. A condition holds at most :data:`MAX_LENGTH` characters and nests at most
:data:`MAX_DEPTH` expressions deep, so that no walk of it (checking, evaluating, printing)
outgrows the interpreter's stack.
"""

from __future__ import annotations

import ast
import functools
import operator
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

CONTEXT_NAMES = (
    "device", "workload", "cpu_vector_widths", "cpu_flags", "cuda_capability",
    "accuracy_contract", "padding", "torchao",
)  # fmt: skip
"""Names a condition may use besides knobs: the device type (``"cpu"``, ``"cuda"``), the
workload (``"infer"``, ``"train"`` or ``"generate"``: ``workload != 'train'`` for both kinds of
inference), the vector widths this CPU supports (e.g.
``[256, 512]``), this CPU's flags (``'amx_bf16' in cpu_flags``), the CUDA device's compute
capability (``cuda_capability >= [8, 0]``; none on a CPU), whether the study states an
accuracy contract, whether the model declares how its inputs pad (``padding``), and whether
torchao is installed (``torchao``: the ``[precision]`` quantize knob's schemes need it)."""

SYNTAX = (
    "conditions use knob names, device, workload, cpu_vector_widths, cpu_flags, "
    "cuda_capability, accuracy_contract, padding, torchao, literals, ==, !=, <, <=, >, >=, in, "
    "not in, and, or, not and parentheses"
)
# Far deeper than any condition a person writes (``a.b.c == 1 and not d`` nests 5 deep), far
# shallower than the interpreter's recursion limit for the walks that recurse.
MAX_DEPTH = 100
# Far longer than any condition a person writes; a longer one takes seconds to parse, in every
# process that reads the space.
MAX_LENGTH = 10_000
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
    nodes: int = field(default=1, compare=False)  # the tree's size: what evaluating it costs

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


@functools.lru_cache(maxsize=1024)
def parse(text: str) -> Condition:
    """Parses a condition (each text once: validating and counting a space read its
    conditions several times).

    Raises:
        ConditionError: Bad syntax, or a construct outside the condition language.
    """
    if len(text) > MAX_LENGTH:
        raise ConditionError(
            f"it is {len(text):,} characters long, but a condition may be at most "
            f"{MAX_LENGTH:,}; read fewer knobs, or list the values compared in one `in [...]`"
        )
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ConditionError(f"it is not valid syntax ({exc.msg}); {SYNTAX}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ConditionError(f"it cannot be read ({exc}); {SYNTAX}") from None
    depth, nodes = _shape(tree)
    if depth > MAX_DEPTH:
        raise ConditionError(
            f"it nests {depth} expressions deep (not, and, or, comparisons, dotted names), but "
            f"a condition may nest at most {MAX_DEPTH}; write it flatter (`not not x` is `x`)"
        )
    names: set[str] = set()
    _check(tree, names)
    return Condition(text=text, tree=tree, names=frozenset(names), nodes=nodes)


def _shape(tree: ast.AST) -> tuple[int, int]:
    """How deep expressions nest in the tree, and how many nodes it holds, measured without
    recursion: the parser builds trees deeper than the walks below (and :func:`ast.unparse`)
    can recurse."""
    deepest, nodes = 0, 0
    todo = [(tree, 1)]
    while todo:
        node, depth = todo.pop()
        deepest, nodes = max(deepest, depth), nodes + 1
        for child in ast.iter_child_nodes(node):
            todo.append((child, depth + isinstance(child, ast.expr)))
    return deepest, nodes


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
        raise ConditionError(f"`{_shown(node)}` is not allowed; {SYNTAX}")


def _literal(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float, str)):
        return node.value
    if isinstance(node, ast.Constant) and node.value is None:
        return None
    name = _dotted(node)
    if name in _LITERAL_NAMES:
        return _LITERAL_NAMES[name]
    raise ConditionError(f"`{_shown(node)}` is not a literal; lists hold literals only")


def _shown(node: ast.expr) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text):,} characters)"


def _dotted(node: ast.expr) -> str | None:
    """``compile.mode`` for ``Attribute(Name('compile'), 'mode')``; None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


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
