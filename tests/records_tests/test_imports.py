from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_importing_records_leaves_pyarrow_and_optuna_unloaded() -> None:
    code = (
        "import sys, autotune.records; "
        "print(sorted({'pyarrow', 'optuna', 'torch'} & set(sys.modules)))"
    )
    root = Path(__file__).parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    )

    assert done.stdout.strip() == "[]"
