"""Apply a config to a model: the one code path shared by search trials and production.

Before anything compiles, the entry chosen for this machine is checked against what the
operator asked of it (see :mod:`autotune.runtime.signing`): its signature (refused under
``require_signature``, else a :class:`~autotune.runtime.signing.SignatureWarning` when a key is
set and does not verify it), its age (``not_before``), and the model it was tuned on: a
structure or weights hash it records that the applied model does not have is refused where a
signature is required, and warned about otherwise. Every warning and error shows what the
file says inert (:func:`autotune._printable.printable`).
"""

from __future__ import annotations

import datetime
import difflib
import functools
import itertools
import logging
import os
import warnings
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, cast

import torch
import torch._dynamo

from autotune._printable import printable
from autotune.runtime._parts import compile_in_parts, compile_region
from autotune.runtime._trust import model_differences, vouched
from autotune.runtime.config import (
    BestConfig,
    CompileConfig,
    ConfigError,
    ConfigFile,
    EnvironmentMismatchWarning,
    ScopeError,
    load,
)
from autotune.runtime.fingerprint import (
    environment_fingerprint,
    environment_mismatches,
)
from autotune.runtime.knobs import check_config, warn_if_fast_math
from autotune.runtime.quantize import change_weights
from autotune.runtime.shapes import plan_root, plan_warmup, warm_up

__all__ = ["apply", "check_config", "compile_module", "load", "warm_up"]

_log = logging.getLogger("autotune")

# (config identity, mismatch line) pairs already warned about in this process.
_WARNED: set[tuple[str, str]] = set()


def apply(
    model: torch.nn.Module,
    config: str | os.PathLike[str] | ConfigFile | BestConfig | CompileConfig | Mapping[str, Any],
    *,
    check_environment: bool = True,
    cache: bool | str | os.PathLike[str] = True,
    warmup: Any = None,
    strict: bool = False,
    allow_unsafe_knobs: bool | Collection[str] = False,
    require_signature: bool | None = None,
    not_before: str | datetime.datetime | None = None,
) -> torch.nn.Module:
    """Compiles ``model`` the way the search's winning trial did.

    The config's Inductor options are passed as ``options=``, and its Dynamo settings that
    ``torch.compile`` takes as arguments (``recompile_limit`` since torch 2.12) as arguments.
    What torch reads outside Inductor's own compile, where ``options=`` does not reach
    (``freezing`` and the CUDA-graph options, read while Dynamo traces and when a cached graph
    loads, and the other Dynamo settings), is set around each call of a compiled region: its
    first trace and compile, every recompile, and its run. torch >= 2.12 keeps those settings
    per thread, so threads calling differently tuned models never see each other's. Older
    torch keeps config process-wide: there, calls of regions that set any run one at a time,
    process-wide (a ``RuntimeWarning`` says so the first time two calls overlap).

    A config that changes the weights (``precision.weights``: a cast; ``precision.quantize``:
    torchao's quantization of its Linear layers) changes ``model``'s own, in place, before it
    compiles (see :mod:`autotune.runtime.quantize`); only a quantized config imports torchao,
    and without it is refused (:class:`~autotune.runtime.quantize.QuantizeError`, naming
    ``pip install 'autotune[quantize]'``) before anything changes.

    With ``freezing`` (inference only: under ``torch.no_grad()`` or ``inference_mode()``), the
    first call folds the model's weights into the compiled code as constants: load the weights
    before that call, since later in-place changes to them are not seen.

    Args:
        model: The eager model, already on its device. With a regional scope its children are
            replaced in place by compiled ones, so keep no other references to them.
        config: A best-config file path, a :class:`ConfigFile`, a :class:`BestConfig`, a
            :class:`CompileConfig`, or the JSON form of one (a dict with ``schema_version``
            is a best-config file). A file may hold one entry per machine (device name and
            torch version): the entry for the machine this runs on is applied; with none,
            the closest (the same device with another torch, then another device of the same
            kind: same CUDA compute capability, or any CPU) with a warning saying which and
            why; with no entry for this kind of device, the model is returned uncompiled
            with a warning (see ``strict``).
        check_environment: Compare the file's environment and model fingerprints with this
            process and model, and warn once (:class:`EnvironmentMismatchWarning`) per
            difference. The config is applied either way, unless a signature is required and
            the model differs (see ``require_signature``).
        cache: Use what the file ships to skip the cold compile, when it is valid for this
            machine (both are written by ``autotune search --save-cache``): its AOTInductor
            package (the model must be in ``eval()`` mode), loaded with the model's own
            weights so that nothing compiles at all, else its compile cache, loaded into this
            process's Inductor cache first. Both are native code that runs when loaded: they
            are loaded only when their SHA-256 is the one the file records, so trust the
            file as you would a program. ``False`` ignores both; a path loads that cache
            archive instead (and no package). One line on the ``autotune`` logger says what
            was loaded; one made for another torch, device or thread count is skipped with a
            warning naming the difference.
        warmup: Inputs to call the compiled model with before returning, so that it compiles
            now and not on the first request a server takes: one call's inputs (a tensor, a
            tuple of positional arguments, or a dict of keyword arguments), or a list of
            such, one call each (e.g. one per input shape the server will see); or
            ``"plan"``: one call of each shape the search measured (the file's
            ``workload.warmup``; tensors of ones), so that every bucket of a shape plan
            compiles before traffic. Calls run in
            the caller's grad mode: apply inside the same ``torch.no_grad()`` or
            ``torch.inference_mode()`` the server uses, or the first request recompiles. The
            time it took is logged on the ``autotune`` logger (INFO).
        strict: Raise instead of serving on: :class:`ConfigError` when no entry of the file
            may serve this machine (else the model is returned uncompiled), and
            :class:`~autotune.runtime.cache.CacheRefusedError` when a shipped cache or package
            is not the one the file records (else a warning names it, and the model compiles
            as without it).
        allow_unsafe_knobs: Knobs the config may set although autotune never takes them from
            data (they name a program, a compiler or its flags, a file or a folder, or turn
            on debug output: ``inductor.cpp.cxx``, ``inductor.trace.enabled``, ...): True for
            all, or the ``inductor.NAME`` / ``dynamo.NAME`` knobs named. Pass it only for a
            config you wrote or checked yourself.
        require_signature: Refuse a best-config entry that is not signed with the key in
            ``$AUTOTUNE_SIGNING_KEY`` (``autotune search``/``finalize``/``cache export`` sign
            what they write when it is set; the signature covers the whole entry: config,
            decision, metrics, workload, model hashes, ``created_at`` and the SHA-256 of every
            artifact), and one bound to another model: its ``model.sha256`` (structure) or
            ``model.weights_sha256`` (weights, recorded by ``cache export --bind-weights``;
            reading them costs a pass over every weight) is not ``model``'s, whatever
            ``check_environment`` says. Default: ``$AUTOTUNE_REQUIRE_SIGNATURE``: ``1``,
            ``true``, ``yes`` or ``on`` require; ``0``, ``false``, ``no``, ``off`` or unset do
            not; anything else is a :class:`ConfigError`. Not required, an entry the key does
            not verify (unsigned, another key) is applied with a
            :class:`~autotune.runtime.signing.SignatureWarning` when a key is set. A
            :class:`CompileConfig` passed in code needs none. Whatever this says, an entry
            signed with that key but changed since is refused when the file is read.
        not_before: Refuse an entry made before this time (its ``created_at``, an ISO 8601
            time or date, or a datetime; without an offset, UTC), so that an older file
            restored in place of the current one (a rollback) is not served: raise it with
            each release. Default: ``$AUTOTUNE_NOT_BEFORE``, else no limit. The time is part of
            the signed entry: only a required signature makes it tamper-proof.

    Returns:
        ``model`` itself for a ``do_not_compile`` decision, a regional scope, and a whole model
        compiled: compiled in place (``Module.compile``), so that every method calling
        ``self(...)`` (``model.generate()``, a training loop) runs the compiled code and its
        ``state_dict`` keeps its keys; an ``OptimizedModule`` wrapping it when the whole
        model's ``forward`` is torch's own (``nn.Sequential``: compiled in place, Dynamo
        would compile nothing); a
        :class:`~autotune.runtime.aot.PackagedModule` wrapping it when the AOTInductor
        package serves (inference only: its outputs carry no autograd graph).

    Raises:
        ConfigError: The file or config is invalid, or names knobs the installed torch lacks,
            or (``strict``) it has no entry for this kind of device, or the entry is refused
            by ``require_signature`` or ``not_before``;
            :class:`UnsafeKnobError` when it sets knobs refused from data that
            ``allow_unsafe_knobs`` does not name;
            :class:`~autotune.runtime.cache.CacheRefusedError` (a ``ValueError`` too), with
            ``strict``, when the shipped cache's or package's SHA-256 is not the file's (a
            changed one is never loaded).
        ScopeError: The scope names module paths the model does not have.

    Example:
        >>> import torch, autotune
        >>> model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
        >>> fast = autotune.apply(model, {"backend": "eager", "dynamic": False})
        >>> fast(torch.randn(2, 8)).shape
        torch.Size([2, 8])
    """
    # This machine, read once (it reads /proc/cpuinfo, and on CUDA the device's name).
    here = functools.cache(lambda: environment_fingerprint(_model_device(model)))
    best, compile_config, choice_warned = _resolve(config, here, strict)
    if best is not None:
        required = vouched(best, require_signature, not_before)
        model_lines = model_differences(model, best, required, check_environment)
        if check_environment:
            _warn_on_mismatch(best, here, model_lines, environment=not choice_warned)
    if compile_config is None:
        if warmup is not None:
            _log.info("autotune.apply: the config compiles nothing; no warm-up needed")
        return model
    # Refused knobs are refused before anything shipped with the config is loaded.
    check_config(compile_config, allow_unsafe_knobs)
    if _model_device(model) == "cpu":
        warn_if_fast_math(compile_config)
    if best is not None and best.aot and cache is True and not compile_config.parts:
        packaged = _load_package(best, config, model, strict)
        if packaged is not None:
            if warmup is not None:
                calls, seconds = warm_up(packaged, warmup)
                _log.info("autotune.apply: warmed up with %d call(s) in %.2f s", calls, seconds)
            return packaged
    if best is not None and best.cache and cache is not False:
        _load_cache(best, config, cache, _model_device(model), strict)
    compiled = _compile_scope(model, compile_config, in_place=True)  # checked above
    if warmup == "plan":
        warmup = plan_warmup(best.workload if best else {}, _model_device(model))
    if warmup is not None:
        calls, seconds = warm_up(compiled, warmup)
        _log.info("autotune.apply: warmed up with %d call(s) in %.2f s", calls, seconds)
    return compiled


def _load_package(
    best: BestConfig, config: Any, model: torch.nn.Module, strict: bool
) -> torch.nn.Module | None:
    """The file's AOTInductor package loaded with ``model``'s weights, when it may serve here;
    else None (a line or a warning says why) and the model compiles as without one."""
    from autotune.runtime import aot
    from autotune.runtime.cache import CacheRefusedError, mismatches

    assert best.aot is not None
    if not isinstance(config, (str, os.PathLike)):
        _log.info("autotune.apply: the config ships a package, but no path says where it is")
        return None
    if model.training:
        _log.info(
            "autotune.apply: the model is in training mode, and the AOTInductor package serves "
            "eval() inference only: compiling instead (call model.eval() before apply to use it)"
        )
        return None
    package = Path(config).parent / str(best.aot["path"])
    different = mismatches(dict(best.aot.get("valid_for") or {}), _model_device(model))
    why_not = "the package was built elsewhere (" + "; ".join(different) + ")" if different else ""
    if not why_not:
        try:
            packaged = aot.load_package(best.aot, package, model)
        except CacheRefusedError as e:
            if strict:
                raise
            why_not = str(e)
        except (FileNotFoundError, aot.PackageMismatchError) as e:
            why_not = str(e)
        else:
            _log.info("autotune.apply: loaded the AOTInductor package %s: no compile", package)
            return packaged
    warnings.warn(
        printable(
            f"autotune.apply: the AOTInductor package is not used: {why_not}; the model "
            "compiles as without one."
        ),
        EnvironmentMismatchWarning,
        stacklevel=3,
    )
    return None


def _load_cache(best: BestConfig, config: Any, cache: Any, device: str, strict: bool) -> None:
    from autotune.runtime import cache as shipped

    assert best.cache is not None
    if isinstance(cache, (str, os.PathLike)):
        archive = Path(cache)
    elif isinstance(config, (str, os.PathLike)):
        archive = Path(config).parent / str(best.cache["path"])
    else:
        _log.info("autotune.apply: the config ships a cache, but no path says where it is")
        return
    try:
        why_not = shipped.load(best.cache, archive, device)
    except shipped.CacheRefusedError as e:
        if strict:
            raise
        why_not = str(e)
    if why_not is None:
        _log.info("autotune.apply: loaded the compile cache %s", archive)
    else:
        warnings.warn(
            printable(
                f"autotune.apply: the compile cache is not used: {why_not}; the model "
                "compiles as without one."
            ),
            EnvironmentMismatchWarning,
            stacklevel=3,
        )


def compile_module(
    model: torch.nn.Module,
    config: CompileConfig,
    *,
    allow_unsafe_knobs: bool | Collection[str] = False,
) -> torch.nn.Module:
    """Compiles ``model`` according to ``config`` (no fingerprint checks).

    Disabled paths are replaced in their parents by ``torch.compiler.disable`` wrappers first;
    then the root is wrapped by ``torch.compile``, or each compile path is replaced in its
    parent by a compiled module (``Module.compile()`` would silently skip built-in modules).

    Raises:
        ConfigError: Options or Dynamo settings the installed torch does not have;
            :class:`UnsafeKnobError` for knobs refused from data that ``allow_unsafe_knobs``
            (see :func:`apply`) does not name.
        ScopeError: Module paths the model does not have; the model is left untouched.
    """
    check_config(config, allow_unsafe_knobs)
    return _compile_scope(model, config)


def _compile_scope(
    model: torch.nn.Module, config: CompileConfig, in_place: bool = False
) -> torch.nn.Module:
    """:func:`compile_module` of a config :func:`check_config` already passed; with
    ``in_place``, a whole model whose ``forward`` is its own compiles in place (see
    :func:`apply`)."""
    scope = config.scope
    _raise_for_paths(model, [p for p in scope.compile if p] + list(scope.disable))
    change_weights(model, config.precision)  # cast, quantized: once, before anything compiles
    for path in scope.disable:
        _replace(model, path, torch.compiler.disable(_child(model, path)))
    if scope.compile == ("",):  # a config with parts compiles in place wherever it can
        in_place = (in_place or bool(config.parts)) and _own_forward(model)
        compiled = _compile_one(model, config, in_place=in_place)
    else:
        for path in scope.compile:
            _replace(model, path, _compile_one(_child(model, path), config))
        compiled = model
    # the shape plan runs around the model's calls, outside every compiled region
    return plan_root(model, compiled, config.shapes) if config.shapes else compiled


def _resolve(
    config: Any, here: Callable[[], dict[str, Any]], strict: bool
) -> tuple[BestConfig | None, CompileConfig | None, bool]:
    """The entry to apply and its config, and whether a warning already said it is not this
    machine's own; ``(None, None, True)`` when no entry may serve this machine."""
    if isinstance(config, (str, os.PathLike)):
        config = ConfigFile.load(config)
    elif isinstance(config, Mapping):
        if "schema_version" in config:
            config = ConfigFile.from_dict(dict(config))
        else:
            config = CompileConfig.from_dict(dict(config))
    if isinstance(config, ConfigFile):
        config = _choose(config, here(), strict)
        if config is None:
            return None, None, True
        best, warned = config
        return best, best.config, warned
    if isinstance(config, BestConfig):
        return config, config.config, False
    if isinstance(config, CompileConfig):
        return None, config, False
    raise TypeError(
        "config must be a path, ConfigFile, BestConfig, CompileConfig or dict, "
        f"but got {type(config).__name__}"
    )


def _choose(
    file: ConfigFile, here: dict[str, Any], strict: bool
) -> tuple[BestConfig, bool] | None:
    from autotune.runtime.select import choose

    choice = choose(file.entries, here)
    if choice.entry is None:
        if strict:
            raise ConfigError(printable(f"autotune.apply(strict=True): {choice.why}."))
        warnings.warn(
            printable(f"autotune.apply: {choice.why}. The model is returned uncompiled."),
            EnvironmentMismatchWarning,
            stacklevel=4,
        )
        return None
    if choice.exact:
        return choice.entry, False
    line = printable(f"autotune.apply: {choice.why}.")
    if ("choice", line) not in _WARNED:
        _WARNED.add(("choice", line))
        warnings.warn(line, EnvironmentMismatchWarning, stacklevel=4)
    return choice.entry, True


def _compile_one(
    module: torch.nn.Module, config: CompileConfig, in_place: bool = False
) -> torch.nn.Module:
    """``module`` compiled: wrapped (an ``OptimizedModule``), or with ``in_place`` compiled
    in place (``Module.compile``), so that every method of it calling ``self(...)``, a
    ``generate()`` loop among them, runs the compiled code."""
    device_type = _model_device(module).split(":")[0]
    if in_place:  # what Module.compile does, a part at a time where the config has parts
        if config.parts:
            return compile_in_parts(module, config, device_type)
        _, module._compiled_call_impl = compile_region(module._call_impl, config, device_type)
        return module
    if config.parts:
        raise ConfigError(
            f"{type(module).__name__}'s forward is torch's own, and a config with parts "
            "compiles the model in place, a part per call, which Dynamo skips for torch's own "
            "modules; wrap the module in one of yours, or apply the config without parts."
        )
    compiled, forward = compile_region(module, config, device_type)
    compiled.__dict__["forward"] = forward
    return cast(torch.nn.Module, compiled)


def _own_forward(model: torch.nn.Module) -> bool:
    """Whether ``model``'s ``forward`` is defined outside torch: compiled in place, a built-in
    module's (``nn.Sequential``, ``nn.Linear``) compiles no frame (Dynamo skips torch's own
    files at the top), so such a model is wrapped instead."""
    forward = getattr(type(model), "forward", None)
    return not str(getattr(forward, "__module__", "torch")).startswith("torch.")


def _child(model: torch.nn.Module, path: str) -> torch.nn.Module:
    module = model
    for part in path.split("."):
        # Look through wrappers this function put in place earlier (e.g. a disabled parent).
        while part not in module._modules and "_orig_mod" in module._modules:
            module = cast(torch.nn.Module, module._modules["_orig_mod"])
        module = cast(torch.nn.Module, module._modules[part])
    return module


def _replace(model: torch.nn.Module, path: str, new: torch.nn.Module) -> None:
    # `_modules` is where attributes, ModuleList/Sequential indices and ModuleDict keys all
    # live, so one assignment covers every kind of parent.
    parent_path, _, name = path.rpartition(".")
    parent = _child(model, parent_path) if parent_path else model
    while name not in parent._modules and "_orig_mod" in parent._modules:
        parent = cast(torch.nn.Module, parent._modules["_orig_mod"])
    parent._modules[name] = new


def _raise_for_paths(model: torch.nn.Module, paths: list[str]) -> None:
    existing = [name for name, _ in model.named_modules() if name]
    missing = [p for p in paths if not _has_path(model, p)]
    if not missing:
        return
    lines = []
    for path in missing:
        near = difflib.get_close_matches(path, existing, n=3, cutoff=0.5)
        near = near or [name for name in existing if "." not in name][:5]
        lines.append(f"  - {path!r}: nearest existing paths: {', '.join(map(repr, near))}")
    raise ScopeError(
        f"the config's scope names module paths that {type(model).__qualname__} does not "
        "have:\n" + "\n".join(lines) + "\nThe config was likely tuned for a different model "
        "(or another version of it): re-run the search for this model, or fix `scope`."
    )


def _has_path(model: torch.nn.Module, path: str) -> bool:
    try:
        _child(model, path)
    except KeyError:
        return False
    return True


def _warn_on_mismatch(
    best: BestConfig,
    here: Callable[[], dict[str, Any]],
    model_lines: list[str],
    environment: bool = True,
) -> None:
    """One :class:`EnvironmentMismatchWarning` for the differences (environment, then
    ``model_lines``) not yet said of ``best``'s config in this process, shown inert."""
    lines = []
    if best.environment and environment:
        lines += environment_mismatches(best.environment, here())
    lines += model_lines
    identity = best.config_hash or f"do_not_compile@{best.created_at}"
    new = [line for line in lines if (identity, line) not in _WARNED]
    if not new:
        return
    _WARNED.update((identity, line) for line in new)
    details = "\n".join(f"  - {line}" for line in new)
    warnings.warn(
        EnvironmentMismatchWarning(printable(
            f"best config {identity} was tuned elsewhere; it is applied anyway, but its "
            f"measured speedup may not hold here (re-run the search to be sure):\n{details}"
        )),
        stacklevel=3,
    )  # fmt: skip


def _model_device(model: torch.nn.Module) -> str:
    tensor = next(itertools.chain(model.parameters(), model.buffers()), None)
    return "cpu" if tensor is None else str(tensor.device)
