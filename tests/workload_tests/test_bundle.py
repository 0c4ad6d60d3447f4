"""Model bundles (autotune.workload._bundle): a model object and its inputs as the model-file
contract."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from autotune.workload import (
    WorkloadError,
    build_calls,
    build_model,
    build_optimizer,
    load_model_file,
    loss_function,
    write_bundle,
)


def test_a_bundle_keeps_the_model_file_contract(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    x = torch.randn(2, 4)
    path = write_bundle(tmp_path, model, {"input": x})
    assert path.name.startswith("Sequential-") and path.suffix == ".pt"
    assert write_bundle(tmp_path, model, {"input": x}) == path  # the same content: one file
    module = load_model_file(path)
    built = build_model(module, "cpu")
    assert built is not model and torch.equal(built[0].weight, model[0].weight)
    (call,) = build_calls(module, "cpu")
    assert torch.equal(call.kwargs["input"], x)
    loss = loss_function(module)(built(x), call.inputs)  # the default loss
    assert loss.requires_grad
    assert isinstance(build_optimizer(module, built), torch.optim.AdamW)


def test_a_factory_and_input_function_are_called_in_the_trial(tmp_path):
    def make() -> nn.Module:
        return nn.Linear(3, 1)

    def inputs(device: str, batch_size: int = 2) -> tuple[torch.Tensor]:
        return (torch.ones(batch_size, 3, device=device),)

    module = load_model_file(write_bundle(tmp_path, make, inputs))
    assert isinstance(build_model(module, "cpu"), nn.Linear)
    assert build_calls(module, "cpu", batch_size=5)[0].args[0].shape == (5, 3)
    fixed = load_model_file(write_bundle(tmp_path, make, (torch.ones(2, 3),)))
    with pytest.raises(WorkloadError, match="cannot be searched; pass inputs=lambda device"):
        build_calls(fixed, "cpu", batch_size=5)


def test_a_pt_file_that_is_no_bundle_is_refused_saying_what_to_pass(tmp_path):
    path = tmp_path / "weights.pt"
    torch.save({"w": torch.ones(2)}, path)
    module = load_model_file(path)
    with pytest.raises(WorkloadError, match="is not a model bundle of autotune.tune"):
        build_model(module, "cpu")


def test_a_file_planted_under_a_bundles_name_is_replaced_and_never_unpickled(tmp_path):
    """Issue 41, item 6: the name claims the content's hash; nobody checked it, so a pickle
    planted under the name a bundle would take ran in the trial process."""
    model, x = nn.Linear(2, 2), torch.ones(1, 2)
    path = write_bundle(tmp_path / "a", model, (x,))
    planted = tmp_path / "b" / path.name
    planted.parent.mkdir()
    planted.write_bytes(b"cos\nsystem\n(S'echo planted'\ntR.")  # a pickle that runs a program
    assert write_bundle(tmp_path / "b", model, (x,)) == planted
    assert planted.read_bytes() == path.read_bytes()  # written afresh over the planted file
    planted.write_bytes(planted.read_bytes() + b"\0")  # changed after autotune wrote it
    module = load_model_file(planted)
    with pytest.raises(WorkloadError, match="does not hold what its name says") as info:
        build_model(module, "cpu")
    assert "it was changed or planted after autotune.tune() wrote it" in str(info.value)
    renamed = tmp_path / f"weights-{'0123456789abcdef' * 2}.pt"
    renamed.write_bytes(path.read_bytes())  # a bundle under a hash that is not its own
    with pytest.raises(WorkloadError, match="does not hold what its name says"):
        build_model(load_model_file(renamed), "cpu")


def test_a_bundles_name_holds_128_bits_of_its_hash_and_a_shorter_name_is_refused(tmp_path):
    """Issue 56, item 8: a name held 48 bits of the SHA-256, so other bytes hashing to a
    bundle's name (a planted pickle with a junk zip entry) were a feasible search."""
    import hashlib

    path = write_bundle(tmp_path, nn.Linear(2, 2), (torch.ones(1, 2),))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert path.name == f"Linear-{digest[:32]}.pt"
    short = tmp_path / f"Linear-{digest[:12]}.pt"  # the name such a bundle had before
    short.write_bytes(path.read_bytes())
    with pytest.raises(WorkloadError, match="is not a model bundle of autotune.tune"):
        build_model(load_model_file(short), "cpu")


def test_a_bundle_holds_a_traffic_mix_and_hashes_as_before_without_one(tmp_path):
    model, x = nn.Linear(4, 4), torch.ones(2, 4)
    plain = write_bundle(tmp_path, model, (x,))
    assert write_bundle(tmp_path, model, (x,), None) == plain
    mixed = write_bundle(tmp_path, model, None, [((x,), 3), ({"input": x[:1]}, 1)])
    assert mixed != plain
    first, second = build_calls(load_model_file(mixed), "cpu")
    assert (first.weight, second.weight) == (3.0, 1.0)
    assert torch.equal(first.args[0], x) and second.kwargs["input"].shape == (1, 4)
    assert not hasattr(load_model_file(plain), "get_traffic")


def test_a_model_compiled_and_run_is_still_the_same_bundle(tmp_path):
    model, x = nn.Linear(4, 4), torch.ones(2, 4)
    before = write_bundle(tmp_path, model, (x,))
    torch.compile(model, backend="eager")(x)  # Dynamo marks the parameters it saw
    assert any(k.startswith("_dynamo") for k in vars(model.weight))
    assert write_bundle(tmp_path, model, (x,)) == before
    assert any(k.startswith("_dynamo") for k in vars(model.weight))  # put back


def test_a_bundles_traffic_and_padding_are_read_without_unpickling_it(tmp_path, monkeypatch):
    padding = {"inputs": {"0": {"dim": 1, "value": 0}}, "outputs": {"": 1}}
    path = write_bundle(tmp_path, nn.Linear(4, 4), None, [((torch.ones(1, 4),), 1)], padding)
    module = load_model_file(path)
    monkeypatch.setattr(torch, "load", lambda *a, **k: pytest.fail("the bundle was unpickled"))
    assert callable(module.get_traffic) and module.PADDING == padding
    with pytest.raises(WorkloadError, match="not plain data"):
        write_bundle(tmp_path, nn.Linear(4, 4), (torch.ones(1, 4),), None, {"inputs": {1, 2}})
