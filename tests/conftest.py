from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

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
    """Trials of the test run share one kernel cache, never the user's: every study of the
    run uses it (``$AUTOTUNE_CACHE_DIR``), so that a graph the suite compiled once (default
    torch.compile's, the baseline of every study, above all) is an FX-graph-cache hit for the
    next test, and the C++ toolchain is probed once per run. A test about the cache itself
    names a folder of its own."""
    base = tmp_path_factory.getbasetemp()
    monkeypatch.setenv("XDG_CACHE_HOME", str(base / "xdg-cache"))
    monkeypatch.setenv("AUTOTUNE_CACHE_DIR", str(base / "kernels"))


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A storage URL to an empty PostgreSQL schema of its own (see tests/postgres.py)."""
    if not postgres.URL:
        pytest.skip("AUTOTUNE_TEST_POSTGRES_URL is not set")
    with postgres.fresh_schema() as url:
        yield url
