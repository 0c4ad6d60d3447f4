"""What every table's rows share: JSON columns, UTC times, the engine the store holds."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa


class HasEngine:
    """A store's part that runs its queries on ``self._engine``."""

    _engine: sa.Engine


def dumps(value: Any, name: str) -> str:
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"`{name}` must be JSON-serializable, but {exc}; convert such values "
            "(paths, tuples as keys, tensors) to str, int, float, bool, list or dict first."
        ) from None


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def as_utc(moment: datetime) -> datetime:
    # SQLite keeps no time zone; we only ever write UTC.
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)
