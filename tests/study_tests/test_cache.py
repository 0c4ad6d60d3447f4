"""The study's kernel cache: bytes written per trial, and a limit that removes old files."""

from __future__ import annotations

import os
import time

import pytest
import scripted
import torch

from autotune.errors import UsageError
from autotune.space import load_space
from autotune.storage import StudySettings
from autotune.study import Search, SearchRequest
from autotune.study._cache import MARKER, cache_bytes, own, prune


def _file(folder, name: str, size: int, age_s: float) -> None:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    moment = time.time() - age_s
    os.utime(path, (moment, moment))


def test_prune_removes_the_oldest_files_past_the_limit_and_never_recent_ones(tmp_path):
    own(str(tmp_path))
    _file(tmp_path, "inductor/a", 400, age_s=7200)
    _file(tmp_path, "triton/b", 400, age_s=5000)
    _file(tmp_path, "inductor/c", 400, age_s=10)  # written by a compile running now
    assert cache_bytes(str(tmp_path)) == 1200
    assert prune(str(tmp_path), limit_bytes=2000) == (0, 1200)  # under the limit: nothing
    assert prune(str(tmp_path), limit_bytes=1000) == (400, 800)  # down to 800 (80%): "a" goes
    assert os.listdir(tmp_path / "inductor") == ["c"] and os.listdir(tmp_path / "triton") == ["b"]
    assert prune(str(tmp_path), limit_bytes=100).removed == 400  # "c" stays however far over
    assert os.listdir(tmp_path / "inductor") == ["c"] and not os.listdir(tmp_path / "triton")
    assert cache_bytes(str(tmp_path / "none")) == 0 and prune(None, 1) == (0, 0)


def test_a_cache_folder_holding_a_users_files_is_refused_and_never_pruned(tmp_path):
    """Issue 41, item 5: pointed at a folder with a user's old files and a small limit, the
    search removed them ("removed 0 MiB of its oldest files")."""
    folder = tmp_path / "mine"
    _file(folder, "thesis.tex", 400, age_s=30 * 86400)
    _file(folder, "inductor/old", 400, age_s=30 * 86400)
    with pytest.raises(UsageError, match=r"--cache-dir .*mine holds files autotune did not wr"):
        own(str(folder))
    assert prune(str(folder), limit_bytes=1) == (0, 0)  # not its own: nothing counted or removed
    assert sorted(os.listdir(folder)) == ["inductor", "thesis.tex"]
    own(str(tmp_path / "new"))  # a folder it makes is marked as its own
    assert (tmp_path / "new" / MARKER).is_file()
    _file(tmp_path / "old", "inductor/k", 1, age_s=0)  # its own caches, from before the mark
    _file(tmp_path / "old", "autotune-host-12.log", 1, age_s=0)
    own(str(tmp_path / "old"))
    assert (tmp_path / "old" / MARKER).is_file()
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="cannot be used as the kernel cache"):
        own(str(tmp_path / "file"))


def test_a_search_refuses_a_cache_folder_it_does_not_own(tmp_path, model_file, space_file):
    folder = tmp_path / "mine"
    _file(folder, "notes.txt", 10, age_s=0)
    with pytest.raises(UsageError, match="holds files autotune did not write \\(notes.txt\\)"):
        Search(_request(tmp_path, model_file, space_file, str(folder)), scripted.ScriptedRunner())
    assert os.listdir(folder) == ["notes.txt"]


def test_each_trial_records_the_bytes_it_added_to_the_kernel_cache(
    tmp_path, model_file, space_file
):
    cache = tmp_path / "cache"

    class Writing:
        def run(self, spec):
            os.makedirs(os.path.join(spec.cache_dir, "inductor"), exist_ok=True)
            name = f"k{time.monotonic_ns()}"
            with open(os.path.join(spec.cache_dir, "inductor", name), "wb") as f:
                f.write(b"x" * 1000)
            return scripted.ok(1.0 if spec.config is None else 1.5)

        def close(self):
            pass

    records = Search(_request(tmp_path, model_file, space_file, str(cache)), Writing()).run()
    measured = [r for r in records if r.duplicate_of is None]
    assert measured and all(r.result["cache_bytes_written"] == 1000 for r in measured)


def _request(tmp_path, model_file, space_file, cache: str) -> SearchRequest:
    space = load_space(space_file("aot_eager"), "cpu")
    settings = StudySettings(
        model_path=model_file("tiny"), device="cpu", space=space.to_dict(),
        space_hash=space.content_hash(), torch_version=torch.__version__, scope="whole",
        trials=2,
    )  # fmt: skip
    return SearchRequest("s", f"sqlite:///{tmp_path}/t.db", settings, cache_dir=cache)
