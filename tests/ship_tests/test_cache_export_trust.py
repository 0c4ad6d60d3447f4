"""``cache export`` signs only what it checked (issue 56, items 4 and 5): the entry it read,
verified with this machine's key; compiled from the bytes it read, not from a file swapped
between two reads; for the model the entry was tuned on; bound to its weights on request.

Most tests run a fake compiling process (a Python script behind a fake ``python``) that reads
the file it is handed and reports what a real one reports: the test is about what the parent
records and signs. One test runs the real child on the tiny fixture model with the eager
backend."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

import autotune
from autotune import _process
from autotune.errors import UsageError
from autotune.runtime import signing
from autotune.runtime.config import BestConfig, CompileConfig, ConfigError
from autotune.ship import ship_cache

KEY = "0123456789abcdef-test-key"
OTHER_KEY = "another-machines-key-0123"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# What the real child prints, from the copy of the file it is handed; FAKE_CHILD_REPORT
# overrides facts, FAKE_CHILD_SEEN collects the config hashes it read.
FAKE_CHILD = """
import json, os, sys
args = sys.argv[1:]  # -m autotune.ship._cache_child BEST INDEX MODEL DEVICE PT2 CACHE ALLOWED [W]
data = json.loads(open(args[2], encoding="utf-8").read())
entry = data["entries"][int(args[3])] if "entries" in data else data
cache_dir = os.environ["TORCHINDUCTOR_CACHE_DIR"]
os.makedirs(cache_dir, exist_ok=True)
with open(os.path.join(cache_dir, "graph.bin"), "w") as f:
    f.write("compiled " + entry["config_hash"])
with open(os.environ["FAKE_CHILD_SEEN"], "a") as f:
    f.write(entry["config_hash"] + "\\n")
facts = {"valid_for": {}, "config_hash": entry["config_hash"],
         "model_sha256": entry.get("model", {}).get("sha256")}
if len(args) > 9 and args[9] == "1":
    facts["weights_sha256"] = "ab" * 32
facts.update(json.loads(os.environ.get("FAKE_CHILD_REPORT", "{}")))
print(json.dumps(facts))
"""


@pytest.fixture
def fake_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Makes ship_cache run the fake child; returns the file of config hashes it read."""
    script = tmp_path / "fake_child.py"
    script.write_text(FAKE_CHILD)
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} {script} "$@"\n')
    python.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(python))
    seen = tmp_path / "seen.txt"
    monkeypatch.setenv("FAKE_CHILD_SEEN", str(seen))
    (tmp_path / "model.py").write_text("# never run: the fake child only reports\n")
    return seen


def _entry(backend: str = "eager", **workload: Any) -> BestConfig:
    return BestConfig(
        decision="compile", reason="r", config=CompileConfig(backend=backend),
        model={"sha256": "0123456789abcdef", "root_class": "Tiny", "source": "model.py"},
        workload={"kind": "infer", "device": "cpu", "seed": 0, **workload},
    )  # fmt: skip


def _written(path: Path, key: str | None, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``_entry()`` dumped to ``path``, signed with ``key`` (None: unsigned)."""
    if key is None:
        monkeypatch.delenv("AUTOTUNE_SIGNING_KEY", raising=False)
    else:
        monkeypatch.setenv("AUTOTUNE_SIGNING_KEY", key)
    _entry().dump(path)
    return path


def _stripped_and_relaxed(path: Path) -> None:
    """The laundering of issue 56: the signature stripped, the numerics gate loosened."""
    data = json.loads(path.read_text())
    del data["signature"]
    data["workload"]["relaxed_numerics"] = True
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("case", ["stripped and relaxed", "signed with another key"])
def test_export_refuses_an_entry_this_machines_key_does_not_verify(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_child: Path, case: str
) -> None:
    """It signed the entry it exported whatever it was: an unsigned entry (its signature
    stripped, its numerics gate loosened) came out signed as this machine's, and
    require_signature then accepted it."""
    path = tmp_path / "best.json"
    _written(path, KEY if case == "stripped and relaxed" else OTHER_KEY, monkeypatch)
    if case == "stripped and relaxed":
        _stripped_and_relaxed(path)
    before = path.read_bytes()
    monkeypatch.setenv("AUTOTUNE_SIGNING_KEY", KEY)

    with pytest.raises(UsageError, match="signs only what it produced or verified") as e:
        ship_cache(path, str(tmp_path / "model.py"))

    why = "it is not signed" if case == "stripped and relaxed" else "signed with another key"
    assert why in str(e.value) and "--resign" in str(e.value) and "unset" in str(e.value)
    assert path.read_bytes() == before and not fake_child.exists()  # nothing compiled or written


def test_export_signs_an_entry_its_key_verifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_child: Path
) -> None:
    path = _written(tmp_path / "best.json", KEY, monkeypatch)

    ship_cache(path, str(tmp_path / "model.py"))

    best = autotune.load(path)
    assert best.cache is not None and best.cache["path"] in os.listdir(tmp_path)
    assert signing.problem(best.to_dict(), KEY.encode()) is None  # its new cache signed too


def test_export_without_a_key_drops_the_signature_its_artifacts_void(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_child: Path
) -> None:
    """The stale signature was kept: the file then failed to load where the key is set
    ('changed after it was signed')."""
    path = _written(tmp_path / "best.json", KEY, monkeypatch)
    monkeypatch.delenv("AUTOTUNE_SIGNING_KEY")
    notes: list[str] = []

    ship_cache(path, str(tmp_path / "model.py"), on_note=notes.append)

    monkeypatch.setenv("AUTOTUNE_SIGNING_KEY", KEY)
    best = autotune.load(path)
    assert best.cache is not None and best.signature is None
    assert any("written unsigned" in note for note in notes)


def test_the_child_compiles_the_bytes_the_parent_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_child: Path
) -> None:
    """The parent and the child each read the file: a swap between the two reads had config
    B compiled and its artifacts recorded, and signed, in config A's entry."""
    path = _written(tmp_path / "best.json", KEY, monkeypatch)
    read = autotune.load(path).config_hash
    real_run = _process.run_captured

    def swap_then_run(*args: Any, **kwargs: Any) -> Any:
        _entry(backend="aot_eager").dump(path)  # config B, signed, between the two reads
        return real_run(*args, **kwargs)

    monkeypatch.setattr(_process, "run_captured", swap_then_run)

    ship_cache(path, str(tmp_path / "model.py"))

    assert fake_child.read_text().split() == [read]
    assert autotune.load(path).config_hash == read


@pytest.mark.parametrize(
    ("report", "rule"),
    [
        ({"config_hash": "f" * 16}, "not compiled from"),
        ({"model_sha256": "f" * 16}, "Pass --model with the model file the entry was tuned on"),
    ],
)
def test_export_refuses_what_the_child_did_not_compile_from_the_entry(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fake_child: Path,
    report: dict[str, str],
    rule: str,
) -> None:
    """Another config, or the model file of another model: the artifacts were recorded and
    signed in the entry all the same."""
    path = _written(tmp_path / "best.json", KEY, monkeypatch)
    before = path.read_bytes()
    monkeypatch.setenv("FAKE_CHILD_REPORT", json.dumps(report))

    with pytest.raises(UsageError, match=rule):
        ship_cache(path, str(tmp_path / "model.py"))

    assert path.read_bytes() == before
    assert not list(tmp_path.glob("best.*cache.tar.gz"))


def test_bind_weights_puts_the_weights_hash_in_the_signed_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_child: Path
) -> None:
    path = _written(tmp_path / "best.json", KEY, monkeypatch)

    ship_cache(path, str(tmp_path / "model.py"), bind_weights=True)
    assert autotune.load(path).model["weights_sha256"] == "ab" * 32

    data = json.loads(path.read_text())  # the signature covers it
    data["model"]["weights_sha256"] = "cd" * 32
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="changed after it was signed"):
        autotune.load(path)


def test_an_exported_weights_binding_refuses_other_weights_at_apply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real child: it records the weights the model file builds under the study's seed,
    and apply compares them with the applied model's."""
    monkeypatch.setenv("AUTOTUNE_SIGNING_KEY", KEY)
    model_file = tmp_path / "tiny.py"
    shutil.copy(FIXTURES / "models" / "tiny.py", model_file)
    path = tmp_path / "best.json"
    best = _entry()
    best.model = {}  # no structure recorded: the child's report of it is not compared
    best.dump(path)

    ship_cache(path, str(model_file), bind_weights=True)

    from autotune.workload import build_model, load_model_file

    module = load_model_file(model_file)
    torch.manual_seed(0)
    same = build_model(module, "cpu").eval()
    autotune.apply(same, path, require_signature=True, check_environment=False, cache=False)
    other = build_model(module, "cpu").eval()  # drawn after: other weights
    with pytest.raises(ConfigError, match="bound to another model"):
        autotune.apply(other, path, require_signature=True, check_environment=False)


def test_the_compiling_process_refuses_a_model_of_another_structure_before_compiling(
    tmp_path: Path,
) -> None:
    """The real child: the model file named is not the one the entry was tuned on, and nothing
    is compiled, packaged or recorded."""
    model_file = tmp_path / "tiny.py"
    shutil.copy(FIXTURES / "models" / "tiny.py", model_file)
    path = tmp_path / "best.json"
    _entry().dump(path)  # tuned on structure 0123456789abcdef
    before = path.read_bytes()

    with pytest.raises(UsageError, match="nothing was compiled. Pass --model"):
        ship_cache(path, str(model_file), aot=True)

    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best.json", "tiny.py"]
