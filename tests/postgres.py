"""PostgreSQL for the tests that need it: it runs when AUTOTUNE_TEST_POSTGRES_URL is set (e.g.
postgresql+psycopg://postgres@127.0.0.1:5432/test; `.ci/run` sets it), and those tests are
skipped otherwise."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

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


@dataclass
class Cluster:
    """A PostgreSQL server of a test's own, on a port of its own: it can be restarted."""

    data: Path
    port: int

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def pg_ctl(self, *args: str) -> None:
        log = self.data.parent / "server.log"
        _as_postgres(PG_BIN / "pg_ctl", "-D", str(self.data), "-l", str(log), "-w", *args)

    def start(self) -> None:
        self.pg_ctl("-o", f"-p {self.port} -k {self.data.parent}", "start")

    def restart(self) -> None:
        self.pg_ctl("-m", "fast", "-o", f"-p {self.port} -k {self.data.parent}", "restart")

    def stop(self) -> None:
        self.pg_ctl("-m", "immediate", "stop")


PG_BIN = next(iter(sorted(Path("/usr/lib/postgresql").glob("*/bin"))), Path("/usr/bin"))


def can_run_a_cluster() -> bool:
    """A throwaway cluster needs initdb, and root to run it as the postgres user."""
    return (
        (PG_BIN / "initdb").exists() and os.geteuid() == 0 and shutil.which("runuser") is not None
    )


@contextmanager
def throwaway_cluster() -> Iterator[Cluster]:
    """A new PostgreSQL cluster (trust auth) in a temporary folder, started; removed after."""
    folder = Path(tempfile.mkdtemp(prefix="autotune-pg-"))
    shutil.chown(folder, "postgres", "postgres")
    cluster = Cluster(folder / "data", _free_port())
    try:
        _as_postgres(PG_BIN / "initdb", "-D", str(cluster.data), "-A", "trust", "-U", "postgres")
        cluster.start()
        yield cluster
    finally:
        try:
            cluster.stop()
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def _as_postgres(*argv: object) -> None:
    subprocess.run(
        ["runuser", "-u", "postgres", "--", *map(str, argv)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
