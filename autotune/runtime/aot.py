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
import shutil
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from autotune._scratch import scratch_dir
from autotune.runtime.cache import refuse_if_changed
from autotune.runtime.config import CompileConfig
from autotune.runtime.fingerprint import weights_sha256

if TYPE_CHECKING:
    pass

KIND = "aotinductor-package"
METADATA_KEY = "autotune.constants"  # {fqn: "dtype device shape"} and tied FQNs, as JSON


class PackageMismatchError(ValueError):
    """The model does not fit the package (other architecture, dtype or device): not used."""


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
    embedded = entry.get("weights") == "embedded"
    lacking = torch_lacks(dynamic=False, frozen=embedded)
    if lacking:
        raise PackageMismatchError(
            f"torch {torch.__version__} cannot load this package ({lacking}); compile the "
            "model instead."
        )
    if embedded:
        _refuse_other_weights(entry, model)
    # torch's loader takes a path: it is given a private copy whose hash was checked, never the
    # file beside the config, which someone could replace between the check and the load.
    with scratch_dir("aot-") as private:
        copy = private / package.name
        with package.open("rb") as src, copy.open("xb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        with copy.open("rb") as held:
            holds = "a package holds shared objects"
            refuse_if_changed(entry, package, "AOTInductor package", holds, held)
        runner = _load_runner(copy)
    if embedded:
        return PackagedModule(runner, model, embedded=True)
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
        tensors = named_tensors(self._orig_mod)
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
                f"The package refuses the model's tensors ({one_line(e)}); build the package "
                "again for this model, or compile instead."
            ) from e
        self._held = list(constants.values())  # user-managed: the package borrows them
        self._pointers = [t.data_ptr() for t in self._held]


def _mark_stale(ref: weakref.ref[PackagedModule]) -> None:
    packaged = ref()
    if packaged is not None:
        packaged._pointers = [-1] * len(packaged._held)


def named_tensors(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    tensors: dict[str, torch.Tensor] = dict(model.named_parameters(remove_duplicate=False))
    tensors.update(model.named_buffers(remove_duplicate=False))
    return tensors


def describe_tensor(t: torch.Tensor) -> str:
    return f"{str(t.dtype).removeprefix('torch.')} {t.device.type} {list(t.shape)}"


def _expected_constants(runner: Any, package: Path) -> dict[str, Any]:
    raw = runner.get_metadata().get(METADATA_KEY)
    if raw is None:
        raise PackageMismatchError(
            f"The package {package} does not record the tensors it expects, so it was not built "
            "by autotune: it is not used. Build it again with autotune."
        )
    return dict(json.loads(raw))


def _mismatches(expected: dict[str, Any], tensors: dict[str, torch.Tensor]) -> list[str]:
    problems = [
        f"{fqn}: {want} expected, the model has {describe_tensor(tensors[fqn])}"
        for fqn, want in expected.get("tensors", {}).items()
        if fqn in tensors and describe_tensor(tensors[fqn]) != want
    ]
    for group in expected.get("ties", []):
        if len({id(tensors.get(fqn)) for fqn in group}) > 1:
            problems.append(f"{' and '.join(group)} were one tensor but are no longer tied")
    return problems


def torch_lacks(*, dynamic: bool, frozen: bool = False) -> str | None:
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


def one_line(exc: BaseException) -> str:
    """The error's first line (and its second when the first only announces it), trimmed."""
    lines = [line.strip(" -") for line in str(exc).splitlines() if line.strip(" -")]
    text = " ".join(lines[:2] if lines and lines[0].endswith(":") else lines[:1])
    return trim(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)


def trim(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
