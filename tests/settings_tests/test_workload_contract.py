"""resolve() refuses an accuracy contract that cannot judge the workload, in the caller's
words."""

from __future__ import annotations

import pytest

from autotune.errors import UsageError
from autotune.settings import CLI, resolve


def test_a_training_workload_refuses_an_inference_contract() -> None:
    with pytest.raises(UsageError) as raised:
        resolve({"workload": "train", "accuracy": "cosine>=0.999"})
    message = str(raised.value)
    assert message.startswith("autotune.tune: accuracy='cosine>=0.999' with workload='train'")
    assert "loss_rel<=X, grad_cosine>=X" in message
    assert "accuracy='loss_rel<=0.02,grad_cosine>=0.99'" in message


def test_the_command_line_hears_its_flags() -> None:
    with pytest.raises(UsageError, match="--accuracy 'loss_rel<=0.02,grad_cosine>=0.99'"):
        resolve({"workload": "train", "accuracy": "cosine>=0.999"}, language=CLI)


def test_an_inference_workload_refuses_a_training_contract() -> None:
    with pytest.raises(UsageError, match="judges a training step"):
        resolve({"accuracy": "loss_rel<=0.02"})


def test_a_contract_that_fits_resolves() -> None:
    options = resolve({"workload": "train", "accuracy": "loss_rel<=0.02"})
    assert options.accuracy == "loss_rel<=0.02" and options.workload == "train"
    assert resolve({"accuracy": "cosine>=0.999"}).accuracy == "cosine>=0.999"


def test_a_bad_workload_is_the_only_problem_said() -> None:
    with pytest.raises(UsageError) as raised:
        resolve({"workload": "trian", "accuracy": "loss_rel<=0.02"})
    assert "workload" in str(raised.value) and "judges" not in str(raised.value)


def test_a_generate_workload_takes_a_teacher_forced_contract_and_refuses_the_others() -> None:
    """The gate is three-way: top1 and cosine judge a generation (teacher-forced logits),
    top1 judges nothing else, and an inference clause judges no generation."""
    options = resolve({"workload": "generate", "accuracy": "top1>=0.99,cosine>=0.999"})
    assert options.accuracy == "top1>=0.99,cosine>=0.999"
    with pytest.raises(UsageError) as raised:
        resolve({"workload": "generate", "accuracy": "max_abs<=0.01"}, language=CLI)
    message = str(raised.value)
    assert message.startswith("--accuracy 'max_abs<=0.01' with --workload 'generate':")
    assert "teacher-forced" in message and message.endswith("--accuracy 'top1>=0.99'.")
    for workload in ("infer", "train"):
        with pytest.raises(UsageError, match="top1>=0.99"):
            resolve({"workload": workload, "accuracy": "top1>=0.99"}, language=CLI)
    assert resolve({"workload": "generate"}).workload == "generate"
