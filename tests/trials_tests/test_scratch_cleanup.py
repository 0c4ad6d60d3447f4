"""Trials keep their folders in the run's scratch root: a normal run leaves nothing in the
temporary folder, and a SIGKILLed run's folders are swept by the next run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from procs import procs_with, wait_for

from autotune._scratch import RUN_ROOT_ENV

ROOT = Path(__file__).resolve().parents[2]
TRIALS = """
    import sys
    from autotune.trials import MeasureSettings, SubprocessRunner, TrialSpec, PreloadedHostRunner
    spec = TrialSpec(model_path={model!r}, device="cpu", config={config!r}, time_limit_s={budget},
                     measure=MeasureSettings(warmup=1, min_rounds=5, max_rounds=20,
                                             target_seconds=0.2))
    print("started", flush=True)
    {body}
"""


def _python(code: str, tmpdir: Path, cache: Path) -> subprocess.Popen[str]:
    """A Python process whose temporary folder is ``tmpdir``, with no run root of ours."""
    env = {k: v for k, v in os.environ.items() if k != RUN_ROOT_ENV}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.update(TMPDIR=str(tmpdir), TORCHINDUCTOR_CACHE_DIR=str(cache))
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=env,
                            stdout=subprocess.PIPE, text=True)  # fmt: skip


def _ours(tmpdir: Path) -> list[str]:
    """What autotune left in ``tmpdir`` (torch's machine-wide ``torchinductor_<user>`` is
    torch's own, and meant to stay)."""
    return [name for name in os.listdir(tmpdir) if name.startswith("autotune")]


def _sleepers() -> list[int]:
    return procs_with(b"time.sleep(600)")


@pytest.fixture(autouse=True)
def _no_leftovers():
    yield
    for pid in _sleepers():
        os.kill(pid, signal.SIGKILL)


@pytest.fixture
def folders(tmp_path, tmp_path_factory) -> tuple[Path, Path]:
    """The temporary folder of the test's processes, and the kernel cache of the test run."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    return tmpdir, tmp_path_factory.getbasetemp() / "trial-cache" / "inductor"


def test_trials_of_both_runners_leave_nothing_in_the_temporary_folder(folders, model_file):
    tmpdir, cache = folders
    body = "with PreloadedHostRunner() as warm:\n        print(warm.run(spec).status)\n    " \
           "print(SubprocessRunner().run(spec).status)"  # fmt: skip
    code = TRIALS.format(model=model_file("tiny"), config={"backend": "aot_eager"}, budget=120,
                         body=body)  # fmt: skip
    proc = _python(code, tmpdir, cache)
    out, _ = proc.communicate(timeout=300)

    assert proc.returncode == 0 and out.split() == ["started", "ok", "ok"], out
    assert _ours(tmpdir) == []  # neither the trials' folders, nor the host's log, nor the root


def test_the_next_run_sweeps_the_trial_folders_of_a_sigkilled_run(folders, model_file):
    tmpdir, cache = folders
    code = TRIALS.format(model=model_file("hang_when_compiled"), config={"backend": "aot_eager"},
                         budget=600, body="SubprocessRunner().run(spec)")  # fmt: skip
    killed = _python(code, tmpdir, cache)
    try:
        assert wait_for(_sleepers, 120), "the trial never reached its compile"
    finally:
        killed.kill()
        killed.wait()
    assert wait_for(lambda: not _sleepers(), 15), _sleepers()  # the trial died with its parent
    assert list(tmpdir.glob("autotune*/**/spec.json"))  # what a SIGKILL leaves behind

    following = _python("from autotune._scratch import run_root; run_root()", tmpdir, cache)
    following.communicate(timeout=60)

    assert following.returncode == 0 and _ours(tmpdir) == []
