"""AOTInductor packages for a best config: production loads compiled code instead of compiling
(torch and the standard library only).

When the winning config compiles the whole model as one graph, :func:`build_package` exports the
model (``torch.export``), compiles it with AOTInductor into ``NAME.pt2`` beside the best-config
file, loads it back and checks it against eager on every call of the workload.

The package holds the compiled code, not the weights: it is built with
``aot_inductor.package_constants_in_so=False`` (and ``always_keep_tensor_constants=True``, or
Inductor would inline small parameters and buffers into the generated code as literals).
:func:`load_package` hands the package the model's own parameters and buffers, by their FQNs,
*user-managed*: the package reads the model's tensors in place, so retrained weights of the same
architecture need no new package, and a later in-place ``load_state_dict`` is seen at once.

With ``freezing``, the weights are part of the compiled code: Inductor folds them (``2 * w``
computed once) and packs them for its GEMMs at build time, so the constants the package needs
are not the model's tensors. Such a package embeds its constants (``"weights": "embedded"``)
and records the SHA-256 of the weights it was built from; :func:`load_package` hands it nothing
and refuses a model whose weights differ (the model then compiles, and freezes its own).

Packages are inference-only: no autograd graph is recorded and outputs have no ``grad_fn``; the
model runs as it was exported (``eval()`` it first). Its code is built for the machine it was
built on (``-march=native`` on CPU), so ``valid_for`` must pin the CPU or GPU. A package holds a
shared object that runs when loaded, so one whose SHA-256 differs from the file's is refused.
"""

from __future__ import annotations

import inspect
import json
import weakref
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
import torch.utils._pytree as pytree

from autotune._atomic import replacing
from autotune.measure.accuracy import clone_outputs, compare_outputs
from autotune.runtime.cache import refuse_if_changed, sha256_of
from autotune.runtime.config import CompileConfig
from autotune.runtime.fingerprint import weights_sha256

if TYPE_CHECKING:
    from autotune.workload import Call

KIND = "aotinductor-package"
_METADATA_KEY = "autotune.constants"  # {fqn: "dtype device shape"} and tied FQNs, as JSON
# Keep every weight out of the package: not serialized, and not inlined into the code either.
_WITHOUT_WEIGHTS = {
    "aot_inductor.package_constants_in_so": False,
    "always_keep_tensor_constants": True,
}


class PackageError(Exception):
    """No package can be built for this config; ``str(e)`` is one line saying why (shown to
    users as 'no AOTInductor package: <why>')."""


class PackageMismatchError(ValueError):
    """The model does not fit the package (other architecture, dtype or device): not used."""


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
            "the config sets precision (an autocast region, a matmul precision) around each "
            "call, which a package cannot carry"
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
    lacking = _torch_lacks(dynamic=shape_sets > 1, frozen=frozen(config))
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
    from autotune.runtime.apply import check_config

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
            options["aot_inductor.metadata"] = {_METADATA_KEY: constants}
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


def frozen(config: CompileConfig) -> bool:
    """Whether ``config`` freezes the weights into the compiled code (inference only)."""
    return config.backend == "inductor" and bool(config.options.get("freezing"))


def load_package(entry: dict[str, Any], package: Path, model: torch.nn.Module) -> PackagedModule:
    """Loads the package ``entry`` (the file's ``package`` object) from ``package`` and gives it
    ``model``'s current parameters and buffers; a package that embeds its (frozen) weights gets
    nothing, once ``model``'s weights are found to be the ones it was built from.

    Raises:
        FileNotFoundError: ``package`` is not there.
        CacheRefusedError: Its SHA-256 is not the one the file records.
        PackageMismatchError: ``model`` lacks a tensor the package needs, or has it with
            another dtype, device or shape; or its weights are not those a package with
            embedded weights was built from; or this torch cannot feed a package its weights.
    """
    if not package.is_file():
        raise FileNotFoundError(
            f"the AOTInductor package {package} named by the file is not there"
        )
    refuse_if_changed(entry, package, "AOTInductor package", "a package holds shared objects")
    embedded = entry.get("weights") == "embedded"
    lacking = _torch_lacks(dynamic=False, frozen=embedded)
    if lacking:
        raise PackageMismatchError(
            f"torch {torch.__version__} cannot load this package ({lacking}); compile the "
            "model instead."
        )
    if embedded:
        _refuse_other_weights(entry, model)
        return PackagedModule(_load_runner(package), model, embedded=True)
    runner = _load_runner(package)
    return PackagedModule(runner, model, _expected_constants(runner, package))


def _refuse_other_weights(entry: dict[str, Any], model: torch.nn.Module) -> None:
    built_from = str(entry.get("weights_sha256"))
    here = weights_sha256(model)
    if here != built_from:
        raise PackageMismatchError(
            "The AOTInductor package embeds the weights it was built from (freezing folds "
            f"them into its code: sha256 {built_from[:16]}…), and this model's differ "
            f"({here[:16]}…): it would serve the other weights. Build the package from this "
            "model's weights (autotune cache export with a model file that loads them), or "
            "compile instead."
        )


def _load_runner(package: Path) -> Any:
    """The package's compiled model. ``torch._inductor.aoti_load_package`` first probes the CPU's
    vector ISA by building programs with g++, only to log a mismatch (7 s in a fresh Inductor
    cache directory, and g++ needed in production): the loader it wraps is used directly where
    this torch has it."""
    compiled_model = _compiled_model_class()
    try:
        loader = torch._C._aoti.AOTIModelPackageLoader(str(package), "model", False, 1, -1)
    except (AttributeError, TypeError):  # another torch: its public loader
        compiled_model = None
    if compiled_model is None:
        return torch._inductor.aoti_load_package(str(package))
    return compiled_model(loader)


class PackagedModule(torch.nn.Module):
    """An AOTInductor package fed with the weights of ``self._orig_mod`` (the eager model, as in
    torch.compile's OptimizedModule): ``state_dict`` and ``parameters`` reach the model.

    The package reads the model's tensors in place. Each call first checks that they still live
    where they did (``model.to(...)``, ``p.data = ...``) and ``load_state_dict(assign=True)`` is
    noticed; after assigning a new parameter object by hand, call :meth:`refresh`. A package
    that embeds frozen weights (``embedded``) reads none of the model's tensors: like a frozen
    compile, it does not see weights changed after it was loaded.
    """

    def __init__(
        self,
        runner: Any,
        model: torch.nn.Module,
        expected: dict[str, Any] | None = None,
        *,
        embedded: bool = False,
    ) -> None:
        super().__init__()
        self._orig_mod = model
        self._runner = runner
        self._expected = expected or {}
        self._embedded = embedded  # frozen weights inside the package: nothing to hand it
        self._held: list[torch.Tensor] = []
        self._pointers: list[int] = []
        self.refresh()
        ref = weakref.ref(self)
        model.register_load_state_dict_post_hook(lambda *_: _mark_stale(ref))

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if any(t.data_ptr() != p for t, p in zip(self._held, self._pointers, strict=True)):
            self.refresh()
        return self._runner(*args, **kwargs)

    def refresh(self) -> None:
        """Hands the model's current parameters and buffers to the package again (nothing
        to a package that embeds its frozen weights)."""
        if self._embedded:
            return
        fqns = list(self._runner.get_constant_fqns())
        tensors = _named_tensors(self._orig_mod)
        wanted = dict.fromkeys([*fqns, *self._expected.get("tensors", {})])
        problems = [f"{fqn}: not in the model" for fqn in wanted if fqn not in tensors]
        problems += _mismatches(self._expected, tensors)
        if problems:
            raise PackageMismatchError(
                f"The model does not fit the AOTInductor package ({'; '.join(problems[:5])}"
                f"{'; …' if len(problems) > 5 else ''}): it was built for another architecture, "
                "dtype or device. Build the package again for this model, or compile instead."
            )
        constants = {fqn: tensors[fqn] for fqn in fqns}
        try:
            self._runner.load_constants(constants, check_full_update=True, user_managed=True)
        except RuntimeError as e:
            raise PackageMismatchError(
                f"The package refuses the model's tensors ({_one_line(e)}); build the package "
                "again for this model, or compile instead."
            ) from e
        self._held = list(constants.values())  # user-managed: the package borrows them
        self._pointers = [t.data_ptr() for t in self._held]


def _mark_stale(ref: weakref.ref[PackagedModule]) -> None:
    packaged = ref()
    if packaged is not None:
        packaged._pointers = [-1] * len(packaged._held)


def _named_tensors(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    tensors: dict[str, torch.Tensor] = dict(model.named_parameters(remove_duplicate=False))
    tensors.update(model.named_buffers(remove_duplicate=False))
    return tensors


def _describe(t: torch.Tensor) -> str:
    return f"{str(t.dtype).removeprefix('torch.')} {t.device.type} {list(t.shape)}"


def _describe_constants(model: torch.nn.Module, program: Any) -> str:
    """What the package expects of the model's tensors, as JSON for its metadata: each FQN's
    dtype, device and shape, and which FQNs were one tensor (tied) when it was exported."""
    signature = program.graph_signature
    used = [*signature.parameters, *signature.buffers]
    tensors = _named_tensors(model)
    unknown = [fqn for fqn in used if fqn not in tensors]
    if unknown:
        raise PackageError(
            f"the exported graph names tensors the model does not ({', '.join(unknown[:5])})"
        )
    groups: dict[int, list[str]] = {}
    for fqn in used:
        groups.setdefault(id(tensors[fqn]), []).append(fqn)
    ties = [group for group in groups.values() if len(group) > 1]
    return json.dumps({"tensors": {f: _describe(tensors[f]) for f in used}, "ties": ties})


def _expected_constants(runner: Any, package: Path) -> dict[str, Any]:
    raw = runner.get_metadata().get(_METADATA_KEY)
    if raw is None:
        raise PackageMismatchError(
            f"The package {package} does not record the tensors it expects, so it was not built "
            "by autotune: it is not used. Build it again with autotune."
        )
    return dict(json.loads(raw))


def _mismatches(expected: dict[str, Any], tensors: dict[str, torch.Tensor]) -> list[str]:
    problems = [
        f"{fqn}: {want} expected, the model has {_describe(tensors[fqn])}"
        for fqn, want in expected.get("tensors", {}).items()
        if fqn in tensors and _describe(tensors[fqn]) != want
    ]
    for group in expected.get("ties", []):
        if len({id(tensors.get(fqn)) for fqn in group}) > 1:
            problems.append(f"{' and '.join(group)} were one tensor but are no longer tied")
    return problems


def _shapes(call: Call) -> tuple[tuple[int, ...], ...]:
    leaves = pytree.tree_leaves((call.args, call.kwargs))
    return tuple(tuple(t.shape) for t in leaves if isinstance(t, torch.Tensor))


def _torch_lacks(*, dynamic: bool, frozen: bool = False) -> str | None:
    """What this torch lacks to package a model (without its weights unless ``frozen``), else
    None."""
    from torch._inductor import config as inductor_config

    needs = {
        "torch._inductor.aoti_compile_and_package": hasattr(
            torch._inductor, "aoti_compile_and_package"
        ),
        "torch._inductor.aoti_load_package": hasattr(torch._inductor, "aoti_load_package"),
        "torch.export.AdditionalInputs": not dynamic or hasattr(torch.export, "AdditionalInputs"),
    }
    if not frozen:
        needs |= {
            "aot_inductor.package_constants_in_so": hasattr(
                inductor_config.aot_inductor, "package_constants_in_so"
            ),
            "always_keep_tensor_constants": hasattr(
                inductor_config, "always_keep_tensor_constants"
            ),
            "load_constants(user_managed=...)": _has_parameter(
                _compiled_model_class(), "load_constants", "user_managed"
            ),
        }
    missing = [name for name, present in needs.items() if not present]
    return f"it lacks {', '.join(missing)}" if missing else None


def _compiled_model_class() -> Any:
    try:
        from torch.export.pt2_archive._package import AOTICompiledModel
    except ImportError:
        try:
            from torch._inductor.package.package import AOTICompiledModel
        except ImportError:
            return None
    return AOTICompiledModel


def _has_parameter(cls: Any, method: str, parameter: str) -> bool:
    fn = getattr(cls, method, None)
    if fn is None:
        return False
    try:
        return parameter in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


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
            raise PackageError(f"the package fails on call {i + 1}: {_one_line(e)}") from e
        report = compare_outputs(want, got, relaxed=relaxed)
        if not report.ok:
            raise PackageError(
                f"its outputs differ from eager on call {i + 1} of {len(calls)}: "
                f"{_trim(report.detail)}"
            )


def _stage(what: str, fn: Any, *args: Any) -> Any:
    """Runs ``fn(*args)``; any failure but a PackageError becomes one, prefixed with ``what``."""
    try:
        return fn(*args)
    except PackageError:
        raise
    except Exception as e:
        raise PackageError(f"{what}: {_one_line(e)}") from e


def _one_line(exc: BaseException) -> str:
    """The error's first line (and its second when the first only announces it), trimmed."""
    lines = [line.strip(" -") for line in str(exc).splitlines() if line.strip(" -")]
    text = " ".join(lines[:2] if lines and lines[0].endswith(":") else lines[:1])
    return _trim(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)


def _trim(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
