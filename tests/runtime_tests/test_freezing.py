"""Freezing through autotune does what freezing written by hand does, and nothing outside the
compiled region sees it.

``torch.compile(options={"freezing": True})`` alone changes nothing: Dynamo decides whether the
weights become constants while it traces, from the global ``torch._inductor.config.freezing``.
PyTorch's documented way sets that global while the model compiles; ``autotune.apply`` must
give the same code, fold the same constants, and leave the global as it found it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import pytest
import torch
from frozen import Scaled
from torch import nn

import autotune
from autotune.runtime.config import CompileConfig, Scope
from autotune.trials._code import _normalized, output_code

pytestmark = pytest.mark.slow

FROZEN = CompileConfig(dynamic=False, options={"freezing": True})


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> Iterator[None]:
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _model() -> nn.Module:
    torch.manual_seed(0)
    return Scaled().eval()


def _code(compiled: nn.Module, x: torch.Tensor) -> list[str]:
    with output_code() as codes, torch.no_grad():
        compiled(x)
    return [_normalized(code) for code in codes]


@contextlib.contextmanager
def _frozen_by_hand() -> Iterator[None]:
    """PyTorch's documented way: the global set while the model compiles."""
    with torch._inductor.config.patch(freezing=True):
        yield


def test_apply_generates_the_code_freezing_by_hand_generates() -> None:
    x = torch.randn(8, 32)
    with _frozen_by_hand():
        by_hand = _code(torch.compile(_model(), dynamic=False), x)
    torch._dynamo.reset()
    applied = _code(autotune.apply(_model(), FROZEN), x)
    torch._dynamo.reset()
    default = _code(autotune.apply(_model(), CompileConfig(dynamic=False)), x)
    assert applied == by_hand
    assert applied != default


def test_frozen_weights_are_folded_constants_and_the_global_is_left_alone() -> None:
    x = torch.randn(8, 32)
    frozen_model, plain_model = _model(), _model()
    frozen = autotune.apply(frozen_model, FROZEN)
    plain = autotune.apply(plain_model, CompileConfig(dynamic=False))
    with torch.no_grad():
        before = frozen(x)
        plain(x)
        assert not torch._inductor.config.freezing  # set during the call only
        for model in (frozen_model, plain_model):
            model.weight.mul_(3)  # in place: the compiled code is not asked to recompile
        # Folded at the first call, 2w is a constant: the change is not seen. Unfrozen code
        # reads the weight at every call.
        torch.testing.assert_close(frozen(x), before)
        torch.testing.assert_close(plain(x), plain_model(x))


def test_another_model_compiled_in_the_same_process_is_not_frozen() -> None:
    x = torch.randn(8, 32)
    with torch.no_grad():
        autotune.apply(_model(), FROZEN)(x)
        other_model = _model()
        other = torch.compile(other_model, dynamic=False)
        other(x)
        other_model.weight.mul_(3)
        torch.testing.assert_close(other(x), other_model(x))


def test_a_frozen_model_called_in_one_thread_leaves_another_threads_compile_alone() -> None:
    """torch >= 2.12 keeps config per thread: a call of the frozen model does not freeze a
    compile running in another thread at the same time."""
    from autotune.runtime._calls import config_is_per_thread

    if not config_is_per_thread():
        pytest.skip(f"torch {torch.__version__} keeps config process-wide: calls serialize")
    inside, done = threading.Event(), threading.Event()
    seen: list[bool] = []  # what the calling thread sees, then the other one

    class Waits(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return _wait(x)

    @torch.compiler.disable
    def _wait(x: torch.Tensor) -> torch.Tensor:
        seen.append(torch._inductor.config.freezing)  # in the call: set
        # and in the copy of the config that keys Inductor's caches
        seen.append(torch._inductor.config.get_config_copy()["freezing"])
        inside.set()
        assert done.wait(timeout=120)
        return x

    frozen = autotune.apply(nn.Sequential(Waits()), FROZEN)

    def look() -> None:
        assert inside.wait(timeout=120)
        seen.append(torch._inductor.config.freezing)
        done.set()

    thread = threading.Thread(target=look)
    thread.start()
    with torch.no_grad():
        frozen(torch.randn(2, 2))
    thread.join(timeout=120)
    assert seen == [True, True, False]


class Blocks(nn.Module):
    """Ten identical blocks: more than Dynamo's recompile limit (8) for one layer class."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(16, 16), nn.ReLU()) for _ in range(10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x


def test_every_frozen_region_of_a_regional_scope_is_frozen() -> None:
    """Frozen, identical layers compile a graph each; past the recompile limit the later
    ones would run eager, and an eager layer sees its weights change."""
    torch.manual_seed(0)
    model, x = Blocks().eval(), torch.randn(4, 16)
    weights = [block[0].weight for block in model.blocks]  # the blocks are replaced below
    scope = Scope(compile=tuple(f"blocks.{i}" for i in range(10)))
    compiled = autotune.apply(model, CompileConfig(options={"freezing": True}, scope=scope))
    with torch.no_grad():
        before = compiled(x)
        for weight in weights:
            weight.mul_(2)  # in place: frozen layers keep their folded weights
        torch.testing.assert_close(compiled(x), before)
