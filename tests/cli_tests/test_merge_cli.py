"""``autotune merge``: files tuned on different machines become one, with their caches, and
``autotune show`` explains each entry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from autotune.cli import main
from autotune.runtime.config import BestConfig, CompileConfig, ConfigFile
from autotune.ship._archive import pack


def _file(folder: Path, device_name: str, created_at: str | None = None,
          **environment: Any) -> Path:  # fmt: skip
    """A best-config file tuned on ``device_name`` (written now, or at ``created_at``), with a
    cache archive beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "filled"
    (source / "ab").mkdir(parents=True)
    (source / "ab" / "kernel.so").write_bytes(device_name.encode())
    cache = pack(source, folder / "best.cache.tar.gz")
    env = {"device": "cpu", "device_name": device_name, "torch": torch.__version__}
    cache["valid_for"] = dict(env)
    written = {"created_at": created_at} if created_at else {}
    BestConfig(decision="compile", reason="r", config=CompileConfig(backend="eager"),
               environment={**env, **environment}, cache=cache,
               workload={"kind": "infer", "device": "cpu"}, **written,
               ).dump(folder / "best.json")  # fmt: skip
    return folder / "best.json"


def test_merge_combines_entries_and_copies_each_cache_under_its_own_name(tmp_path, capsys):
    # Of two entries for other CPUs, apply takes the newest: a's here, whichever second each
    # file was written in (timestamps are to the second).
    a = _file(tmp_path / "a", "CPU A", created_at="2026-11-02T00:00:00+00:00")
    b = _file(tmp_path / "b", "CPU B", created_at="2026-11-01T00:00:00+00:00")
    out = tmp_path / "deploy" / "fleet.json"

    assert main(["merge", str(a), str(b), "-o", str(out)]) == 0

    printed = capsys.readouterr().out
    assert "2 entries: CPU A" in printed
    file = ConfigFile.load(out)
    names = [str(e.cache["path"]) for e in file.entries if e.cache]
    assert len(set(names)) == 2 and all(n.startswith("fleet.") for n in names)
    for entry, source in zip(file.entries, (a, b), strict=True):
        assert entry.cache is not None
        copied = out.parent / str(entry.cache["path"])
        assert copied.read_bytes() == (source.parent / "best.cache.tar.gz").read_bytes()

    assert main(["show", str(out)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "2 entries, one per machine" in text
    assert "--- entry 1 of 2: CPU A" in text and "--- entry 2 of 2: CPU B" in text
    assert "Here: autotune.apply uses entry 1: no entry for" in text  # this CPU is neither

    assert main(["show", str(out), "--json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert [e["machine"] for e in facts["entries"]][0].startswith("CPU A, torch")
    assert facts["applies_here"]["match"] == "same-class"


def test_merge_refuses_a_changed_cache_and_drops_a_missing_one(tmp_path, capsys):
    a = _file(tmp_path / "a", "CPU A")
    b = _file(tmp_path / "b", "CPU B")
    out = tmp_path / "fleet.json"
    with open(b.parent / "best.cache.tar.gz", "ab") as f:
        f.write(b"\0")

    assert main(["merge", str(a), str(b), "-o", str(out)]) == 2
    assert "does not have the SHA-256" in capsys.readouterr().err
    assert not out.exists()

    (b.parent / "best.cache.tar.gz").unlink()
    assert main(["merge", str(a), str(b), "-o", str(out)]) == 0
    assert "merged without its cache" in capsys.readouterr().out
    entries = ConfigFile.load(out).entries
    assert entries[0].cache is not None and entries[1].cache is None


def test_the_later_file_wins_for_the_same_machine(tmp_path, capsys):
    first = _file(tmp_path / "a", "CPU A")
    second = _file(tmp_path / "b", "CPU A", host="other")
    out = tmp_path / "fleet.json"
    assert main(["merge", str(first), str(second), "-o", str(out)]) == 0
    assert f"the entry of {second} replaces {first}'s" in capsys.readouterr().out
    (entry,) = ConfigFile.load(out).entries
    assert entry.environment["host"] == "other"
    assert main(["merge", str(first), str(tmp_path / "missing.json"), "-o", str(out)]) == 2


def test_a_merge_that_dies_mid_copy_leaves_the_deployed_files_as_they_were(tmp_path, monkeypatch):
    """A copy used to be written onto the artifact's final name: one cut short left a truncated
    archive that the deployed file's SHA-256 no longer matched."""
    from autotune import _atomic

    a = _file(tmp_path / "a", "CPU A")
    out = tmp_path / "deploy" / "fleet.json"
    assert main(["merge", str(a), "-o", str(out)]) == 0
    deployed = {p.name: p.read_bytes() for p in out.parent.iterdir()}
    b = _file(tmp_path / "b", "CPU A")  # the same machine again: its cache replaces a's

    def dies(source: Any, target: Any) -> None:
        Path(target).write_bytes(Path(source).read_bytes()[:10])
        raise OSError("No space left on device")

    monkeypatch.setattr(_atomic.shutil, "copyfile", dies)
    with pytest.raises(OSError, match="No space left"):
        main(["merge", str(b), "-o", str(out)])

    assert {p.name: p.read_bytes() for p in out.parent.iterdir()} == deployed


def test_merge_refuses_an_entry_a_reader_would_refuse_unless_vouched_for(tmp_path, capsys):
    """Every writer checks an entry as a file holding it is checked when read (issue 41)."""
    source = tmp_path / "a.json"
    config = CompileConfig(options={"cpp.cxx": [None, "/opt/gcc/bin/g++"]})
    environment = {"device_name": "CPU A", "torch": torch.__version__}
    BestConfig(decision="compile", reason="r", config=config, environment=environment).dump(source)
    out = tmp_path / "fleet.json"
    assert main(["merge", str(source), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"The config of the entry of {source} for CPU A" in err
    assert "options.cpp.cxx: names a program" in err and not out.exists()
    opted = ["--allow-unsafe-knob", "inductor.cpp.cxx"]
    assert main(["merge", str(source), "-o", str(out), *opted]) == 0 and out.exists()
