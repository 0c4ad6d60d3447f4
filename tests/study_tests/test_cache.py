"""The study's kernel cache: bytes written per trial, and a limit that removes old files."""

from __future__ import annotations

import os
import time

import scripted
import torch

from autotune.space import load_space
from autotune.study import Search, SearchRequest, StudySettings
from autotune.study._cache import cache_bytes, prune


def _file(folder, name: str, size: int, age_s: float) -> None:
    path = folder / name
    path.write_bytes(b"x" * size)
    moment = time.time() - age_s
    os.utime(path, (moment, moment))


def test_prune_removes_the_oldest_files_past_the_limit_and_never_recent_ones(tmp_path):
    _file(tmp_path, "a", 400, age_s=7200)
    _file(tmp_path, "b", 400, age_s=5000)
    _file(tmp_path, "c", 400, age_s=10)  # written by a compile running now
    assert cache_bytes(str(tmp_path)) == 1200
    assert prune(str(tmp_path), limit_bytes=2000) == (0, 1200)  # under the limit: nothing
    assert prune(str(tmp_path), limit_bytes=1000) == (400, 800)  # down to 800 (80%): "a" goes
    assert sorted(os.listdir(tmp_path)) == ["b", "c"]
    assert prune(str(tmp_path), limit_bytes=100).removed == 400  # "c" stays however far over
    assert os.listdir(tmp_path) == ["c"]
    assert cache_bytes(str(tmp_path / "none")) == 0 and prune(None, 1) == (0, 0)


def test_each_trial_records_the_bytes_it_added_to_the_kernel_cache(
    tmp_path, model_file, space_file
):
    cache = tmp_path / "cache"

    class Writing:
        def run(self, spec):
            os.makedirs(spec.cache_dir, exist_ok=True)
            with open(os.path.join(spec.cache_dir, f"k{time.monotonic_ns()}"), "wb") as f:
                f.write(b"x" * 1000)
            return scripted.ok(1.0 if spec.config is None else 1.5)

        def close(self):
            pass

    space = load_space(space_file("aot_eager"), "cpu")
    settings = StudySettings(
        model_path=model_file("tiny"), device="cpu", space=space.to_dict(),
        space_hash=space.content_hash(), torch_version=torch.__version__, scope="whole",
        trials=2,
    )  # fmt: skip
    request = SearchRequest("s", f"sqlite:///{tmp_path}/t.db", settings, cache_dir=str(cache))
    records = Search(request, Writing()).run()
    measured = [r for r in records if r.duplicate_of is None]
    assert measured and all(r.result["cache_bytes_written"] == 1000 for r in measured)
