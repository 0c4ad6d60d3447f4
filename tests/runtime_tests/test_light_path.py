"""Production's path, each test in a clean interpreter so other tests' imports don't count."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import torch

from autotune.runtime.config import BestConfig, CompileConfig
from autotune.runtime.fingerprint import environment_fingerprint, model_fingerprint

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    return subprocess.run(
        [sys.executable, "-W", "error::UserWarning", "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )


def _model() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


def test_import_autotune_imports_no_torch() -> None:
    result = _run(
        """
        import sys
        import autotune
        assert autotune.__version__ == "0.1.0"
        assert callable(autotune.load) and autotune.BestConfig and autotune.ScopeError
        heavy = {"torch", "optuna", "sqlalchemy", "pyarrow"} & set(sys.modules)
        assert not heavy, heavy
        """
    )
    assert result.returncode == 0, result.stderr


def test_apply_a_dumped_config_imports_only_torch(tmp_path: Path) -> None:
    path = tmp_path / "best_config.json"
    model = _model()
    BestConfig(
        decision="compile",
        reason="light path",
        config=CompileConfig(backend="eager", dynamo={"recompile_limit": 4}),
        environment=environment_fingerprint("cpu"),
        model=model_fingerprint(model),
    ).dump(path)
    result = _run(
        f"""
        import sys
        import torch
        import autotune

        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        x = torch.randn(3, 4)
        expected = model(x)
        fast = autotune.apply(model, {str(path)!r})
        assert type(fast).__name__ == "OptimizedModule", type(fast)
        torch.testing.assert_close(fast(x), expected)
        heavy = {{"optuna", "sqlalchemy", "pyarrow"}} & set(sys.modules)
        assert not heavy, heavy
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
