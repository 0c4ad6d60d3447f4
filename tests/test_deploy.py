"""The Dockerfile and deploy/ files: linted (no Docker daemon or registry is reachable here,
so the image is not built), and the image installs autotune the way the README says."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
BIN = Path(sys.executable).parent


def _lint(tool: str, *args: str) -> None:
    found = BIN / tool if (BIN / tool).exists() else shutil.which(tool)
    if found is None:
        pytest.skip(f"{tool} is not installed (pip install -e '.[dev]')")
    done = subprocess.run([str(found), *args], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_dockerfile_passes_hadolint():
    _lint("hadolint", "Dockerfile")


def test_the_slurm_job_passes_shellcheck():
    _lint("shellcheck", *map(str, sorted((ROOT / "deploy" / "slurm").glob("*.sbatch"))))


def test_the_yaml_files_pass_yamllint():
    _lint("yamllint", "--strict", "-c", ".yamllint.yaml", "deploy", ".yamllint.yaml")


def test_the_kubernetes_files_are_valid_resources():
    files = sorted((ROOT / "deploy" / "kubernetes").glob("*.yaml"))
    assert len(files) >= 4
    _lint("kubernetes-validate", "--strict", "--quiet", *map(str, files))


def test_the_image_installs_autotune_as_the_readme_says():
    dockerfile = (ROOT / "Dockerfile").read_text()
    (install,) = re.findall(r"RUN (pip install [^\\\n&]*)", dockerfile)
    command = " ".join(word for word in install.split() if word != "--no-cache-dir")
    assert command == "pip install '.[postgres]'"
    assert f"`{command}` (the install the `Dockerfile` runs" in (ROOT / "README.md").read_text()
    assert 'ENTRYPOINT ["autotune"]' in dockerfile
    assert re.search(r"^FROM pytorch/pytorch:\S+-cuda\S+$", dockerfile, re.MULTILINE)


def test_every_launcher_runs_the_commands_autotune_has():
    """The workers and the create and finalize steps call subcommands that exist, with options
    they take (a renamed option would fail only on the cluster)."""
    from autotune.cli import build_parser

    _, commands = build_parser()
    texts = [p.read_text() for p in (ROOT / "deploy").rglob("*") if p.is_file()]
    used = re.findall(
        r"\b(search|worker|finalize)\b[^\n]*?((?:--[a-z-]+)[^\n]*)", "\n".join(texts)
    )
    assert {command for command, _ in used} >= {"search", "worker", "finalize"}
    for command, rest in used:
        known = {s for a in commands[command]._actions for s in a.option_strings}
        for option in re.findall(r"--[a-z][a-z-]+", rest):
            assert option in known, f"{command} has no option {option}"


def test_every_worker_and_finalize_names_its_model_file():
    """A process that joins a study runs only the model file its own command line names (the
    database never names code to run), so every launcher passes --model."""
    texts = [p.read_text() for p in (ROOT / "deploy").rglob("*") if p.is_file()]
    joins = re.findall(r"\b(?:worker|finalize)\b[^\n]*--study[^#]*?(?=\n\s*\n|\n\S|$)",
                       "\n".join(texts))  # fmt: skip
    assert len(joins) >= 5
    for command in joins:
        assert "--model" in command, command
