"""Model bundles: what ``autotune.tune`` hands the trial processes in place of a model file (see
:mod:`autotune.workload`, whose contract a bundle's module keeps). The model file's loader reads
them (:func:`bundle_module`); this module takes what it shares with the loader from
:mod:`autotune.workload._common`, below both."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from autotune.workload._common import (
    BUNDLE_FORMAT,
    BUNDLE_SUFFIX,
    DEFAULT_LEARNING_RATE,
    METRIC,
    OPTIONAL,
    PADDING,
    TRAFFIC,
    WorkloadError,
    default_loss,
    one_line,
)


def write_bundle(
    folder: str | Path,
    model: Any,
    inputs: Any,
    traffic: Any = None,
    padding: dict[str, Any] | None = None,
    **functions: Callable[..., Any] | None,
) -> Path:
    """Saves ``model`` (an ``nn.Module``, or a function of no arguments that makes one),
    ``inputs`` (what ``get_inputs`` returns, or a function of the device, and of the batch size
    where searched, that returns it), ``traffic`` (what ``get_traffic`` returns, or a function
    of the device that returns it; None: none), ``padding`` (a model file's ``PADDING``) and
    ``functions`` (``loss_fn``, ``get_optimizer``,
    ``accuracy``, as a model file defines them) as a bundle in ``folder``, named
    ``CLASS-HASH.pt`` after the model and the first 32 hex digits of its content's SHA-256;
    the same content is written once. Returns its path."""
    import io

    import cloudpickle
    import torch

    from autotune._atomic import write_bytes

    unknown = sorted(set(functions) - set(OPTIONAL) - {METRIC})
    if unknown:
        raise WorkloadError(
            f"a model bundle holds {', '.join(OPTIONAL)} and {METRIC}, not {unknown}"
        )
    payload = {"format": BUNDLE_FORMAT, "model": model, "inputs": inputs, **functions}
    if traffic is not None:  # absent otherwise: a bundle without traffic hashes as before
        payload[TRAFFIC] = traffic
    if padding is not None:
        payload[PADDING] = padding
    _steady_class_ids(model)
    buffer = io.BytesIO()
    try:
        with _without_compile_marks(model):
            torch.save(payload, buffer, pickle_module=cloudpickle)
    except Exception as exc:
        raise WorkloadError(
            f"The model and inputs cannot be saved for the trial processes: {one_line(exc)}. "
            "Pass an nn.Module (or a function that makes one) and tensors, or the tuples, dicts "
            "and lists of them that get_inputs returns."
        ) from exc
    _add_manifest(buffer, {TRAFFIC: traffic is not None, PADDING: padding})
    data = buffer.getvalue()
    if isinstance(model, torch.nn.Module):
        name = type(model).__name__
    else:
        name = getattr(model, "__name__", "model").strip("<>") or "model"
    path = Path(folder) / f"{name}-{_digest(data)}{BUNDLE_SUFFIX}"
    # Its name is its content's hash: a file of that name is kept only when it holds that
    # content (one planted under the name is replaced), and it is written whole or not at all.
    if _held(path) != data:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(path, data)
    return path


# What the process that starts trials reads of a bundle without unpickling it (unpickling a
# class pickled by value would reset its methods, and the next bundle of the same model would
# differ): whether it holds a traffic mix, and its padding declaration (plain JSON).
_MANIFEST = "autotune.json"


def _add_manifest(buffer: Any, manifest: dict[str, Any]) -> None:
    """Adds the manifest to the archive ``torch.save`` wrote (torch.load ignores it)."""
    import json
    import zipfile

    try:
        text = json.dumps(manifest, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise WorkloadError(
            f"The padding declaration is not plain data ({one_line(exc)}): give a dict of "
            'str keys, ints and numbers, e.g. {"inputs": {"input_ids": {"dim": 1, "value": '
            '0}}, "outputs": {"last_hidden_state": 1}}.'
        ) from exc
    with zipfile.ZipFile(buffer, "a") as archive:
        prefix = archive.namelist()[0].split("/")[0]
        # A fixed time (zip's epoch): the same content is the same bytes, and the same bundle.
        entry = zipfile.ZipInfo(f"{prefix}/{_MANIFEST}", date_time=(1980, 1, 1, 0, 0, 0))
        archive.writestr(entry, text)


def _manifest(data: bytes) -> dict[str, Any]:
    import io
    import json
    import zipfile

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        name = next((n for n in archive.namelist() if n.endswith(f"/{_MANIFEST}")), None)
        return dict(json.loads(archive.read(name))) if name is not None else {}


def _digest(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()[:_DIGITS]


# Of the content's SHA-256 in a bundle's name: 128 bits, so that no search finds other bytes
# for a name (48 bits were within reach of a planted pickle padded with a junk zip entry).
_DIGITS = 32


def _held(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _verified(file: Path) -> bytes:
    """The bytes of the bundle ``file``, read once, when they hash to what its name says: a
    bundle is unpickled in the trial process, so a file changed or planted under a bundle's
    name (or a ``.pt`` file autotune did not name) is never loaded."""
    stem = file.name.removesuffix(BUNDLE_SUFFIX)
    named = stem.rpartition("-")[2]
    if len(named) != _DIGITS or any(c not in "0123456789abcdef" for c in named):
        raise WorkloadError(
            f"{file} is not a model bundle of autotune.tune() (a bundle is named CLASS-HASH.pt "
            "after its content's SHA-256, and only such a .pt file is loaded); pass a model "
            "file (*.py) that defines get_model(device) and get_inputs(device)."
        )
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise WorkloadError(
            f"The model bundle {file} cannot be read: {one_line(exc)}. It is written by "
            "autotune.tune(); run that again to write it anew."
        ) from exc
    if _digest(data) != named:
        raise WorkloadError(
            f"The model bundle {file.name} does not hold what its name says: it was changed "
            "or planted after autotune.tune() wrote it, so it is not loaded (its content's "
            f"SHA-256 starts {_digest(data)[:12]}). Run autotune.tune() again to write it anew."
        )
    return data


def bundle_module(file: Path) -> ModuleType:
    """A bundle as a model file's module: its functions read the file on their first call."""
    loaded: dict[str, Any] = {}
    read: dict[str, Any] = {}  # the manifest, read without unpickling

    def content() -> dict[str, Any]:
        if not loaded:
            import io

            import torch

            data = _verified(file)
            try:
                found = torch.load(io.BytesIO(data), map_location="cpu", weights_only=False)
            except Exception as exc:
                raise WorkloadError(
                    f"The model bundle {file} cannot be read: {one_line(exc)}. It is written by "
                    "autotune.tune(); run that again to write it anew."
                ) from exc
            if not isinstance(found, dict) or found.get("format") != BUNDLE_FORMAT:
                raise WorkloadError(
                    f"{file} is not a model bundle of autotune.tune() (a .pt file it names must "
                    "be one); pass a model file (*.py) that defines get_model(device) and "
                    "get_inputs(device)."
                )
            loaded.update(found)
        return loaded

    def manifest() -> dict[str, Any]:
        if "manifest" not in read:
            read["manifest"] = _manifest(_verified(file))
        return read["manifest"]

    def get_model(device: str) -> Any:
        import copy

        made = content()["model"]
        model = copy.deepcopy(made) if hasattr(made, "to") else made()
        return model.to(device)

    def get_inputs(device: str, *batch_size: int) -> Any:
        import torch
        import torch.utils._pytree as pytree

        inputs = content()["inputs"]
        if callable(inputs):
            return inputs(device, *batch_size)
        if batch_size:
            raise WorkloadError(
                "the inputs given to autotune.tune are fixed tensors, so the batch size cannot "
                "be searched; pass inputs=lambda device, batch_size: ... to search it"
            )
        return pytree.tree_map_only(torch.Tensor, lambda t: t.to(device), inputs)

    def get_traffic(device: str) -> Any:
        import torch
        import torch.utils._pytree as pytree

        traffic = content()[TRAFFIC]
        if callable(traffic):
            return traffic(device)
        return pytree.tree_map_only(torch.Tensor, lambda t: t.to(device), traffic)

    def loss_fn(output: Any, inputs: Any) -> Any:
        return (content().get("loss_fn") or default_loss)(output, inputs)

    def get_optimizer(model: Any) -> Any:
        import torch

        factory = content().get("get_optimizer")
        if factory is None:
            return torch.optim.AdamW(model.parameters(), lr=DEFAULT_LEARNING_RATE)
        return factory(model)

    def accuracy(output: Any, reference: Any) -> Any:
        fn = content().get(METRIC)
        if fn is None:
            raise WorkloadError(
                "the accuracy contract names accuracy, but autotune.tune was given no "
                "accuracy=fn(output, reference) -> float"
            )
        return fn(output, reference)

    def optional(name: str) -> Any:
        # A model file either defines these or not: the bundle's module has one only when
        # the bundle holds it (read on first access, PEP 562).
        if name in ("train_step", "units") and content().get(name) is not None:
            return content()[name]
        if name == TRAFFIC and manifest().get(TRAFFIC):
            return get_traffic
        if name == PADDING and manifest().get(PADDING) is not None:
            return manifest()[PADDING]
        raise AttributeError(f"model bundle {file.name} has no {name}")

    module = ModuleType(f"autotune_model_bundle_{file.stem.replace('-', '_')}")
    module.__file__ = str(file)
    functions = {"get_model": get_model, "get_inputs": get_inputs, "loss_fn": loss_fn,
                 "get_optimizer": get_optimizer, METRIC: accuracy,
                 "__getattr__": optional}  # fmt: skip
    module.__dict__.update(functions)
    return module


@contextlib.contextmanager
def _without_compile_marks(model: Any) -> Iterator[None]:
    """``model`` with the attributes torch.compile leaves on it set aside while it is saved,
    and put back after (on its parameters and buffers once a compiled model has run,
    ``_dynamo_static_input_type``; on a module it wrapped, ``_is_torch_compile``): a model
    tuned, applied and tuned again is the same bundle, and so the same study."""
    if not hasattr(model, "modules"):
        yield
        return
    owners = [*model.modules(), *model.parameters(), *model.buffers()]
    marks = [(o, {k: v for k, v in vars(o).items() if _compile_mark(k)}) for o in owners]
    for owner, found in marks:
        for name in found:
            vars(owner).pop(name)
    try:
        yield
    finally:
        for owner, found in marks:
            vars(owner).update(found)


def _compile_mark(name: str) -> bool:
    return name.startswith(("_dynamo", "_torchdynamo")) or name == "_is_torch_compile"


def _steady_class_ids(model: Any) -> None:
    """cloudpickle tags each class it pickles by value (one defined in ``__main__`` or a notebook
    cell) with a random id, so the same model would make a new bundle, and a new study, in each
    process: the model's classes get ids from their names instead (where cloudpickle keeps
    them, as in 3.x). Code pickled by value still names its file, which a notebook's kernel
    names anew each session: there, a bundle is the same within a session."""
    import uuid

    try:
        from cloudpickle import cloudpickle as internals

        tracker = internals._DYNAMIC_CLASS_TRACKER_BY_CLASS
        by_id = internals._DYNAMIC_CLASS_TRACKER_BY_ID
        lock = internals._DYNAMIC_CLASS_TRACKER_LOCK
    except (ImportError, AttributeError):
        return
    modules = model.modules() if hasattr(model, "modules") else ()
    classes = {c for m in modules for c in type(m).__mro__ if c.__module__ != "builtins"}
    with lock:
        for cls in classes:
            if cls not in tracker:
                name = f"{cls.__module__}.{cls.__qualname__}"
                tracker[cls] = uuid.uuid5(uuid.NAMESPACE_OID, name).hex
                by_id.setdefault(tracker[cls], cls)
