"""Building an AOTInductor package for a best config (see :mod:`autotune.runtime.aot`, which
loads one in production): export, compile without the weights, load back, check against eager.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.utils._pytree as pytree

from autotune._atomic import replacing
from autotune.measure.accuracy import clone_outputs, compare_outputs
from autotune.runtime.aot import (
    KIND,
    METADATA_KEY,
    PackagedModule,
    describe_tensor,
    frozen,
    load_package,
    named_tensors,
    one_line,
    torch_lacks,
    trim,
)
from autotune.runtime.cache import sha256_of
from autotune.runtime.config import CompileConfig
from autotune.runtime.fingerprint import weights_sha256

if TYPE_CHECKING:
    from autotune.workload import Call


# Keep every weight out of the package: not serialized, and not inlined into the code either.
_WITHOUT_WEIGHTS = {
    "aot_inductor.package_constants_in_so": False,
    "always_keep_tensor_constants": True,
}


class PackageError(Exception):
    """No package can be built for this config; ``str(e)`` is one line saying why (shown to
    users as 'no AOTInductor package: <why>')."""


def why_not_packaged(
    config: CompileConfig, calls: list[Call], graph_breaks: int | None
) -> str | None:
    """Why no package is worth trying for ``config``, in one line, from static facts only (no
    export); None when it is worth trying. ``graph_breaks`` None means unknown."""
    scope = config.scope
    if config.backend != "inductor":
        return f"the backend is {config.backend!r}, but a package is compiled by Inductor"
    if config.precision:
        return (
            "the config sets precision (an autocast region, a matmul precision around each "
            "call, cast or quantized weights), which a package cannot carry"
        )
    if scope.compile != ("",):
        return f"the scope is regional ({', '.join(scope.compile)}), not the whole model"
    if scope.disable:
        return f"the scope keeps {', '.join(scope.disable)} eager inside the compiled model"
    if graph_breaks:
        return f"the model runs as {graph_breaks + 1} graphs ({graph_breaks} graph breaks)"
    shape_sets = len({_shapes(call) for call in calls})
    if shape_sets > 1 and config.dynamic is False:
        return (
            f"the calls have {shape_sets} distinct input shapes but the config is "
            "dynamic=False, and one static package serves one shape set"
        )
    lacking = torch_lacks(dynamic=shape_sets > 1, frozen=frozen(config))
    if lacking:
        return f"torch {torch.__version__} cannot package this model ({lacking})"
    return None


def build_package(
    model: torch.nn.Module,
    calls: list[Call],
    config: CompileConfig,
    package_path: Path,
    *,
    relaxed: bool = False,
    allow_unsafe_knobs: bool | Collection[str] = False,
) -> dict[str, Any]:
    """Exports ``model`` on one call (the dims that differ across calls dynamic unless
    ``config.dynamic`` is False, traced on a call where they are all above 1), compiles it to
    ``package_path`` without its weights with ``config.options``, loads it back with the
    model's weights and compares it with eager on every call.

    Returns:
        The best-config file's entry for it, without ``valid_for``.

    Raises:
        ConfigError: The config does not fit this torch, or sets knobs refused from data
            that ``allow_unsafe_knobs`` does not name (see :func:`autotune.apply`).
        PackageError: Export, compile or load failed, or the outputs differ from eager; the
            package is then not written (a file already at ``package_path`` is left as it
            was).
    """
    from autotune.runtime.knobs import check_config

    check_config(config, allow_unsafe_knobs)
    why = why_not_packaged(config, calls, None)
    if why:
        raise PackageError(why)
    with torch.no_grad():
        expected = [clone_outputs(model(*call.args, **call.kwargs)) for call in calls]
        program = _stage("torch.export failed", _export, model, calls, config.dynamic)
        options = dict(config.options)
        weights: dict[str, Any] = {"weights": "embedded", "weights_sha256": weights_sha256(model)}
        if not frozen(config):
            options.update(_WITHOUT_WEIGHTS)
            constants = _describe_constants(model, program)
            options["aot_inductor.metadata"] = {METADATA_KEY: constants}
            weights = {"weights": "from-model"}
        # Built and checked under a temporary name, then renamed: the package it replaces
        # serves until this one is proven.
        with replacing(package_path) as tmp:
            _stage("AOTInductor failed", _compile, program, tmp, options)
            entry = {
                "kind": KIND,
                "path": package_path.name,
                "sha256": sha256_of(tmp),
                "bytes": tmp.stat().st_size,
                **weights,
            }
            packaged = _stage("the package does not load", load_package, entry, tmp, model)
            _check_outputs(packaged, calls, expected, relaxed)
    return entry


def _describe_constants(model: torch.nn.Module, program: Any) -> str:
    """What the package expects of the model's tensors, as JSON for its metadata: each FQN's
    dtype, device and shape, and which FQNs were one tensor (tied) when it was exported."""
    signature = program.graph_signature
    used = [*signature.parameters, *signature.buffers]
    tensors = named_tensors(model)
    unknown = [fqn for fqn in used if fqn not in tensors]
    if unknown:
        raise PackageError(
            f"the exported graph names tensors the model does not ({', '.join(unknown[:5])})"
        )
    groups: dict[int, list[str]] = {}
    for fqn in used:
        groups.setdefault(id(tensors[fqn]), []).append(fqn)
    ties = [group for group in groups.values() if len(group) > 1]
    return json.dumps({"tensors": {f: describe_tensor(tensors[f]) for f in used}, "ties": ties})


def _shapes(call: Call) -> tuple[tuple[int, ...], ...]:
    leaves = pytree.tree_leaves((call.args, call.kwargs))
    return tuple(tuple(t.shape) for t in leaves if isinstance(t, torch.Tensor))


def _export(model: torch.nn.Module, calls: list[Call], dynamic: bool | None) -> Any:
    first: Call = calls[0]
    dynamic_shapes: Any = None
    if dynamic is not False and len({_shapes(call) for call in calls}) > 1:
        first = _tracing_call(calls)
        dynamic_shapes = torch.export.AdditionalInputs()
        for call in calls:
            if call is not first:
                dynamic_shapes.add(tuple(call.args), dict(call.kwargs))
    program = torch.export.export(
        model, tuple(first.args), dict(first.kwargs), dynamic_shapes=dynamic_shapes, strict=False
    )
    constants = [
        spec.target
        for spec in program.graph_signature.input_specs
        if spec.kind == torch.export.graph_signature.InputKind.CONSTANT_TENSOR
    ]
    if constants:
        raise PackageError(
            f"the graph holds tensors that are neither parameters nor buffers "
            f"({', '.join(map(str, constants[:5]))}), so they cannot come from the model; "
            "register them as buffers"
        )
    return program


def _tracing_call(calls: list[Call]) -> Call:
    """The call to export on: export specializes a dim of size 0 or 1, so the first call whose
    dims that vary across calls are all above 1, else the first call."""
    sizes = [[n for shape in _shapes(call) for n in shape] for call in calls]
    if len({len(s) for s in sizes}) > 1:
        return calls[0]
    varying = [d for d in range(len(sizes[0])) if len({s[d] for s in sizes}) > 1]
    fits = (c for c, s in zip(calls, sizes, strict=True) if all(s[d] > 1 for d in varying))
    return next(fits, calls[0])


def _compile(program: Any, package_path: Path, options: dict[str, Any]) -> None:
    torch._inductor.aoti_compile_and_package(
        program, package_path=str(package_path), inductor_configs=options
    )


def _check_outputs(
    packaged: PackagedModule, calls: list[Call], expected: list[Any], relaxed: bool
) -> None:
    for i, (call, want) in enumerate(zip(calls, expected, strict=True)):
        try:
            got = packaged(*call.args, **call.kwargs)
        except Exception as e:
            raise PackageError(f"the package fails on call {i + 1}: {one_line(e)}") from e
        report = compare_outputs(want, got, relaxed=relaxed)
        if not report.ok:
            raise PackageError(
                f"its outputs differ from eager on call {i + 1} of {len(calls)}: "
                f"{trim(report.detail)}"
            )


def _stage(what: str, fn: Any, *args: Any) -> Any:
    """Runs ``fn(*args)``; any failure but a PackageError becomes one, prefixed with ``what``."""
    try:
        return fn(*args)
    except PackageError:
        raise
    except Exception as e:
        raise PackageError(f"{what}: {one_line(e)}") from e
