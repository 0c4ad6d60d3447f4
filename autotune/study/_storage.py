"""Optuna's RDB storage beside our record tables, in one database."""

from __future__ import annotations

import hashlib
import os
import re
import warnings
from pathlib import Path
from typing import Any

from autotune.errors import UsageError

HEARTBEAT_S = 30
GRACE_S = 120


def open_optuna_storage(url: str) -> Any:
    """An RDBStorage with heartbeats: a trial whose process died is failed and retried."""
    import optuna
    from optuna.storages import RDBStorage

    from autotune.records import engine_options, redact_url
    from autotune.records._engine import POSTGRES_INSTALL

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return RDBStorage(url, engine_kwargs=engine_options(url), **_heartbeat_kwargs())
    except (ImportError, ModuleNotFoundError) as exc:
        raise UsageError(
            f"The storage {redact_url(url)} needs a database driver that is not installed "
            f"({exc}). For PostgreSQL: {POSTGRES_INSTALL}."
        ) from exc
    except Exception as exc:  # SQLAlchemy's argument and connection errors
        raise UsageError(
            f"Cannot open the storage {redact_url(url)}: {type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}. Pass a reachable SQLAlchemy URL "
            "with --storage (default sqlite:///autotune.db)."
        ) from exc
    finally:
        optuna.logging.set_verbosity(optuna.logging.WARNING)


def _heartbeat_kwargs() -> dict[str, Any]:
    """Optuna 4.9 renamed the stale-trial callback; support both sides of the rename."""
    import optuna.storages as storages

    kwargs: dict[str, Any] = {"heartbeat_interval": HEARTBEAT_S, "grace_period": GRACE_S}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # both callbacks are marked experimental
        if hasattr(storages, "RetryHeartbeatStaleTrialCallback"):
            retry = storages.RetryHeartbeatStaleTrialCallback(max_retry=1)
            kwargs["heartbeat_stale_trial_callback"] = retry
        else:
            kwargs["failed_trial_callback"] = storages.RetryFailedTrialCallback(max_retry=1)
    return kwargs


def default_cache_dir(study: str, study_id: int, storage: str) -> str:
    """``$AUTOTUNE_CACHE_DIR``, else a folder of the user's cache for this very study: its
    name, its Optuna id and its storage, so a study re-created under an old name (or one in
    another database) never inherits compiled graphs, and their optimistic compile times."""
    if os.environ.get("AUTOTUNE_CACHE_DIR"):
        return os.environ["AUTOTUNE_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    where = storage if not storage.startswith("sqlite:///") else str(Path(storage[10:]).resolve())
    digest = hashlib.sha256(f"{where}|{study_id}".encode()).hexdigest()[:10]
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", study)
    return str(Path(base, "autotune", f"{slug}-{digest}"))
