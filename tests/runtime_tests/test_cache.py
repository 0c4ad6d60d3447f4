"""Compile caches shipped beside a best-config file: loaded when valid here, skipped with a
warning when made elsewhere, refused when changed."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
import torch

import autotune
from autotune.runtime import BestConfig, CompileConfig, ConfigError, EnvironmentMismatchWarning
from autotune.runtime.cache import CacheRefusedError, validity_keys
from autotune.ship._archive import pack

FIXTURES = Path(__file__).parents[1] / "fixtures"


@pytest.fixture
def inductor_dir(tmp_path, monkeypatch) -> Path:
    """This process's Inductor cache directory for the test (read on every call)."""
    target = tmp_path / "inductor"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(target))
    return target


def _shipped(tmp_path: Path, **valid_for: object) -> Path:
    """A best-config file with a cache beside it holding one marker file."""
    source = tmp_path / "filled"
    (source / "ab").mkdir(parents=True)
    (source / "ab" / "kernel.so").write_bytes(b"compiled")
    best = tmp_path / "best.json"
    entry = pack(source, tmp_path / "best.cache.tar.gz")
    entry["valid_for"] = {**validity_keys("cpu"), **valid_for}
    BestConfig(decision="compile", reason="r", config=CompileConfig(backend="eager"),
               cache=entry).dump(best)  # fmt: skip
    return best


def test_a_valid_cache_is_loaded_into_the_inductor_cache(tmp_path, inductor_dir, caplog):
    best = _shipped(tmp_path)
    caplog.set_level(logging.INFO, logger="autotune")

    autotune.apply(torch.nn.Linear(4, 4), best)

    assert (inductor_dir / "ab" / "kernel.so").read_bytes() == b"compiled"
    assert "loaded the compile cache" in caplog.text
    assert autotune.load(best).cache["sha256"] == json.loads(best.read_text())["cache"]["sha256"]


def test_a_changed_cache_is_never_loaded_and_production_keeps_serving(tmp_path, inductor_dir):
    best = _shipped(tmp_path)
    with open(tmp_path / "best.cache.tar.gz", "ab") as f:
        f.write(b"\0")

    with pytest.warns(EnvironmentMismatchWarning, match="best.cache.tar.gz has SHA-256"):
        model = autotune.apply(torch.nn.Linear(4, 4), best)

    assert not (inductor_dir / "ab").exists()
    assert model(torch.randn(2, 4)).shape == (2, 4)  # compiled as without a cache
    with pytest.raises(CacheRefusedError, match="changed or replaced after it was written"):
        autotune.apply(torch.nn.Linear(4, 4), best, strict=True)
    assert not (inductor_dir / "ab").exists()


def test_a_cache_export_killed_mid_write_leaves_the_shipped_cache_serving(tmp_path, inductor_dir):
    """SIGKILL while `pack` writes the archive: the archive the file records is untouched (the
    new one was being written under a temporary name), so apply still loads it."""
    best = _shipped(tmp_path)
    big = tmp_path / "big"
    big.mkdir()
    for i in range(400):  # random bytes: gzip cannot shrink them, so packing takes a while
        (big / f"k{i}.so").write_bytes(os.urandom(64 * 1024))
    code = (
        "import sys; from autotune.ship._archive import pack; "
        f"pack({str(big)!r}, {str(tmp_path / 'best.cache.tar.gz')!r})"
    )
    child = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".best.cache.tar.gz.*")) and child.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    child.kill()
    child.wait()

    autotune.apply(torch.nn.Linear(4, 4), best)  # no warning, no error: the old cache serves

    assert (inductor_dir / "ab" / "kernel.so").read_bytes() == b"compiled"


def test_extracted_files_keep_no_setuid_setgid_or_sticky_bit(tmp_path, inductor_dir):
    best = _shipped(tmp_path)
    archive = tmp_path / "best.cache.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("ab/kernel.so")
        info.size, info.mode = 8, 0o7777
        tar.addfile(info, io.BytesIO(b"compiled"))
    data = json.loads(best.read_text())
    data["cache"]["sha256"] = hashlib.sha256(archive.read_bytes()).hexdigest()
    best.write_text(json.dumps(data))

    autotune.apply(torch.nn.Linear(4, 4), best)

    mode = (inductor_dir / "ab" / "kernel.so").stat().st_mode
    assert mode & 0o7000 == 0 and mode & 0o022 == 0, oct(mode)


def test_a_packed_archive_records_plain_modes(tmp_path):
    folder = tmp_path / "filled"
    folder.mkdir()
    (folder / "k.so").write_bytes(b"x")
    (folder / "k.so").chmod(0o6777)

    pack(folder, tmp_path / "a.tar.gz")

    with tarfile.open(tmp_path / "a.tar.gz") as tar:
        (member,) = tar.getmembers()
    assert member.mode == 0o755 and member.uid == 0 and member.uname == ""


def test_a_cache_made_for_another_torch_is_skipped_with_a_warning(tmp_path, inductor_dir):
    best = _shipped(tmp_path, torch="1.0.0")

    with pytest.warns(EnvironmentMismatchWarning, match="torch: cached for '1.0.0'"):
        model = autotune.apply(torch.nn.Linear(4, 4), best, check_environment=False)

    assert not (inductor_dir / "ab").exists()
    assert model(torch.randn(2, 4)).shape == (2, 4)  # compiled as without a cache


def test_cache_false_ignores_it(tmp_path, inductor_dir, recwarn):
    best = _shipped(tmp_path, torch="1.0.0")

    autotune.apply(torch.nn.Linear(4, 4), best, cache=False, check_environment=False)

    assert not (inductor_dir / "ab").exists() and not recwarn.list


def test_an_archive_reaching_outside_the_cache_is_refused(tmp_path, inductor_dir):
    best = _shipped(tmp_path)
    archive = tmp_path / "best.cache.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("../escaped.so")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"bad"))
    data = json.loads(best.read_text())
    data["cache"]["sha256"] = hashlib.sha256(archive.read_bytes()).hexdigest()
    best.write_text(json.dumps(data))

    with pytest.raises(CacheRefusedError, match="not a plain file inside the cache"):
        autotune.apply(torch.nn.Linear(4, 4), best, strict=True)
    with pytest.warns(EnvironmentMismatchWarning, match="not a plain file inside the cache"):
        autotune.apply(torch.nn.Linear(4, 4), best)

    assert not (tmp_path / "escaped.so").exists()


def test_a_malformed_cache_entry_is_a_config_error(tmp_path):
    best = _shipped(tmp_path)
    data = json.loads(best.read_text())
    data["cache"]["sha256"] = "not-a-digest"
    data["cache"]["path"] = "../elsewhere.tar.gz"

    with pytest.raises(ConfigError, match=r"cache\.sha256.*\n.*cache\.path|cache\.path.*\n.*sha"):
        BestConfig.from_dict(data)


@pytest.mark.parametrize(
    ("weights", "problem"),
    [
        ({"weights": "inline"}, "aot.weights: expected 'from-model' or 'embedded'"),
        ({"weights": "embedded"}, "aot.weights_sha256: expected 64 lowercase hex digits"),
        ({"weights": "embedded", "weights_sha256": "ab" * 16}, "aot.weights_sha256"),
    ],
)
def test_a_package_says_where_its_weights_come_from(tmp_path, weights, problem):
    data = json.loads(_shipped(tmp_path).read_text())
    data["aot"] = {**data["cache"], "kind": "aotinductor-package", **weights}

    with pytest.raises(ConfigError, match=re.escape(problem)):
        BestConfig.from_dict(data)
    data["aot"]["weights"], data["aot"]["weights_sha256"] = "embedded", "ab" * 32
    assert BestConfig.from_dict(data).aot["weights"] == "embedded"


@pytest.mark.slow
@pytest.mark.parametrize("precision", [{}, {"quantize": "int8-dynamic"}], ids=["fp32", "int8"])
def test_an_exported_cache_makes_a_fresh_process_hit_the_fx_graph_cache(tmp_path, precision):
    """The whole path with real Inductor: export from a file, then a fresh process with an
    empty cache directory loads the archive and compiles from it, without g++. A quantized
    config too: torchao's int8 weights are graph inputs, so the graph compiled for the search's
    weights serves the weights production loads."""
    from autotune.ship import ship_cache

    if precision:
        pytest.importorskip("torchao")

    model = tmp_path / "tiny.py"
    shutil.copy(FIXTURES / "models" / "tiny.py", model)
    best = tmp_path / "best.json"
    BestConfig(decision="compile", reason="r", config=CompileConfig(precision=precision),
               model={"source": str(model)},
               workload={"kind": "infer", "device": "cpu", "seed": 0}).dump(best)  # fmt: skip

    ship_cache(best, str(model))

    shipped = autotune.load(best).cache
    assert shipped and (tmp_path / shipped["path"]).stat().st_size == shipped["bytes"]
    code = f"""
import torch, autotune
from torch._dynamo.utils import counters
from autotune.workload import build_calls, build_model, load_model_file
module = load_model_file({str(model)!r})
torch.manual_seed(1)  # other weights than the export's
m = build_model(module, "cpu").eval()
(call,) = build_calls(module, "cpu")
with torch.no_grad():
    autotune.apply(m, {str(best)!r})(*call.args)
print(counters["inductor"]["fxgraph_cache_hit"], counters["inductor"]["fxgraph_cache_miss"])
"""
    env = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "fresh"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=True)  # fmt: skip
    hits, misses = map(int, done.stdout.split()[-2:])
    assert (hits, misses) == (1, 0), done.stderr[-2000:]
