"""A run's scratch root: made once, used by its children, gone at exit, and swept by the next
run when the run was killed; nothing that merely looks like a root is ever touched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autotune import _scratch
from autotune._scratch import RUN_ROOT_ENV, root_name, start_time, sweep

ROOT = Path(__file__).resolve().parents[1]
NEVER_A_PID = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1


def _host_prefix() -> str:
    """``autotune-run-<this host>-``, as roots of this host are named."""
    return root_name(os.getpid()).rsplit("-", 2)[0] + "-"


def _folder(path: Path) -> Path:
    path.mkdir()
    (path / "kept.txt").write_text("data")
    return path


def _python(code: str, tmpdir: Path, **env: str) -> subprocess.Popen[str]:
    """A Python process whose temporary folder is ``tmpdir`` (and no run root of ours)."""
    base = {k: v for k, v in os.environ.items() if k != RUN_ROOT_ENV}
    base["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), base.get("PYTHONPATH")) if p)
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**base, "TMPDIR": str(tmpdir), **env},
        stdout=subprocess.PIPE,
        text=True,
    )


HOLD = """
    import sys, time
    from autotune._scratch import run_root, scratch_dir
    with scratch_dir("trial-") as folder:
        (folder / "cache.bin").write_bytes(b"x" * 1000)
        print(run_root(), flush=True)
        time.sleep(600)
"""
NEXT_RUN = """
    from autotune._scratch import run_root
    print(run_root(), flush=True)
"""


def test_a_live_process_root_is_kept_and_a_dead_or_reused_pid_root_is_swept(tmp_path):
    mine = _folder(tmp_path / root_name(os.getpid()))
    dead = _folder(tmp_path / f"{_host_prefix()}{NEVER_A_PID}-12345")
    reused = _folder(tmp_path / f"{_host_prefix()}{os.getpid()}-{start_time(os.getpid()) + 1}")

    assert sorted(sweep(tmp_path)) == sorted([dead, reused])

    assert (mine / "kept.txt").exists() and not dead.exists() and not reused.exists()


def test_a_root_of_another_pid_namespace_on_a_host_of_the_same_name_is_never_swept(tmp_path):
    """Issue 41, item 9: a container sharing the host name and TMPDIR saw another container's
    live run as a dead pid of its own, and deleted its scratch folder mid-run."""
    assert ".pidns" in _host_prefix()
    name = _host_prefix().removeprefix("autotune-run-").split(".pidns")[0]
    elsewhere = _folder(tmp_path / f"autotune-run-{name}.pidns1-{NEVER_A_PID}-12345")
    mine = _folder(tmp_path / f"{_host_prefix()}{NEVER_A_PID}-12345")
    assert sweep(tmp_path) == [mine]
    assert (elsewhere / "kept.txt").exists()


def test_a_root_of_another_machine_of_the_same_name_and_namespace_is_never_swept(tmp_path):
    """Issue 56, item 8: the initial PID namespace has the same inode on every machine, so two
    hosts of one name sharing TMPDIR swept each other's live roots, and took over each other's
    finalist claims; the kernel's boot id tells them apart."""
    assert ".boot" in _host_prefix()
    namespace = _host_prefix().removeprefix("autotune-run-").split(".boot")[0]
    elsewhere = _folder(tmp_path / f"autotune-run-{namespace}.boot{'0' * 16}-{NEVER_A_PID}-1")
    assert sweep(tmp_path) == []
    assert (elsewhere / "kept.txt").exists()
    assert not _scratch.owner_gone(f"{namespace}.boot{'0' * 16}:{NEVER_A_PID}:1")
    assert _scratch.owner_gone(f"{_scratch.process_owner().split(':')[0]}:{NEVER_A_PID}:1")


def test_what_only_looks_like_a_root_is_never_deleted(tmp_path):
    dead = f"{NEVER_A_PID}-12345"
    elsewhere = _folder(tmp_path / "elsewhere")
    lookalikes = [
        _folder(tmp_path / f"autotune-run-another-host-{dead}"),
        _folder(tmp_path / f"{_host_prefix()}{dead}-1"),
        _folder(tmp_path / f"{_host_prefix()}{NEVER_A_PID}"),
        _folder(tmp_path / f"{_host_prefix()}x-1"),
        _folder(tmp_path / f"autotune-trial-{dead}"),
    ]
    link = tmp_path / f"{_host_prefix()}{NEVER_A_PID}-1"
    link.symlink_to(elsewhere, target_is_directory=True)
    file = tmp_path / f"{_host_prefix()}{NEVER_A_PID}-2"
    file.write_text("a file, not a folder")

    assert sweep(tmp_path) == []

    assert all((f / "kept.txt").exists() for f in lookalikes)
    assert link.is_symlink() and (elsewhere / "kept.txt").exists() and file.exists()


def test_another_users_root_is_never_deleted(tmp_path, monkeypatch):
    theirs = _folder(tmp_path / f"{_host_prefix()}{NEVER_A_PID}-3")
    uid = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: uid + 1)

    assert sweep(tmp_path) == [] and (theirs / "kept.txt").exists()


def test_sweeping_a_root_never_follows_a_symlink_inside_it(tmp_path):
    elsewhere = _folder(tmp_path / "elsewhere")
    dead = _folder(tmp_path / f"{_host_prefix()}{NEVER_A_PID}-4")
    (dead / "link").symlink_to(elsewhere, target_is_directory=True)

    assert sweep(tmp_path) == [dead]

    assert not dead.exists() and (elsewhere / "kept.txt").exists()


def test_a_sigkilled_runs_root_is_swept_by_the_next_run_which_leaves_nothing(tmp_path):
    killed = _python(HOLD, tmp_path)
    assert killed.stdout is not None
    root = Path(killed.stdout.readline().strip())
    assert root.parent == tmp_path and len(list(root.glob("trial-*/cache.bin"))) == 1
    killed.send_signal(signal.SIGKILL)
    killed.wait()

    following = _python(NEXT_RUN, tmp_path)
    out, _ = following.communicate(timeout=60)

    assert following.returncode == 0 and Path(out.strip()) != root
    assert os.listdir(tmp_path) == []  # the dead run's root swept, the next one's gone at exit


def test_a_live_runs_root_is_not_swept(tmp_path):
    live = _python(HOLD, tmp_path)
    try:
        assert live.stdout is not None
        root = Path(live.stdout.readline().strip())
        following = _python(NEXT_RUN, tmp_path)
        following.communicate(timeout=60)
        assert following.returncode == 0
        assert len(list(root.glob("trial-*/cache.bin"))) == 1
    finally:
        live.kill()
        live.wait()


def test_a_child_uses_its_parents_root_and_leaves_it_to_the_parent(tmp_path):
    parent_root = _folder(tmp_path / f"{_host_prefix()}{os.getpid()}-{start_time(os.getpid())}")
    child = _python(NEXT_RUN, tmp_path, **{RUN_ROOT_ENV: str(parent_root)})
    out, _ = child.communicate(timeout=60)

    assert Path(out.strip()) == parent_root
    assert os.listdir(tmp_path) == [parent_root.name] and (parent_root / "kept.txt").exists()


@pytest.mark.parametrize("given", ["symlink", "other-name", "relative"])
def test_a_passed_root_not_ours_is_refused(tmp_path, given):
    real = _folder(tmp_path / f"{_host_prefix()}{os.getpid()}-{start_time(os.getpid())}")
    passed = {
        "symlink": tmp_path / f"{_host_prefix()}{os.getpid()}-1",
        "other-name": _folder(tmp_path / "not-autotune"),
        "relative": Path(real.name),
    }[given]
    if given == "symlink":
        passed.symlink_to(real, target_is_directory=True)
    child = _python(NEXT_RUN, tmp_path, **{RUN_ROOT_ENV: str(passed)})
    out, _ = child.communicate(timeout=60)

    own = Path(out.strip())
    assert own.parent == tmp_path and own not in (real, passed)
    assert not own.exists()  # the child's own root, removed at its exit


def test_scratch_dir_is_deleted_with_its_content_at_the_end_of_the_block():
    with _scratch.scratch_dir("test-") as folder:
        (folder / "sub").mkdir()
        (folder / "sub" / "file").write_text("x")
        assert folder.parent == _scratch.run_root()
    assert not folder.exists() and _scratch.run_root().is_dir()
