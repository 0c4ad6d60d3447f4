"""PostgreSQL for the tests that need it: it runs when AUTOTUNE_TEST_POSTGRES_URL is set (e.g.
postgresql+psycopg://postgres@127.0.0.1:5432/test; `.ci/run` sets it), and those tests are
skipped otherwise."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

URL = os.environ.get("AUTOTUNE_TEST_POSTGRES_URL")
needs_postgres = [
    pytest.mark.postgres,
    pytest.mark.skipif(not URL, reason="AUTOTUNE_TEST_POSTGRES_URL is not set"),
]


@contextmanager
def fresh_schema() -> Iterator[str]:
    """A URL to an empty schema of its own, named through the connection's search_path, so
    Optuna's tables and ours start empty and reruns never collide; dropped afterwards."""
    import sqlalchemy as sa

    assert URL is not None
    schema = f"autotune_test_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(URL)
    with admin.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    url = sa.make_url(URL).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
