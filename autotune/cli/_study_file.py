"""Studies as files: ``autotune search studies/convnet.toml``.

A study file holds the options of ``autotune search`` as TOML keys (``trials = 20``,
``batch_sizes = [1, 8]``, ``allow_numerics_changes = true``) and the model file, relative to the
TOML. Each value is read by its option's kind, as ``autotune.tune`` reads a keyword
(:func:`autotune.settings.read_values`); options typed on the command line override it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autotune._toml import read as read_toml
from autotune.errors import UsageError
from autotune.settings import FILE, SEARCH_OPTIONS, read_values

MODEL_KEY = "model"
_NOT_A_STUDY = "; a study file names a model file (*.py), not another study file"


def read(path: Path) -> tuple[str, dict[str, Any]]:
    """The model file study file ``path`` names (relative to the file's folder) and its options,
    each read by its option's kind.

    Raises:
        UsageError: The file cannot be read, or holds unknown keys or values of the wrong
            type (all of them listed).
    """
    remedy = "a study file is `model = ...` and options of `autotune search`, one per line."
    try:
        data = read_toml(path, "The study file", remedy, UsageError)
    except FileNotFoundError:
        raise UsageError(
            f"The study file {path} does not exist; pass a model file (*.py) or a study file "
            "(*.toml) that names one."
        ) from None
    except OSError as exc:
        raise UsageError(f"The study file {path} is not valid TOML: {exc}.") from exc
    problems = []
    model = data.pop(MODEL_KEY, None)
    if not isinstance(model, str) or model.endswith(".toml"):
        problems.append(
            f"`{MODEL_KEY}` must be the model file's path (relative to the study file), got "
            f"{model!r}{_NOT_A_STUDY if isinstance(model, str) else ''}"
        )
    values, more = read_values({k.replace("-", "_"): v for k, v in data.items()}, FILE)
    problems += more
    if problems:
        keys = sorted(o.name for o in SEARCH_OPTIONS if FILE.takes(o))
        raise UsageError(
            f"The study file {path} has {len(problems)} problem(s): {'; '.join(problems)}. Its "
            f"keys are `{MODEL_KEY}` and the options of `autotune search` with underscores "
            f"({', '.join(keys)})."
        )
    assert isinstance(model, str)
    return str(Path(model) if Path(model).is_absolute() else path.parent / model), values
