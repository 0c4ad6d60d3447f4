"""Production's path, each test in a clean interpreter so other tests' imports don't count."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import torch

from autotune.runtime.config import BestConfig, CompileConfig
from autotune.runtime.fingerprint import (
    environment_fingerprint,
    model_fingerprint,
    weights_sha256,
)

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


def test_a_signed_entry_bound_to_its_model_applies_on_the_light_path(tmp_path: Path) -> None:
    """Issue 56, item 5: the checks production runs on a signed entry (its signature, its model
    and weights, its age) import only torch."""
    path = tmp_path / "best_config.json"
    torch.manual_seed(0)
    model = _model()
    bound = {**model_fingerprint(model), "weights_sha256": weights_sha256(model)}
    key = "0123456789abcdef-test-key"
    os.environ["AUTOTUNE_SIGNING_KEY"] = key
    try:
        BestConfig(
            decision="compile", reason="light path", config=CompileConfig(backend="eager"),
            environment=environment_fingerprint("cpu"), model=bound,
            created_at="2026-01-01T00:00:00+00:00",
        ).dump(path)  # fmt: skip
    finally:
        del os.environ["AUTOTUNE_SIGNING_KEY"]
    result = _run(
        f"""
        import os, sys
        import torch
        import autotune
        from autotune.runtime.config import ConfigError

        os.environ.update(AUTOTUNE_SIGNING_KEY={key!r}, AUTOTUNE_REQUIRE_SIGNATURE="on",
                          AUTOTUNE_NOT_BEFORE="2025-12-31")
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        autotune.apply(model, {str(path)!r})(torch.randn(3, 4))
        try:
            autotune.apply(model, {str(path)!r}, not_before="2026-01-02")
        except ConfigError as e:
            assert "rollback" in str(e), e
        else:
            raise AssertionError("an entry older than not_before was applied")
        heavy = {{"optuna", "sqlalchemy", "pyarrow"}} & set(sys.modules)
        assert not heavy, heavy
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
