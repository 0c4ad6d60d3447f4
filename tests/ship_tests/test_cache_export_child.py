"""The compiling child of ``autotune cache export`` never outlives the export: it dies with its
parent (SIGKILL included), and its whole process group is killed on timeout and interrupt.

The child is a fake ``python`` (a shell script) that starts a sleeping grandchild, records both
pids and waits: the test is about the processes, not the compile."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from procs import alive, wait_for

from autotune._process import run_captured, tracked
from autotune.errors import UsageError
from autotune.runtime.config import BestConfig, CompileConfig

ROOT = Path(__file__).resolve().parents[2]
FAKE_PYTHON = """#!/bin/sh
sleep 600 &
echo $! > {folder}/grandchild.tmp && mv {folder}/grandchild.tmp {folder}/grandchild.pid
echo $$ > {folder}/child.tmp && mv {folder}/child.tmp {folder}/child.pid
wait
"""


@pytest.fixture
def fake(tmp_path: Path):
    """A best-config file and a fake python that records its pid and its grandchild's."""
    model = tmp_path / "model.py"
    model.write_text("# never run: the fake python only sleeps\n")
    best = tmp_path / "best.json"
    BestConfig(decision="compile", reason="r", config=CompileConfig(),
               model={"source": str(model)},
               workload={"kind": "infer", "device": "cpu", "seed": 0}).dump(best)  # fmt: skip
    python = tmp_path / "python"
    python.write_text(FAKE_PYTHON.format(folder=tmp_path))
    python.chmod(0o755)
    yield best, python
    for name in ("child.pid", "grandchild.pid"):
        for pid in alive(_pids(tmp_path, name)):
            os.kill(pid, signal.SIGKILL)


def _pids(folder: Path, name: str) -> set[int]:
    path = folder / name
    return {int(path.read_text())} if path.exists() else set()


def _started(folder: Path) -> set[int]:
    assert wait_for(lambda: (folder / "child.pid").exists(), 30)
    return _pids(folder, "child.pid") | _pids(folder, "grandchild.pid")


def test_an_export_past_its_timeout_kills_the_child_and_its_grandchildren(fake, monkeypatch):
    from autotune.ship import ship_cache

    best, python = fake
    monkeypatch.setattr(sys, "executable", str(python))

    with pytest.raises(UsageError, match="took over 1 s; nothing was written"):
        ship_cache(best, str(best.parent / "model.py"), timeout_s=1.0)

    started = _started(best.parent)
    assert len(started) == 2 and wait_for(lambda: not alive(started), 5), alive(started)


def test_a_sigkilled_export_takes_its_child_down(fake):
    best, python = fake
    code = f"""
        import sys
        from autotune.ship import ship_cache
        sys.executable = {str(python)!r}
        ship_cache({str(best)!r}, {str(best.parent / "model.py")!r})
    """
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(best.parent))
    parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=env)
    try:
        child = _pids(best.parent, "child.pid") if _started(best.parent) else set()
    finally:
        parent.kill()
        parent.wait()

    assert child and wait_for(lambda: not alive(child), 5), alive(child)


def test_an_interrupted_export_kills_the_group_it_tracked(fake, monkeypatch):
    from autotune.ship import ship_cache

    best, python = fake
    monkeypatch.setattr(sys, "executable", str(python))
    seen: list[frozenset[int]] = []

    def interrupt(*_: object) -> None:
        """Ctrl-C, once, when the child runs: a second one would land in the export's own
        clean-up (it left the child unreaped and running) or after pytest.raises (it ended a
        pytest-xdist worker)."""
        if (best.parent / "child.pid").exists() and not seen:
            signal.setitimer(signal.ITIMER_REAL, 0)
            seen.append(tracked())
            raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2, 0.2)
        with pytest.raises(KeyboardInterrupt):
            ship_cache(best, str(best.parent / "model.py"))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)

    started = _started(best.parent)
    child = _pids(best.parent, "child.pid")
    assert child <= seen[0]  # tracked while it ran, so kill_all reaches it
    assert wait_for(lambda: not alive(started), 5), alive(started)
    assert not child & tracked()


def test_a_grandchild_holding_the_output_open_neither_stalls_nor_outlives_the_child(tmp_path):
    script = f"sleep 600 & echo $! > {tmp_path}/grandchild.pid; echo out; echo err >&2; exit 3"
    started = time.monotonic()

    done = run_captured(["sh", "-c", script], env=os.environ, timeout_s=60)

    assert time.monotonic() - started < 10
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    grandchild = _pids(tmp_path, "grandchild.pid")
    assert grandchild and wait_for(lambda: not alive(grandchild), 5), alive(grandchild)
