"""The study's kernel cache: a folder autotune created, bytes written per trial, and a limit
that removes old files, never anything outside the folder or not autotune's."""

from __future__ import annotations

import os
import time

import pytest
import scripted
import torch

from autotune.errors import UsageError
from autotune.search import Search, SearchRequest
from autotune.search._cache import MARKER, KernelCache, own
from autotune.settings import StudySettings
from autotune.space import load_space
from autotune.storage import user_cache

_OLD = 30 * 86400  # a month: older than the hour pruning never touches


def _file(folder, name: str, size: int, age_s: float) -> None:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    moment = time.time() - age_s
    os.utime(path, (moment, moment))


class _Study:
    """What a study records of the kernel caches made for it."""

    def __init__(self) -> None:
        self.ids: dict[str, dict] = {}

    def own(self, folder, option: str = "--cache-dir") -> KernelCache:
        return own(str(folder), option, self.ids.get, self.ids.__setitem__)


def _users_files(folder, count: int = 30) -> list[str]:
    for i in range(count):
        _file(folder, f"f{i}.bin", 100, age_s=_OLD)
    return sorted(os.listdir(folder))


def test_prune_removes_the_oldest_files_past_the_limit_and_never_recent_ones(tmp_path):
    cache = _Study().own(tmp_path)
    _file(tmp_path, "inductor/a", 400, age_s=7200)
    _file(tmp_path, "triton/b", 400, age_s=5000)
    _file(tmp_path, "inductor/c", 400, age_s=10)  # written by a compile running now
    assert cache.size() == 1200
    assert cache.prune(limit_bytes=2000) == (0, 1200)  # under the limit: nothing
    assert cache.prune(limit_bytes=1000) == (400, 800)  # down to 800 (80%): "a" goes
    assert os.listdir(tmp_path / "inductor") == ["c"] and os.listdir(tmp_path / "triton") == ["b"]
    assert cache.prune(limit_bytes=100).removed == 400  # "c" stays however far over
    assert os.listdir(tmp_path / "inductor") == ["c"] and not os.listdir(tmp_path / "triton")


def test_a_folder_holding_anything_is_refused_whatever_its_names(tmp_path):
    """Issue 56, item 3: a folder holding only a user's triton/ checkout was adopted as
    autotune's (its names were the caches'), and pruning deleted all 30 of its files."""
    study = _Study()
    folder = tmp_path / "mine"
    kept = _users_files(folder / "triton")
    with pytest.raises(UsageError, match=r"--cache-dir .*mine holds files \(triton\) and no"):
        study.own(folder)
    assert sorted(os.listdir(folder / "triton")) == kept and not (folder / MARKER).exists()
    _file(tmp_path / "logs", "autotune-host-12.log", 1, age_s=0)  # names never count
    with pytest.raises(UsageError, match="holds files"):
        study.own(tmp_path / "logs")
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="cannot be used as the kernel cache"):
        study.own(tmp_path / "file")
    assert not study.ids  # nothing refused was recorded


def test_a_new_or_empty_folder_is_marked_with_an_id_the_study_records_first(tmp_path):
    study = _Study()
    (tmp_path / "empty").mkdir()
    for folder in (tmp_path / "new" / "deep", tmp_path / "empty"):
        cache = study.own(folder)
        assert cache.id in study.ids and cache.id in (folder / MARKER).read_text()
    assert len(study.ids) == 2
    again = study.own(tmp_path / "empty")  # a resumed search, or a second worker
    assert again == cache and len(study.ids) == 2


def test_a_marker_no_study_of_this_database_recorded_is_refused(tmp_path):
    """A marker copied beside a user's files (or left by a study of another database) does
    not make the folder autotune's."""
    made = _Study().own(tmp_path / "theirs")
    folder = tmp_path / "mine"
    kept = _users_files(folder / "inductor")
    (folder / MARKER).write_bytes((tmp_path / "theirs" / MARKER).read_bytes())
    with pytest.raises(UsageError, match=rf"a kernel cache \(id {made.id}\) that autotune did"):
        _Study().own(folder)
    assert sorted(os.listdir(folder / "inductor")) == kept


def test_a_marker_copied_into_another_folder_of_the_same_study_is_refused(tmp_path):
    study = _Study()
    made = study.own(tmp_path / "cache")
    assert study.ids[made.id]["inode"] == made.inode
    folder = tmp_path / "mine"
    kept = _users_files(folder / "triton")
    (folder / MARKER).write_bytes((tmp_path / "cache" / MARKER).read_bytes())
    with pytest.raises(UsageError, match="that autotune did not make in this folder"):
        study.own(folder)
    os.unlink(folder / MARKER)
    os.link(tmp_path / "cache" / MARKER, folder / MARKER)  # a hard link is the same file
    with pytest.raises(UsageError, match="holds files"):
        study.own(folder)
    assert sorted(os.listdir(folder / "triton")) == kept
    os.unlink(folder / MARKER)
    os.rename(tmp_path / "cache", tmp_path / "moved")  # the folder moved is the same folder
    assert study.own(tmp_path / "moved").id == made.id


def test_a_fifo_planted_as_the_marker_is_no_marker_and_no_hang(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    os.mkfifo(folder / MARKER)
    with pytest.raises(UsageError, match="holds files"):
        _Study().own(folder)


def test_a_marker_that_is_a_link_is_not_autotunes(tmp_path):
    study = _Study()
    study.own(tmp_path / "real")
    folder = tmp_path / "mine"
    _users_files(folder / "triton")
    os.symlink(tmp_path / "real" / MARKER, folder / MARKER)
    with pytest.raises(UsageError, match="holds files"):
        study.own(folder)


def test_pruning_never_follows_a_compile_cache_that_became_a_link(tmp_path):
    """Issue 56, item 3: with the folder's inductor/ a link to another folder, os.walk
    descended into it (a top is followed whatever followlinks says) and pruning deleted all
    30 of the other folder's files."""
    victim = tmp_path / "victim"
    kept = _users_files(victim)
    cache = _Study().own(tmp_path / "cache")
    os.symlink(victim, tmp_path / "cache" / "inductor")
    _file(tmp_path / "cache", "triton/old", 100, age_s=_OLD)
    assert cache.size() == 100  # the link is not counted
    assert cache.prune(limit_bytes=1) == (100, 0)
    assert sorted(os.listdir(victim)) == kept


def test_pruning_follows_no_link_inside_the_caches(tmp_path):
    victim = tmp_path / "victim"
    kept = _users_files(victim)
    cache = _Study().own(tmp_path / "cache")
    _file(tmp_path / "cache", "inductor/ab/old", 100, age_s=_OLD)
    os.symlink(victim, tmp_path / "cache" / "inductor" / "cd")  # a folder link
    os.symlink(victim / "f0.bin", tmp_path / "cache" / "inductor" / "ab" / "f0")  # a file link
    assert cache.size() == 100
    assert cache.prune(limit_bytes=1).removed == 100
    assert sorted(os.listdir(victim)) == kept
    assert sorted(os.listdir(tmp_path / "cache" / "inductor" / "ab")) == ["f0"]


def test_a_folder_swapped_for_a_link_between_the_walk_and_the_removal_is_not_followed(
    tmp_path,
):
    victim = tmp_path / "victim"
    _file(victim, "old", 100, age_s=_OLD)
    cache = _Study().own(tmp_path / "cache")
    _file(tmp_path / "cache", "inductor/ab/old", 100, age_s=_OLD)
    (found,) = cache._files()
    os.rename(tmp_path / "cache" / "inductor" / "ab", tmp_path / "moved")
    os.symlink(victim, tmp_path / "cache" / "inductor" / "ab")
    assert not cache._remove(found)
    assert os.listdir(victim) == ["old"]


def test_a_cache_folder_replaced_since_it_was_adopted_is_not_pruned(tmp_path):
    cache = _Study().own(tmp_path / "cache")
    os.rename(tmp_path / "cache", tmp_path / "adopted")
    os.mkdir(tmp_path / "cache")  # another folder under the same name, with the same marker
    os.rename(tmp_path / "adopted" / MARKER, tmp_path / "cache" / MARKER)
    _file(tmp_path / "cache", "inductor/a", 100, age_s=_OLD)
    assert cache.size() == 0 and cache.prune(limit_bytes=1) == (0, 0)
    assert os.listdir(tmp_path / "cache" / "inductor") == ["a"]


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_files_and_folders_of_another_user_are_neither_counted_nor_removed(tmp_path):
    cache = _Study().own(tmp_path / "cache")
    _file(tmp_path / "cache", "inductor/theirs/a", 100, age_s=_OLD)
    _file(tmp_path / "cache", "inductor/b", 100, age_s=_OLD)
    _file(tmp_path / "cache", "inductor/c", 100, age_s=_OLD)
    os.chown(tmp_path / "cache" / "inductor" / "theirs", 4321, 4321)
    os.chown(tmp_path / "cache" / "inductor" / "b", 4321, 4321)
    assert cache.size() == 100 and cache.prune(limit_bytes=1) == (100, 0)
    assert sorted(os.listdir(tmp_path / "cache" / "inductor")) == ["b", "theirs"]
    mine = tmp_path / "shared"
    mine.mkdir()
    os.chown(mine, 4321, 4321)
    with pytest.raises(UsageError, match="belongs to another user"):
        _Study().own(mine)


def test_a_search_refuses_a_cache_folder_it_does_not_own(tmp_path, model_file, space_file):
    folder = tmp_path / "mine"
    _file(folder, "notes.txt", 10, age_s=0)
    with pytest.raises(UsageError, match=r"holds files \(notes.txt\)"):
        Search(_request(tmp_path, model_file, space_file, str(folder)), scripted.ScriptedRunner())
    assert os.listdir(folder) == ["notes.txt"]


def test_studies_share_a_folder_autotune_made_and_a_marker_neither_record_knows_is_refused(
    tmp_path, model_file, space_file, monkeypatch
):
    """A shared $AUTOTUNE_CACHE_DIR serves every study of one database (the study that made
    the folder recorded its id) and, on the machine that made it, studies of other
    databases (this user's registry); a folder another machine's study made and marked is
    not adopted by a study of another database."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    folder = str(tmp_path / "shared")
    for name, db in (("a", "t.db"), ("b", "t.db"), ("c", "other.db")):
        Search(
            _request(tmp_path, model_file, space_file, folder, name, db), scripted.ScriptedRunner()
        )
    (made,) = (user_cache() / "kernel-caches").glob("*.json")
    assert made.stem in (tmp_path / "shared" / MARKER).read_text()
    made.unlink()  # as on a machine that did not make it
    Search(
        _request(tmp_path, model_file, space_file, folder, "d", "t.db"), scripted.ScriptedRunner()
    )
    with pytest.raises(UsageError, match="nor for this user on this machine"):
        Search(
            _request(tmp_path, model_file, space_file, folder, "e", "third.db"),
            scripted.ScriptedRunner(),
        )


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


def _request(
    tmp_path, model_file, space_file, cache: str, study: str = "s", db: str = "t.db"
) -> SearchRequest:
    space = load_space(space_file("aot_eager"), "cpu")
    settings = StudySettings(
        model_path=model_file("tiny"), device="cpu", space=space.to_dict(),
        space_hash=space.content_hash(), torch_version=torch.__version__, scope="whole",
        trials=2,
    )  # fmt: skip
    return SearchRequest(study, f"sqlite:///{tmp_path}/{db}", settings, cache_dir=cache)
