"""The trial process: builds the model, compiles it, checks it against eager, times both.

Run as ``python -m autotune.trials._child SPEC.json RESULT.json``. It writes exactly one JSON
result (atomically) unless it dies; the parent turns deaths, signals and timeouts into
failure kinds. It is the leader of its own process group, and it takes that whole group down
when its parent dies, so no compiler worker or g++ outlives the study.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from autotune import _process
from autotune.trials._spec import TrialResult, TrialSpec


def main(argv: list[str]) -> int:
    _process.kill_group_with_parent()
    execute(Path(argv[1]), Path(argv[2]))
    # Skip interpreter teardown: a wedged compiler pool must not keep the trial alive.
    os._exit(0)


def execute(spec_path: Path, result_path: Path) -> None:
    """Runs the trial described in ``spec_path`` and writes its result to ``result_path``."""
    from autotune.trials._measure_trial import measure_trial
    from autotune.trials._runner import pin_threads

    pin_threads()
    spec = TrialSpec.from_dict(json.loads(spec_path.read_text()))
    _write(result_path, measure_trial(spec))
    sys.stdout.flush()
    sys.stderr.flush()


def _write(path: Path, result: TrialResult) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result.to_dict(), default=_jsonable))
    os.replace(tmp, path)


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and value != value:
        return None
    return str(value)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
