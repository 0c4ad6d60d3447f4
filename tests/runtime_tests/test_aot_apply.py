"""The AOTInductor package end to end: `autotune cache export` writes it beside the file
only where one package can serve the config, and autotune.apply in a fresh process loads it
with the model's weights and compiles nothing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import autotune
from autotune.cli import main
from autotune.runtime import BestConfig, CompileConfig, ConfigFile, EnvironmentMismatchWarning
from autotune.runtime.cache import CacheRefusedError

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _best(folder: Path, config: CompileConfig) -> Path:
    model = folder / "tiny.py"
    shutil.copy(FIXTURES / "models" / "tiny.py", model)
    best = folder / "best.json"
    BestConfig(decision="compile", reason="r", config=config, model={"source": str(model)},
               metrics={"graph_breaks": 0},
               workload={"kind": "infer", "device": "cpu", "seed": 0}).dump(best)  # fmt: skip
    return best


@pytest.fixture(scope="module")
def packaged(tmp_path_factory) -> Path:
    """A best-config file for the tiny model with an AOTInductor package beside it."""
    from autotune.ship import ship_cache

    folder = tmp_path_factory.mktemp("aot")
    best = _best(folder, CompileConfig())
    ship_cache(best, str(folder / "tiny.py"), cache=False, aot=True)
    return best


@pytest.mark.slow
def test_a_fresh_process_serves_from_the_package_without_compiling(packaged: Path, capsys) -> None:
    entry = autotune.load(packaged)
    assert entry.aot is not None and entry.cache is None
    assert entry.aot["kind"] == "aotinductor-package" and entry.aot["path"].endswith(".pt2")
    assert entry.aot["valid_for"]["device_name"]
    code = f"""
import logging, torch, autotune
from torch._dynamo.utils import counters
from autotune.workload import build_calls, build_model, load_model_file
logging.basicConfig(level=logging.INFO)
module = load_model_file({str(packaged.parent / "tiny.py")!r})
torch.manual_seed(1)  # other weights than the package was checked with: the model's are used
model = build_model(module, "cpu").eval()
(call,) = build_calls(module, "cpu")
with torch.no_grad():
    expected = model(*call.args)
    fast = autotune.apply(model, {str(packaged)!r})
    torch.testing.assert_close(fast(*call.args), expected, rtol=1e-4, atol=1e-4)
print(type(fast).__name__, sum(counters["stats"].values()), sum(counters["inductor"].values()))
"""
    env = {"TORCHINDUCTOR_CACHE_DIR": str(packaged.parent / "fresh"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=True)  # fmt: skip
    kind, dynamo_events, inductor_events = done.stdout.split()[-3:]
    assert kind == "PackagedModule" and (dynamo_events, inductor_events) == ("0", "0")
    assert "loaded the AOTInductor package" in done.stderr

    assert main(["show", str(packaged)]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "AOTInductor package: best." in shown and "valid here: autotune.apply loads it" in shown


@pytest.mark.slow
def test_a_changed_package_is_refused_and_a_training_model_compiles_instead(
    packaged: Path, tmp_path: Path
) -> None:
    for name in (packaged.name, "tiny.py", autotune.load(packaged).aot["path"]):  # type: ignore[index]
        shutil.copy(packaged.parent / name, tmp_path / name)
    best = tmp_path / packaged.name
    from autotune.workload import build_model, load_model_file

    model = build_model(load_model_file(tmp_path / "tiny.py"), "cpu")
    compiled = autotune.apply(model, best, check_environment=False)  # train mode
    assert compiled is model and model._compiled_call_impl is not None  # compiled in place

    package = tmp_path / autotune.load(best).aot["path"]  # type: ignore[index]
    with open(package, "ab") as f:
        f.write(b"\0")
    with pytest.raises(CacheRefusedError, match="changed or replaced after it was written"):
        autotune.apply(model.eval(), best, check_environment=False, strict=True)
    # production keeps serving: a warning names the package, and the model compiles
    with pytest.warns(EnvironmentMismatchWarning, match=r"package is not used: .*SHA-256"):
        served = autotune.apply(model.eval(), best, check_environment=False)
    assert served is model and model._compiled_call_impl is not None
    # cache=False ignores the package, changed or not
    assert autotune.apply(model.eval(), best, cache=False) is model


def test_a_package_made_for_another_cpu_is_skipped_with_a_warning(tmp_path: Path) -> None:
    best = _best(tmp_path, CompileConfig(backend="eager"))
    (tmp_path / "best.x.pt2").write_bytes(b"never loaded")
    data = json.loads(best.read_text())
    data["aot"] = {"kind": "aotinductor-package", "path": "best.x.pt2", "sha256": "0" * 64,
                   "bytes": 12, "valid_for": {"device_name": "Another CPU"}}  # fmt: skip
    best.write_text(json.dumps(data))
    model = torch.nn.Linear(16, 8).eval()
    with pytest.warns(EnvironmentMismatchWarning, match="package was built elsewhere"):
        compiled = autotune.apply(model, best, check_environment=False)
    assert type(compiled).__name__ == "OptimizedModule"  # nn.Linear's forward is torch's own


def test_no_package_for_a_regional_scope_and_the_output_says_why(tmp_path, capsys) -> None:
    best = _best(tmp_path, CompileConfig(backend="inductor", scope={"compile": ["a"]}))

    model = str(tmp_path / "tiny.py")
    assert main(["cache", "export", str(best), "--model", model, "--no-cache"]) == 0

    out = " ".join(capsys.readouterr().out.split())
    assert "no AOTInductor package was written" in out and "scope" in out
    (entry,) = ConfigFile.load(best).entries
    assert entry.aot is None and not list(tmp_path.glob("*.pt2"))
    assert main(["cache", "export", str(best), "--model", model, "--no-cache", "--no-aot"]) == 2


def test_cache_export_runs_only_a_model_file_its_command_line_names(tmp_path, capsys) -> None:
    """The file records where the model was (model.source), but a file never names code to
    run: without --model nothing is imported and the command says what to pass."""
    marker = tmp_path / "imported"
    evil = tmp_path / "evil.py"
    evil.write_text(f"open({str(marker)!r}, 'w').close()\n")
    best = _best(tmp_path, CompileConfig())
    data = json.loads(best.read_text())
    data["model"]["source"] = str(evil)
    best.write_text(json.dumps(data))

    assert main(["cache", "export", str(best), "--no-aot"]) == 2

    err = " ".join(capsys.readouterr().err.split())
    assert "never names code for autotune to run" in err and "pass --model PATH" in err
    assert str(evil) in err and not marker.exists()


@pytest.mark.slow
def test_the_package_loaded_is_the_copy_whose_hash_was_checked(
    packaged: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 41, item 4: the package was hashed by path and loaded by path, so a writer who
    replaced it between the two got its bytes loaded. Swapped right after the check here, the
    file beside the config is not what torch's loader reads: a private copy, checked, is."""
    from autotune.runtime import aot

    for name in (packaged.name, "tiny.py", autotune.load(packaged).aot["path"]):  # type: ignore[index]
        shutil.copy(packaged.parent / name, tmp_path / name)
    best = tmp_path / packaged.name
    package = tmp_path / autotune.load(best).aot["path"]  # type: ignore[index]
    good = package.read_bytes()
    checked, loaded = aot.refuse_if_changed, aot._load_runner
    given: list[bytes] = []

    def check_then_swap(*args, **kwargs) -> None:
        checked(*args, **kwargs)
        package.write_bytes(b"planted shared objects")  # the attacker's window

    def load(path: Path):
        given.append(path.read_bytes())
        assert path != package and path.parent != package.parent
        return loaded(path)

    monkeypatch.setattr(aot, "refuse_if_changed", check_then_swap)
    monkeypatch.setattr(aot, "_load_runner", load)
    from autotune.workload import build_model, load_model_file

    model = build_model(load_model_file(tmp_path / "tiny.py"), "cpu").eval()
    served = autotune.apply(model, best, check_environment=False, strict=True)
    assert given == [good] and package.read_bytes() != good
    assert type(served).__name__ == "PackagedModule"
    x = torch.randn(4, 16)
    with torch.no_grad():
        torch.testing.assert_close(served(x), model(x), rtol=1e-4, atol=1e-4)
