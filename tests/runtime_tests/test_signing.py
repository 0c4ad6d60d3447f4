"""Signed best-config files: with ``$AUTOTUNE_SIGNING_KEY`` set, what autotune writes is signed,
an entry changed after signing is refused, and ``require_signature`` refuses unsigned files."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

import autotune
from autotune.cli import main
from autotune.runtime import BestConfig, CompileConfig, ConfigError, ConfigFile
from autotune.ship import CACHE_SUFFIX, artifact_name, write_entry
from autotune.ship._archive import pack

KEY = "0123456789abcdef-test-key"


def _best(tmp_path, device_name: str = "CPU A") -> BestConfig:
    (tmp_path / "filled").mkdir(exist_ok=True)
    (tmp_path / "filled" / "k.so").write_bytes(b"compiled")
    cache = {**pack(tmp_path / "filled", tmp_path / "best.cache.tar.gz"), "valid_for": {}}
    return BestConfig(
        decision="compile", reason="r", config=CompileConfig(backend="eager"), cache=cache,
        environment={"device_name": device_name, "torch": torch.__version__},
    )  # fmt: skip


def test_with_the_key_set_a_written_file_is_signed_and_reads_back(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOTUNE_SIGNING_KEY", KEY)
    path = tmp_path / "best.json"
    write_entry(path, _best(tmp_path))
    write_entry(path, BestConfig(decision="do_not_compile", reason="eager won",
                                 environment={"device_name": "CPU B"}))  # fmt: skip

    entries = json.loads(path.read_text())["entries"]
    assert all(e["signature"]["alg"] == "hmac-sha256" for e in entries)
    assert len(ConfigFile.load(path).entries) == 2
    model = autotune.apply(torch.nn.Linear(4, 4), path, require_signature=True,
                           check_environment=False)  # fmt: skip
    assert model(torch.randn(2, 4)).shape == (2, 4)


@pytest.mark.parametrize(
    "edit", ["the config", "the cache's SHA-256", "the decision"]
)  # fmt: skip
def test_an_entry_changed_after_it_was_signed_is_refused(tmp_path, monkeypatch, edit):
    monkeypatch.setenv("AUTOTUNE_SIGNING_KEY", KEY)
    path = tmp_path / "best.json"
    _best(tmp_path).dump(path)
    data = json.loads(path.read_text())
    if edit == "the config":
        data["config"]["options"] = {"max_autotune": True}
        data["config"]["backend"] = "inductor"
        data["config_hash"] = CompileConfig.from_dict(data["config"]).config_hash()
    elif edit == "the cache's SHA-256":
        data["cache"]["sha256"] = "ab" * 32
    else:
        data["decision"], data["config"], data["config_hash"] = "do_not_compile", None, None
    path.write_text(json.dumps(data))

    with pytest.raises(ConfigError, match="it was changed after it was signed"):
        autotune.load(path)
    monkeypatch.delenv("AUTOTUNE_SIGNING_KEY")
    assert autotune.load(path)  # without the key nothing can be checked: the file reads


def test_require_signature_refuses_an_unsigned_file_and_one_signed_with_another_key(
    tmp_path, monkeypatch
):
    path = tmp_path / "best.json"
    _best(tmp_path).dump(path)  # no key: unsigned
    monkeypatch.setenv("AUTOTUNE_SIGNING_KEY", KEY)
    with pytest.raises(ConfigError, match="refused: it is not signed"):
        autotune.apply(torch.nn.Linear(4, 4), path, require_signature=True)
    monkeypatch.setenv("AUTOTUNE_REQUIRE_SIGNATURE", "1")
    with pytest.raises(ConfigError, match="refused: it is not signed"):
        autotune.apply(torch.nn.Linear(4, 4), path)

    monkeypatch.setenv("AUTOTUNE_SIGNING_KEY", "another-key-of-16-characters")
    _best(tmp_path).dump(path)
    monkeypatch.setenv("AUTOTUNE_SIGNING_KEY", KEY)
    with pytest.raises(ConfigError, match="signed with another key"):
        autotune.apply(torch.nn.Linear(4, 4), path)
    code = autotune.apply(torch.nn.Linear(4, 4), CompileConfig(backend="eager"))  # code: fine
    assert code(torch.randn(2, 4)).shape == (2, 4)


def test_require_signature_without_a_key_says_what_to_set(tmp_path, monkeypatch):
    path = tmp_path / "best.json"
    _best(tmp_path).dump(path)
    with pytest.raises(ConfigError, match=r"\$AUTOTUNE_SIGNING_KEY is not set here"):
        autotune.apply(torch.nn.Linear(4, 4), path, require_signature=True)
    monkeypatch.setenv("AUTOTUNE_SIGNING_KEY", "short")
    with pytest.raises(ConfigError, match="a signing key has at least 16"):
        autotune.apply(torch.nn.Linear(4, 4), path, require_signature=True)


def test_merge_keeps_each_signature_as_it_was_and_resign_vouches_on_purpose(
    tmp_path, monkeypatch, capsys
):
    """Issue 41, item 2: merging an unsigned entry, or one signed with another key, re-signed
    it with this machine's key, silently, and show said "verified here"."""
    unsigned, theirs = tmp_path / "a" / "best.json", tmp_path / "b" / "best.json"
    unsigned.parent.mkdir()
    _best(unsigned.parent, "CPU A").dump(unsigned)  # no key: unsigned
    theirs.parent.mkdir()
    monkeypatch.setenv("AUTOTUNE_SIGNING_KEY", "another-machines-key-0123")
    _best(theirs.parent, "CPU B").dump(theirs)
    monkeypatch.setenv("AUTOTUNE_SIGNING_KEY", KEY)
    out = tmp_path / "fleet.json"

    assert main(["merge", str(unsigned), str(theirs), "-o", str(out)]) == 0
    entries = json.loads(out.read_text())["entries"]
    assert "signature" not in entries[0]  # an unsigned entry stays unsigned...
    # ...and another machine's keeps its key, but its cache was renamed beside the output:
    # what its signature covered changed, so it is written unsigned, saying so
    assert "signature" not in entries[1]
    assert "which its signature (key " in capsys.readouterr().out
    with pytest.raises(ConfigError, match="refused: it is not signed"):
        autotune.apply(torch.nn.Linear(4, 4), out, require_signature=True)

    # An entry merged under the artifact names it already has keeps its signature.
    kept = tmp_path / "c" / "best.json"
    kept.parent.mkdir()
    entry = _best(kept.parent, "CPU B")
    name = artifact_name(kept, entry, CACHE_SUFFIX)
    shutil.move(kept.with_name("best.cache.tar.gz"), kept.with_name(name))
    entry.cache = {**(entry.cache or {}), "path": name}
    monkeypatch.setenv("AUTOTUNE_SIGNING_KEY", "another-machines-key-0123")
    entry.dump(kept)
    their_signature = json.loads(kept.read_text())["signature"]
    monkeypatch.setenv("AUTOTUNE_SIGNING_KEY", KEY)
    assert main(["merge", str(kept), "-o", str(kept)]) == 0
    assert json.loads(kept.read_text())["signature"] == their_signature
    assert main(["show", str(kept)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"Signature: signed with key {their_signature['key_id']}; not checked here" in text

    assert main(["merge", str(unsigned), str(theirs), "-o", str(out), "--resign"]) == 0
    assert main(["show", str(out)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Signature: signed with key" in text and "verified with $AUTOTUNE_SIGNING_KEY" in text
    autotune.apply(torch.nn.Linear(4, 4), out, require_signature=True, check_environment=False)


def test_a_writer_signs_only_the_entry_it_produced(tmp_path, monkeypatch):
    path = tmp_path / "best.json"
    _best(tmp_path, "CPU A").dump(path)  # another machine's entry, unsigned
    monkeypatch.setenv("AUTOTUNE_SIGNING_KEY", KEY)
    write_entry(path, BestConfig(decision="do_not_compile", reason="eager won",
                                 environment={"device_name": "CPU B"}))  # fmt: skip
    kept, mine = json.loads(path.read_text())["entries"]
    assert "signature" not in kept and mine["signature"]["alg"] == "hmac-sha256"
