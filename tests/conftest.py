from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import homes
import postgres
import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def model_file():
    """Path of a fixture model file by stem, e.g. model_file("tiny")."""

    def find(stem: str) -> str:
        return str(FIXTURES / "models" / f"{stem}.py")

    return find


@pytest.fixture
def space_file():
    def find(stem: str) -> str:
        return str(FIXTURES / "spaces" / f"{stem}.toml")

    return find


@pytest.fixture(autouse=True)
def _isolated_kernel_cache(tmp_path_factory, monkeypatch):
    """Every test runs in the suite's home (see homes.shared); a test that stands for a fresh
    user home calls homes.fresh, and a test about the cache itself names a folder of its own."""
    homes.shared(monkeypatch, tmp_path_factory.getbasetemp())


@pytest.fixture(autouse=True)
def _subnormals_kept() -> Iterator[None]:
    """A test that loads a fast-math kernel in this process (cpp.enable_unsafe_math_opt_flag:
    crtfastmath sets flush-to-zero when it loads, see runtime/knobs.FAST_MATH_LINE) hands the
    next test of this worker its floats as it found them: Hypothesis refuses to run where
    subnormals are flushed."""
    yield
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_flush_denormal(False)


@pytest.fixture(autouse=True)
def _signal_stack_kept() -> Iterator[None]:
    """A test that runs OpenVINO's backend in this process through torch.compile itself (not
    autotune's runtime, which keeps it) hands the next test of this worker the thread's signal
    stack as it found it: OpenVINO can leave it on freed memory, and the next signal handled
    there (a test's SIGALRM) ended the worker with SIGSEGV."""
    from autotune.runtime.openvino_backend import signal_stack_kept

    with signal_stack_kept():
        yield


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A storage URL to an empty PostgreSQL schema of its own (see tests/postgres.py)."""
    if not postgres.URL:
        pytest.skip("AUTOTUNE_TEST_POSTGRES_URL is not set")
    with postgres.fresh_schema() as url:
        yield url
