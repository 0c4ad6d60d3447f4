"""What a process must share with a study to run its trials: the device type, torch and
triton, and the model file itself.

The database is a trust boundary: whoever can write a study's row could otherwise point every
worker at a file. So the operator, not the database, names the code: a process runs only the
model file its own command line names (``--model PATH``, or ``$AUTOTUNE_MODEL``), and only when
that file's SHA-256 is the one stored when the study was created (``--trust-model-path``
overrides the comparison, and says so). The stored path is never opened; the stored hash is
compared with, never trusted alone. Nothing else read from the database is executed or
unpickled: it is JSON, validated.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from autotune import _process
from autotune.errors import UsageError
from autotune.settings._study import StudySettings


def model_sha256(path: str | Path) -> str:
    """The SHA-256 of a model file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def triton_version() -> str | None:
    """The installed triton's version, read from its metadata (triton is not imported)."""
    try:
        return importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        return None


def device_type(device: str) -> str:
    """``cuda:1`` -> ``cuda``."""
    return device.split(":", 1)[0]


MODEL_ENV = "AUTOTUNE_MODEL"
_NAME_TIMEOUT_S = 120.0  # a child that imports torch and starts CUDA


def local_model_path(study: str, settings: StudySettings, named: str | None) -> str:
    """The model file this process runs: the one its operator named (``--model``); the study's
    row only says where it was, for the message.

    Raises:
        UsageError: No file was named.
    """
    if named:
        return str(Path(named).resolve())
    raise UsageError(
        f"This process would run the model file of study {study!r}, and autotune never runs a "
        f"file because a database names it: pass --model PATH (or set ${MODEL_ENV}) with the "
        f"model file you trust (the study was created with {settings.model_path}; its "
        "content must be the study's)."
    )


def local_settings(
    study: str,
    settings: StudySettings,
    device: str,
    model_path: str | None,
    *,
    trust_model_path: bool,
    allow_version_mismatch: bool,
    on_note: Callable[[str], None],
) -> StudySettings:
    """The study's settings as this process runs them (its trials or its finalists): its
    device, and its model path (``--model``, else the study's), after the checks that it may
    (:func:`check_joining`)."""
    path = local_model_path(study, settings, model_path)
    for note in check_joining(
        study, settings, path, device, trust_model_path=trust_model_path,
        allow_version_mismatch=allow_version_mismatch,
    ):  # fmt: skip
        on_note(note)
    return dataclasses.replace(settings, model_path=path, device=device)


def check_joining(
    study: str,
    settings: StudySettings,
    model_path: str,
    device: str,
    *,
    trust_model_path: bool = False,
    allow_version_mismatch: bool = False,
) -> list[str]:
    """Refuses a process that would measure something else than the study's other trials;
    returns notes for what it was allowed to differ in."""
    if device_type(device) != device_type(settings.device):
        raise UsageError(
            f"Study {study!r} runs on {device_type(settings.device)}, this process on {device}: "
            "trials on another kind of device do not compare. Run it where the study's device "
            "is, or create another study."
        )
    return _versions(study, settings, allow_version_mismatch) + _model(
        study, settings, model_path, trust_model_path
    )


def _versions(study: str, settings: StudySettings, allowed: bool) -> list[str]:
    import torch

    pairs: list[tuple[str, str | None, str | None]] = [
        ("torch", settings.torch_version, str(torch.__version__))
    ]
    if settings.triton_version is not None or triton_version() is not None:
        pairs.append(("triton", settings.triton_version, triton_version()))
    diffs = [f"{name} {theirs} (study) vs {ours} (here)" for name, theirs, ours in pairs
             if theirs != ours]  # fmt: skip
    if not diffs:
        return []
    if allowed:
        return [f"note: joining study {study!r} with other versions: {'; '.join(diffs)}"]
    raise UsageError(
        f"This process cannot join study {study!r}: {'; '.join(diffs)}. Trials measured under "
        "another torch or triton do not compare with the study's. Install the study's "
        "versions, create another study, or pass --allow-version-mismatch to join anyway (each "
        "trial records the versions it ran with)."
    )


def _model(study: str, settings: StudySettings, model_path: str, trusted: bool) -> list[str]:
    if not Path(model_path).is_file():
        raise UsageError(
            f"The model file {model_path} of study {study!r} is not there. Pass --model PATH "
            "with where it is on this machine (its content must be the study's)."
        )
    expected = settings.model_sha256
    if expected is None:
        if trusted:
            return [
                f"note: study {study!r} records no SHA-256 of its model file; running "
                f"{model_path}, the file this process was given"
            ]
        raise UsageError(
            f"Study {study!r} records no SHA-256 of its model file, so {model_path} cannot be "
            "checked to be the model its trials measured (a study row without one was made "
            "by an old autotune, or edited). Pass --trust-model-path to run it anyway, or "
            "create a new study."
        )
    actual = model_sha256(model_path)
    if actual == expected:
        return []
    if trusted:
        return [
            f"note: the model file {model_path} differs from the one study {study!r} was "
            f"created with (sha256 {actual[:12]}, the study's {expected[:12]}); run anyway as "
            "--trust-model-path asks"
        ]
    raise UsageError(
        f"The model file {model_path} is not the one study {study!r} was created with: its "
        f"SHA-256 is {actual[:16]}…, the study's {expected[:16]}…. A worker runs only the file "
        "the study was created with (the database could point it at any file). Put that file "
        "here, create a new study for the changed model, or pass --trust-model-path."
    )


def local_device_name(device: str) -> str:
    """This machine's name for ``device`` (the CPU model, or the GPU's name), as trials record
    it. A GPU is asked in a child process: CUDA must never start in a process that forks trials."""
    if device_type(device) == "cpu":
        from autotune.runtime.fingerprint import environment_fingerprint

        return str(environment_fingerprint("cpu")["device_name"])
    index = device.partition(":")[2] or "0"
    code = "import sys, torch; print(torch.cuda.get_device_name(int(sys.argv[1])))"
    try:
        done = _process.run_captured(
            [sys.executable, "-c", code, index], env=os.environ, timeout_s=_NAME_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        why = f"no answer in {_NAME_TIMEOUT_S:g} s"
    else:
        if done.returncode == 0:
            return done.stdout.strip()
        why = done.stderr.strip()[-200:]
    raise UsageError(
        f"Cannot read the name of {device} here ({why}); pass "
        "--for-device NAME with the device name the file is for."
    )
