"""Correctness gate: does the compiled function compute what eager computes?

Outputs are flattened with torch's pytree: tuples, lists, dicts, namedtuples,
``torch.return_types`` and every registered type (a ``ModelOutput`` of transformers, say). The
two structures must agree node for node (types, keys in their order, lengths), then the leaves
are compared in order. Dataclasses and plain objects (state in ``__dict__``, no ``__eq__`` of
their own, not callable) that pytree sees as leaves are walked field by field or attribute by
attribute: a ``DynamicCache`` of transformers, not registered with pytree, is compared by its
key/value tensors. Other leaves are compared with ``==``.

An element passes when ``|actual - expected| <= atol + rtol * |expected|`` (the rule of
``torch.isclose``), with ``(rtol, atol)`` by dtype:

| dtype | rtol | atol | why |
| --- | --- | --- | --- |
| float64 | 1e-7 | 1e-7 | as ``torch.testing`` |
| float32 | 1e-4 | 1e-4 | looser than ``torch.testing`` (1.3e-6, 1e-5) on purpose, see below |
| bfloat16 | 1.6e-2 | 1e-2 | 8-bit significand: one rounding is up to 3.9e-3 relative |
| float16 | 1e-3 | 1e-3 | 11-bit significand: one rounding is up to 4.9e-4 relative |
| complex128, complex64, complex32 | | | as float64, float32, float16, on the modulus |
| integers, bool | 0 | 0 | exact |

Float32 is looser than ``torch.testing`` because a correct compiled program does not round like
eager: Inductor fuses ops (an intermediate kept in registers skips a rounding), splits and
reorders reductions, and C++/Triton may contract ``a * b + c`` into one FMA. Over a long reduction
the differences reach ~1e-5 relative, and more where terms cancel; the default tolerances of
``torch.testing`` would fail such programs. A wrong kernel misses by far more than 1e-4.

``relaxed=True`` multiplies float tolerances by 10, for knobs that relax numerics on purpose
(fast math, TF32). NaN in ``actual`` passes only where ``expected`` has NaN; infinities must
match exactly. Python floats are compared with the float32 tolerances; ints, bools and strings
exactly.

``tolerance=(rtol, atol)`` replaces the table for every floating dtype, and
``float_dtypes_may_differ=True`` compares a float tensor with one of another float dtype (bf16
autocast returns bf16 where eager returns float32), and lets a ``torch.dtype`` attribute of a
walked object (a KV cache layer's ``dtype``) be another float dtype too: both are how an
accuracy contract the user states (:mod:`autotune.measure._contract`) is checked; ``(inf, inf)``
judges no float element, except that a non-finite value must be where eager has the same one.
Every comparison also reports the lowest cosine similarity of a float tensor pair (flattened,
in float64).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

import torch
import torch.utils._pytree as pytree

from autotune.measure._tally import Tally, count_differences, tensor_failure, tensor_mismatch

TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-4),
    torch.bfloat16: (1.6e-2, 1e-2),
    torch.float16: (1e-3, 1e-3),
    torch.complex128: (1e-7, 1e-7),
    torch.complex64: (1e-4, 1e-4),
    torch.complex32: (1e-3, 1e-3),
}
"""``(rtol, atol)`` per floating dtype; see the module docstring for the reasons."""

_RELAXED_FACTOR = 10.0


@dataclasses.dataclass(frozen=True)
class AccuracyReport:
    """Result of :func:`compare_outputs`.

    Attributes:
        ok: Every leaf matched within tolerance and the structures agree.
        max_abs_diff: Largest ``|actual - expected|`` over all compared elements (inf where a
            NaN or infinity does not match).
        max_rel_diff: Largest ``|actual - expected| / |expected|`` over the same elements.
        detail: Empty when ``ok``; otherwise one line naming the first failing leaf by its path
            (like ``out[0]["logits"]``) and what failed.
        tensors: How many tensor pairs were compared element by element: evidence of what the
            gate saw (a KV cache of 2 layers adds 4).
        cosine: The lowest cosine similarity of a floating tensor pair, flattened (1.0 with
            none; NaN where a NaN or infinity does not match).
        dtype_changes: Float tensors compared with a tensor of another float dtype (only with
            ``float_dtypes_may_differ``), e.g. ``"out[0]: float32 -> bfloat16"``.
    """

    ok: bool
    max_abs_diff: float
    max_rel_diff: float
    detail: str
    tensors: int = 0
    cosine: float = 1.0
    dtype_changes: tuple[str, ...] = ()


def tolerance_for(dtype: torch.dtype, *, relaxed: bool = False) -> tuple[float, float]:
    """Return ``(rtol, atol)`` for ``dtype``: ``(0.0, 0.0)`` (exact) for integers and bool."""
    if not (dtype.is_floating_point or dtype.is_complex):
        return 0.0, 0.0
    if dtype not in TOLERANCES:
        raise ValueError(
            f"a tolerance must be defined for every floating dtype compared, but {dtype} has "
            f"none; add it to TOLERANCES (it lists {', '.join(map(str, TOLERANCES))})."
        )
    rtol, atol = TOLERANCES[dtype]
    factor = _RELAXED_FACTOR if relaxed else 1.0
    return rtol * factor, atol * factor


def compare_outputs(
    expected: Any,
    actual: Any,
    *,
    relaxed: bool = False,
    tolerance: tuple[float, float] | None = None,
    float_dtypes_may_differ: bool = False,
) -> AccuracyReport:
    """Compare the output of a compiled function with the eager one.

    Both outputs are flattened with torch's pytree; their structures must agree, then the leaves
    are compared pairwise (see the module docstring for what is walked). Tensors must agree in
    shape, dtype and device; their values are compared on CPU in float64 (complex128) with
    :data:`TOLERANCES`.

    Args:
        expected: The eager output.
        actual: The compiled output (clone it first with :func:`clone_outputs` if the compiled
            code may reuse its output buffers, as CUDA graphs do).
        relaxed: Multiply float tolerances by 10.
        tolerance: ``(rtol, atol)`` for every floating dtype instead of :data:`TOLERANCES`.
        float_dtypes_may_differ: A float tensor may be compared with one of another float
            dtype (listed in ``dtype_changes``).

    Example:
        >>> compare_outputs({"y": torch.ones(2)}, {"y": torch.ones(2) + 1e-6}).ok
        True
    """
    walk = _Walk(relaxed, tolerance, float_dtypes_may_differ)
    walk.compare(expected, actual, "out")
    return AccuracyReport(
        not walk.failure,
        walk.max_abs,
        walk.max_rel,
        walk.failure,
        walk.tensors,
        walk.cosine,
        tuple(walk.dtype_changes),
    )


def clone_outputs(obj: Any) -> Any:
    """Return ``obj`` with every tensor leaf detached and cloned, containers rebuilt.

    Pytree nodes are rebuilt by their registered unflatten; dataclasses and plain objects (a
    ``DynamicCache``) are copied with their fields or attributes cloned.
    """
    return pytree.tree_map(_clone_leaf, obj)


def _clone_leaf(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone()
    if isinstance(obj, MutableMapping):  # a subclass pytree does not know
        cloned = copy.copy(obj)
        for key, value in obj.items():
            cloned[key] = clone_outputs(value)
        return cloned
    if isinstance(obj, (list, tuple)):  # subclasses, and structseqs outside torch.return_types
        return type(obj)([clone_outputs(item) for item in obj])
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {f.name: clone_outputs(getattr(obj, f.name)) for f in _init_fields(obj)}
        return dataclasses.replace(obj, **changes)
    if _plain_object(obj):
        cloned = copy.copy(obj)
        vars(cloned).update({name: clone_outputs(value) for name, value in vars(obj).items()})
        return cloned
    return obj


def _fields(obj: Any) -> dict[str, Any]:
    return {field.name: getattr(obj, field.name) for field in dataclasses.fields(obj)}


def _init_fields(obj: Any) -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(obj) if f.init]


class _Walk:
    """Walks two outputs side by side, keeping the worst differences and the first failure."""

    def __init__(
        self,
        relaxed: bool,
        tolerance: tuple[float, float] | None = None,
        float_dtypes_may_differ: bool = False,
    ) -> None:
        self.relaxed = relaxed
        self.tolerance = tolerance
        self.float_dtypes_may_differ = float_dtypes_may_differ
        self.max_abs = 0.0
        self.max_rel = 0.0
        self.cosine = 1.0
        self.tensors = 0
        self.failure = ""
        self.dtype_changes: list[str] = []

    def tolerance_for(self, dtype: torch.dtype) -> tuple[float, float]:
        if self.tolerance is not None and (dtype.is_floating_point or dtype.is_complex):
            return self.tolerance
        return tolerance_for(dtype, relaxed=self.relaxed)

    def fail(self, path: str, message: str) -> None:
        if not self.failure:
            self.failure = f"{path}: {message}"

    def compare(self, expected: Any, actual: Any, path: str) -> None:
        expected_leaves, expected_spec = _flatten(expected)
        actual_leaves, actual_spec = _flatten(actual)
        if expected_spec != actual_spec:
            where, message = _structure_difference(expected, actual)
            self.fail(path + where, message)
            return
        for (where, left), (_, right) in zip(expected_leaves, actual_leaves, strict=True):
            self.leaf(left, right, path + where)

    def leaf(self, expected: Any, actual: Any, path: str) -> None:
        """Compares two pytree leaves; a dataclass, plain object, or mapping or sequence of a
        type pytree does not know, is walked in turn."""
        if isinstance(expected, torch.Tensor) and isinstance(actual, torch.Tensor):
            self.tensor(expected, actual, path)
        elif type(expected) is not type(actual):
            self.fail(path, f"type differs: expected {_type(expected)}, got {_type(actual)}")
        elif isinstance(expected, Mapping):  # a subclass pytree does not know
            self.mapping(expected, actual, path)
        elif isinstance(expected, (list, tuple)):
            self.sequence(expected, actual, path)
        elif dataclasses.is_dataclass(expected) and not isinstance(expected, type):
            self.mapping(_fields(expected), _fields(actual), path, attributes=True)
        elif isinstance(expected, (float, complex)):
            self.scalar(expected, actual, path)
        elif _plain_object(expected):
            self.mapping(vars(expected), vars(actual), path, attributes=True)
        elif isinstance(expected, torch.dtype) and self.float_dtype_change(expected, actual):
            pass  # a cache records its tensors' dtype: autocast changes both (listed by them)
        elif not _equal(expected, actual):
            self.fail(path, f"{_type(expected)} differs: expected {expected!r}, got {actual!r}")

    def float_dtype_change(self, expected: torch.dtype, actual: torch.dtype) -> bool:
        """A float dtype where eager has another one, allowed by ``float_dtypes_may_differ``
        (the ``dtype`` a transformers cache layer keeps beside its bf16 keys and values)."""
        floats = expected.is_floating_point and actual.is_floating_point
        return self.float_dtypes_may_differ and floats

    def mapping(
        self,
        expected: Mapping[Any, Any],
        actual: Mapping[Any, Any],
        path: str,
        attributes: bool = False,
    ) -> None:
        missing = [key for key in expected if key not in actual]
        unexpected = [key for key in actual if key not in expected]
        if missing or unexpected:
            what = "attributes" if attributes else "keys"
            self.fail(path, f"{what} differ: missing {missing}, unexpected {unexpected}")
        for key, value in expected.items():
            if key in actual:
                where = f"{path}.{key}" if attributes else f"{path}[{_key(key)}]"
                self.compare(value, actual[key], where)

    def sequence(self, expected: Any, actual: Any, path: str) -> None:
        if len(expected) != len(actual):
            self.fail(path, _length_differs(expected, len(expected), len(actual)))
            return
        for index, (left, right) in enumerate(zip(expected, actual, strict=True)):
            self.compare(left, right, f"{path}[{index}]")

    def scalar(self, expected: float | complex, actual: float | complex, path: str) -> None:
        rtol, atol = self.tolerance_for(torch.float32)
        dtype = torch.complex128 if isinstance(expected, complex) else torch.float64
        pair = torch.tensor([expected], dtype=dtype), torch.tensor([actual], dtype=dtype)
        tally = count_differences(*pair, rtol, atol)
        self.record(tally)
        if tally.bad:
            self.fail(
                path,
                f"{_type(expected)} outside tolerance (rtol={rtol:.3g}, atol={atol:.3g}): "
                f"abs diff {tally.max_abs:.3g}, rel diff {tally.max_rel:.3g}; "
                f"expected {expected!r}, got {actual!r}",
            )

    def tensor(self, expected: torch.Tensor, actual: torch.Tensor, path: str) -> None:
        mismatch = tensor_mismatch(expected, actual, self.float_dtypes_may_differ)
        if mismatch:
            self.fail(path, mismatch)
            return
        if expected.dtype != actual.dtype:
            self.dtype_changes.append(f"{path}: {_dtype(expected)} -> {_dtype(actual)}")
        self.tensors += 1
        rtol, atol = self.tolerance_for(expected.dtype)
        tally = count_differences(expected, actual, rtol, atol)
        self.record(tally)
        if expected.dtype.is_floating_point:
            cosine = tally.cosine()
            self.cosine = cosine if math.isnan(cosine) else min(self.cosine, cosine)
        if tally.bad:
            self.fail(path, tensor_failure(expected, actual, tally, rtol, atol))

    def record(self, tally: Tally) -> None:
        self.max_abs = max(self.max_abs, tally.max_abs)
        self.max_rel = max(self.max_rel, tally.max_rel)


def _structure_difference(expected: Any, actual: Any) -> tuple[str, str]:
    """The path below the root, and what differs, of the first node where the pytree
    structures of two outputs differ."""
    if type(expected) is not type(actual):
        return "", f"type differs: expected {_type(expected)}, got {_type(actual)}"
    expected_children, expected_spec = _children(expected)
    actual_children, actual_spec = _children(actual)
    message = _node_difference(expected, actual, expected_spec, actual_spec)
    if message:
        return "", message
    for (here, left), (_, right) in zip(expected_children, actual_children, strict=True):
        if pytree.tree_structure(left) != pytree.tree_structure(right):
            where, message = _structure_difference(left, right)
            return here + where, message
    return "", (
        f"{_type(expected)} differs in its pytree context: expected "
        f"{expected_spec.context!r}, got {actual_spec.context!r}"
    )


def _children(node: Any) -> tuple[list[tuple[str, Any]], pytree.TreeSpec]:
    """Flattens one level: every node below ``node`` counts as a leaf."""
    return _flatten(node, is_leaf=lambda child: child is not node)


def _flatten(
    tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> tuple[list[tuple[str, Any]], pytree.TreeSpec]:
    """The leaves of ``tree`` with their paths (``["logits"][0]``), and its structure. A type
    registered without key paths (no ``flatten_with_keys_fn``) still compares, its leaves
    named by position."""
    try:
        leaves, spec = pytree.tree_flatten_with_path(tree, is_leaf=is_leaf)
    except ValueError:
        plain, spec = pytree.tree_flatten(tree, is_leaf=is_leaf)
        return [(f".<leaf {i}>", leaf) for i, leaf in enumerate(plain)], spec
    return [(_keystr(keys), leaf) for keys, leaf in leaves], spec


def _node_difference(
    expected: Any, actual: Any, expected_spec: pytree.TreeSpec, actual_spec: pytree.TreeSpec
) -> str:
    """Keys or lengths that differ at this node; empty when they agree."""
    if isinstance(expected, Mapping):
        keys, other = list(expected), list(actual)
        missing = [key for key in keys if key not in other]
        unexpected = [key for key in other if key not in keys]
        if missing or unexpected:
            return f"keys differ: missing {missing}, unexpected {unexpected}"
        if keys != other:
            return f"key order differs: expected {keys}, got {other}"
    if expected_spec.num_children != actual_spec.num_children:
        return _length_differs(expected, expected_spec.num_children, actual_spec.num_children)
    return ""


def _length_differs(expected: Any, expected_length: int, actual_length: int) -> str:
    lengths = f"expected {expected_length}, got {actual_length}"
    return f"length of {_type(expected)} differs: {lengths}"


def _keystr(keys: pytree.KeyPath) -> str:
    """Like ``pytree.keystr``, with string keys in double quotes: ``["logits"][0].keys``."""
    return "".join(
        f"[{_key(key.key)}]" if isinstance(key, pytree.MappingKey) else str(key) for key in keys
    )


def _plain_object(obj: Any) -> bool:
    """An instance that keeps its state in ``__dict__`` and has no ``__eq__`` of its own (a
    KV cache of transformers, say): compared attribute by attribute."""
    own_eq: object = type(obj).__eq__
    return hasattr(obj, "__dict__") and own_eq is object.__eq__ and not callable(obj)


def _equal(expected: Any, actual: Any) -> bool:
    try:
        return bool(expected == actual)
    except (TypeError, ValueError, RuntimeError):
        return False


def _key(key: object) -> str:
    return json.dumps(key) if isinstance(key, str) else repr(key)


def _dtype(tensor: torch.Tensor) -> str:
    return str(tensor.dtype).removeprefix("torch.")


def _type(obj: object) -> str:
    return type(obj).__name__
