"""The options of ``autotune search`` that say how this process runs, not what the study is:
none sets a study setting (a resumed study never compares them). Declared once, here, in the
order ``--help`` shows them after the study's (:mod:`autotune.settings._table`). Standard
library only."""

from __future__ import annotations

from autotune.settings._option import TRIAL_HOSTS, Option

PROCESS_OPTIONS: tuple[Option, ...] = (
    Option(
        "--jobs",
        kind="positive_int",
        default=1,
        help=("trials run at once (CPU only; each job gets CPU cores of its own)"),
    ),
    Option(
        "--trial-host",
        choices=TRIAL_HOSTS,
        default="preloaded",
        help=(
            "preloaded: fork each trial from a host process that already imported torch and "
            "Inductor; fresh: a new Python process per trial"
        ),
    ),
    Option(
        "--cache-dir",
        annotation="str | None",
        metavar="DIR",
        help=(
            "kernel cache shared by the study's trials on this machine (default: "
            "$AUTOTUNE_CACHE_DIR, else ~/.cache/autotune/STUDY-ID, one per study); a folder "
            "of autotune's own: a new or empty one is created and marked, one holding other "
            "files is refused"
        ),
    ),
    Option(
        "--cache-limit",
        kind="size",
        default="20GiB",
        metavar="SIZE",
        help=(
            "past this size, the kernel cache's oldest files (untouched for an hour) are removed"
        ),
    ),
    Option(
        "--allow-version-mismatch",
        annotation="bool",
        action="store_true",
        help=(
            "join even when this torch or triton differs from the study's (each trial records"
            " the versions it ran with)"
        ),
    ),
    Option(
        "--trust-model-path",
        annotation="bool",
        action="store_true",
        help=(
            "run the model file even when its content differs from the one the study was "
            "created with (its SHA-256 is stored with the study)"
        ),
    ),
    Option(
        "--no-worker",
        in_files=False,
        in_tune=False,
        elsewhere="run `autotune search MODEL.py --no-worker` to create a study for workers",
        action="store_true",
        help=(
            "only create the study (settings, baselines queued) and run no trial: start "
            "`autotune worker` processes, then `autotune finalize` (the Slurm/Kubernetes "
            "create step)"
        ),
    ),
    Option(
        "--for-device",
        annotation="str | None",
        metavar="NAME",
        help=(
            "when the study's trials ran on several kinds of hardware: the device name the "
            "file is for (default: this machine's)"
        ),
    ),
    Option(
        "--quiet",
        in_files=False,
        action="store_true",
        help=(
            "print only the decision: no trial lines, notes or live panel (errors still go to"
            " stderr)"
        ),
    ),
    Option(
        "--debug",
        in_files=False,
        action="store_true",
        help=("show tracebacks"),
    ),
)
