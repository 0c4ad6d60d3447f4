"""Signed best-config files: with ``$AUTOTUNE_SIGNING_KEY`` set, what autotune writes is signed,
an entry changed after signing is refused, and ``require_signature`` refuses unsigned files."""

from __future__ import annotations

import datetime
import functools
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch

import autotune
from autotune.cli import main
from autotune.runtime import (
    BestConfig,
    CompileConfig,
    ConfigError,
    ConfigFile,
    EnvironmentMismatchWarning,
)
from autotune.runtime.fingerprint import model_fingerprint, weights_sha256
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


# --- issue 56, item 5: what a signed entry is bound to, and how the requirement is read ---


class _Net(torch.nn.Module):
    def __init__(self, width: int = 4) -> None:
        super().__init__()
        self.a = torch.nn.Linear(4, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.a(x)


def _bound(path: Path, model: torch.nn.Module, weights: bool = False, **more: Any) -> BestConfig:
    """An entry tuned on ``model`` (its weights too, with ``weights``), signed with KEY."""
    bound = model_fingerprint(model)
    if weights:
        bound["weights_sha256"] = weights_sha256(model)
    best = BestConfig(decision="compile", reason="r", config=CompileConfig(backend="eager"),
                      model=bound, **more)  # fmt: skip
    best.dump(path)
    return best


@pytest.mark.parametrize("check_environment", [True, False])
def test_require_signature_refuses_a_signed_entry_applied_to_another_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, check_environment: bool
) -> None:
    """A signed entry copied beside another model's file served it, with a warning at most
    (none with check_environment=False)."""
    monkeypatch.setenv("AUTOTUNE_SIGNING_KEY", KEY)
    path = tmp_path / "best.json"
    _bound(path, _Net())

    with pytest.raises(ConfigError, match="bound to another model") as e:
        autotune.apply(_Net(width=8), path, require_signature=True,
                       check_environment=check_environment)  # fmt: skip
    assert "module paths, classes or tensor shapes differ" in str(e.value)
    autotune.apply(_Net(), path, require_signature=True, check_environment=check_environment)


def test_a_weights_hash_in_the_entry_is_compared_at_apply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The structure hash leaves the weights out: a bf16 config tuned on model A served model
    B of the same structure."""
    monkeypatch.setenv("AUTOTUNE_SIGNING_KEY", KEY)
    path = tmp_path / "best.json"
    tuned = _Net()
    _bound(path, tuned, weights=True)
    other = _Net()  # the same structure, other weights

    autotune.apply(tuned, path, require_signature=True, check_environment=False)
    with pytest.raises(ConfigError, match="weights: bound to weights"):
        autotune.apply(other, path, require_signature=True, check_environment=False)
    with pytest.warns(EnvironmentMismatchWarning, match="the model's parameter or buffer values"):
        autotune.apply(_Net(), path)  # not required: applied, saying so


def test_not_before_refuses_an_entry_made_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A signed file restored from an earlier release (a rollback) verified and served."""
    monkeypatch.setenv("AUTOTUNE_SIGNING_KEY", KEY)
    path = tmp_path / "best.json"
    _bound(path, _Net(), created_at="2026-01-01T00:00:00+00:00")
    apply = functools.partial(autotune.apply, require_signature=True, check_environment=False)

    with pytest.raises(ConfigError, match=r"rollback.*lower not_before"):
        apply(_Net(), path, not_before="2026-02-01")
    # compared as times: 01:00 at +02:00 is the evening before, in UTC
    apply(_Net(), path, not_before="2026-01-01T01:00:00+02:00")
    apply(_Net(), path, not_before=datetime.datetime(2026, 1, 1))  # naive: UTC, the same time
    monkeypatch.setenv("AUTOTUNE_NOT_BEFORE", "2026-01-01T00:00:01Z")
    with pytest.raises(ConfigError, match="rollback"):
        apply(_Net(), path)
    monkeypatch.setenv("AUTOTUNE_NOT_BEFORE", "last tuesday")
    with pytest.raises(ConfigError, match=r"\$AUTOTUNE_NOT_BEFORE is 'last tuesday'; it takes"):
        apply(_Net(), path)


def test_with_a_key_set_a_stripped_signature_is_never_quieter_than_a_broken_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tampered signed entry was refused while the same entry with its signature stripped
    loaded without a word."""
    monkeypatch.setenv("AUTOTUNE_SIGNING_KEY", KEY)
    path = tmp_path / "best.json"
    _bound(path, _Net())
    data = json.loads(path.read_text())
    del data["signature"]
    path.write_text(json.dumps(data))

    with pytest.warns(UserWarning, match="does not verify it: it is not signed") as seen:
        autotune.apply(_Net(), path, check_environment=False)
    assert [type(w.message).__name__ for w in seen] == ["SignatureWarning"]
    with pytest.raises(ConfigError, match="refused: it is not signed"):
        autotune.apply(_Net(), path, require_signature=True)


@pytest.mark.parametrize(
    ("value", "outcome"),
    [("on", "refused"), ("Yes", "refused"), (" TRUE ", "refused"), ("y", "error"),
     ("enabled", "error"), ("off", "applied"), ("0", "applied"), ("", "applied")],
)  # fmt: skip
def test_require_signature_from_the_environment_is_read_strictly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, outcome: str
) -> None:
    """`on` or `y` silently meant "not required"."""
    path = tmp_path / "best.json"
    _bound(path, _Net())  # no key: unsigned
    monkeypatch.setenv("AUTOTUNE_SIGNING_KEY", KEY)
    monkeypatch.setenv("AUTOTUNE_REQUIRE_SIGNATURE", value)

    if outcome == "applied":
        with pytest.warns(UserWarning, match="it is not signed"):
            autotune.apply(_Net(), path)
        return
    rule = "refused: it is not signed" if outcome == "refused" else (
        rf"\$AUTOTUNE_REQUIRE_SIGNATURE is '{value}', which says neither yes nor no"
    )  # fmt: skip
    with pytest.raises(ConfigError, match=rule):
        autotune.apply(_Net(), path)
