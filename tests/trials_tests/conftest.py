"""What the workloads' trial tests share: a preloaded trial host per test module, and the
``autotune`` command of this environment for end-to-end searches."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from autotune.trials import PreloadedHostRunner


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    with PreloadedHostRunner(log_dir=str(tmp_path_factory.mktemp("host"))) as warm:
        yield warm


@pytest.fixture
def autotune_command() -> str:
    script = Path(sys.executable).with_name("autotune")
    return str(script) if script.exists() else shutil.which("autotune") or "autotune"
