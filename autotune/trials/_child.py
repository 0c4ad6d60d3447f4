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

from autotune.trials import _guard
from autotune.trials._spec import TrialResult, TrialSpec


def main(argv: list[str]) -> int:
    _guard.die_with_parent()
    spec_path, result_path = argv[1], argv[2]
    spec = TrialSpec.from_dict(json.loads(Path(spec_path).read_text()))
    result = run(spec)
    _write(Path(result_path), result)
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: a wedged compiler pool must not keep the trial alive.
    os._exit(0)


def run(spec: TrialSpec) -> TrialResult:
    from autotune.trials._measure_trial import measure_trial

    return measure_trial(spec)


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
