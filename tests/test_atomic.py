"""Files users rely on are written like databases write them: never half a file under the
final name, and a killed writer's leftovers are swept by the next write."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from autotune import _atomic as atomic


def test_a_failing_writer_leaves_the_old_file_and_no_leftover(tmp_path):
    target = tmp_path / "best.json"
    target.write_text("old")

    with pytest.raises(RuntimeError), atomic.replacing(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("writer failed")

    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["best.json"]


def test_the_new_file_replaces_the_old_one_keeping_its_mode(tmp_path):
    target = tmp_path / "best.json"
    target.write_text("old")
    target.chmod(0o600)

    atomic.write_text(target, "new")

    assert target.read_text() == "new" and target.stat().st_mode & 0o777 == 0o600


def test_the_temporary_file_has_the_targets_name_in_a_hidden_folder_beside_it(tmp_path):
    """Writers build names from it: AOTInductor names a package's folders after its stem."""
    with atomic.replacing(tmp_path / "model.pt2") as tmp:
        assert tmp.name == "model.pt2" and tmp.parent.parent == tmp_path
        assert tmp.parent.name.startswith(".model.pt2.")
        tmp.write_bytes(b"x")
    assert [p.name for p in tmp_path.iterdir()] == ["model.pt2"]


def test_a_killed_writer_leaves_the_old_file_and_the_next_write_sweeps_its_leftover(tmp_path):
    target = tmp_path / "archive.tar.gz"
    target.write_bytes(b"old archive")
    code = (
        "import sys, time; from autotune import _atomic\n"
        f"with _atomic.replacing({str(target)!r}) as tmp:\n"
        "    f = open(tmp, 'wb'); f.write(b'half'); f.flush()\n"
        "    print('writing', flush=True); time.sleep(60)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline() == "writing\n"
    child.send_signal(signal.SIGKILL)
    child.wait()

    (leftover,) = [p for p in tmp_path.iterdir() if p != target]
    assert target.read_bytes() == b"old archive"
    assert (leftover / target.name).read_bytes() == b"half"

    atomic.write_bytes(target, b"new archive")

    assert target.read_bytes() == b"new archive"
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_a_live_writers_temporary_file_is_left_alone(tmp_path):
    target = tmp_path / "best.json"
    with atomic.replacing(target) as first:
        first.write_text("first")
        atomic.write_text(target, "second")  # another write of the same file meanwhile
        assert first.exists()
    assert target.read_text() == "first"


def test_files_that_merely_look_like_leftovers_are_not_swept(tmp_path):
    target = tmp_path / "best.json"
    others = [
        tmp_path / ".best.json.otherhost.1.abcd.tmp.json",  # another host's writer
        tmp_path / ".best.json.notes",
        tmp_path / "best.json.bak",
    ]
    for path in others:
        path.write_text("keep")

    atomic.write_text(target, "x")

    assert all(Path(p).read_text() == "keep" for p in others)
