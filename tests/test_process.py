"""The one way a child is run: it leads its own group, is tracked until stopped, and nothing it
started outlives it, its timeout or its parent."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from procs import alive, wait_for

from autotune import _process

ROOT = Path(__file__).resolve().parents[1]


def _grandchild(tmp_path: Path, then: str) -> list[str]:
    """A shell that leaves a sleeper behind (its pid in ``grandchild.pid``), then ``then``."""
    return ["sh", "-c", f"sleep 600 & echo $! > {tmp_path}/grandchild.pid; {then}"]


def _pid(tmp_path: Path) -> set[int]:
    assert wait_for(lambda: (tmp_path / "grandchild.pid").exists(), 10)
    return {int((tmp_path / "grandchild.pid").read_text())}


def test_run_returns_the_exit_code_and_its_output_and_kills_what_the_child_left(tmp_path):
    with open(tmp_path / "log.txt", "wb") as log:
        code = _process.run(
            _grandchild(tmp_path, "echo out; echo err >&2; exit 3"),
            env=os.environ, output=log, timeout_s=60,
        )  # fmt: skip

    assert code == 3
    assert (tmp_path / "log.txt").read_text() == "out\nerr\n"
    assert wait_for(lambda: not alive(_pid(tmp_path)), 5)
    assert not _process.tracked()


def test_a_child_past_its_timeout_is_none_and_its_group_is_dead(tmp_path):
    with open(tmp_path / "log.txt", "wb") as log:
        code = _process.run(
            _grandchild(tmp_path, "sleep 600"), env=os.environ, output=log, timeout_s=1
        )

    assert code is None
    assert wait_for(lambda: not alive(_pid(tmp_path)), 5)
    assert not _process.tracked()


def test_a_started_child_is_tracked_until_stopped_and_kill_all_spares_those_kept(tmp_path):
    kept = _process.start(["sleep", "600"], env=os.environ, stdout=subprocess.DEVNULL)
    ours = _process.start(["sleep", "600"], env=os.environ, stdout=subprocess.DEVNULL)
    try:
        assert {kept.pid, ours.pid} <= _process.tracked()
        _process.kill_all(keep=frozenset({kept.pid}))
        assert _process.wait(ours, 5) and not _process.wait(kept, 0.2)
    finally:
        assert _process.stop(ours) == -signal.SIGKILL
        assert _process.stop(kept) == -signal.SIGKILL
    assert not {kept.pid, ours.pid} & _process.tracked()


def test_before_runs_in_the_child_before_it_starts():
    core = min(os.sched_getaffinity(0))
    proc = _process.start(
        ["grep", "Cpus_allowed_list", "/proc/self/status"], env=os.environ,
        stdout=subprocess.PIPE, before=functools.partial(os.sched_setaffinity, 0, {core}),
    )  # fmt: skip
    assert proc.stdout is not None
    out = proc.stdout.read().decode()
    assert _process.wait(proc, 10) and _process.stop(proc) == 0
    assert out.split() == ["Cpus_allowed_list:", str(core)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal")
def test_a_child_dies_when_its_parent_dies_without_stopping_it(tmp_path):
    """The parent is SIGKILLed, so nothing of it runs after: the kernel's signal does it."""
    parent = textwrap.dedent(f"""
        import os, subprocess, time
        from autotune import _process
        child = _process.start(["sleep", "600"], env=os.environ, stdout=subprocess.DEVNULL)
        open({str(tmp_path / "child.pid")!r}, "w").write(str(child.pid))
        time.sleep(600)
    """)
    proc = subprocess.Popen([sys.executable, "-c", parent], cwd=ROOT)
    try:
        assert wait_for(lambda: (tmp_path / "child.pid").exists(), 30)
        child = {int((tmp_path / "child.pid").read_text())}
        assert alive(child)
    finally:
        proc.kill()
        proc.wait()
    assert wait_for(lambda: not alive(child), 5), alive(child)


def test_a_child_dies_when_the_thread_that_started_it_ends_so_start_it_from_its_waiter():
    started: list[subprocess.Popen[bytes]] = []
    thread = threading.Thread(
        target=lambda: started.append(
            _process.start(["sleep", "600"], env=os.environ, stdout=subprocess.DEVNULL)
        )
    )
    thread.start()
    thread.join()
    assert _process.wait(started[0], 5)
    assert _process.stop(started[0]) == -signal.SIGKILL
