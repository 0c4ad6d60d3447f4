from __future__ import annotations

from pathlib import Path

import pytest

from autotune.records import RecordStore, StorageError, redact_url


def _open_error(url: str) -> str:
    with pytest.raises(StorageError) as info:
        RecordStore(url)
    message = str(info.value)
    assert "\n" not in message
    assert "sqlalche.me" not in message
    return message


def test_unreachable_postgres_names_redacted_url_and_remedy() -> None:
    pytest.importorskip("psycopg")

    message = _open_error("postgresql+psycopg://autotune:s3cret-pw@127.0.0.1:1/studies")

    assert "s3cret-pw" not in message
    assert "postgresql+psycopg://autotune:***@127.0.0.1:1/studies" in message
    assert "Connection refused" in message
    assert "server runs and is reachable" in message


def test_unparsable_url_is_a_storage_error() -> None:
    message = _open_error("not a url")

    assert "Could not parse" in message
    assert "dialect+driver://user:password@host:port/database" in message


def test_unknown_dialect_is_a_storage_error() -> None:
    message = _open_error("nosuchdb://user:pw@host/db")

    assert "nosuchdb://user:***@host/db" in message
    assert "driver must be installed (for PostgreSQL: pip install 'autotune[postgres]')" in message


def test_one_install_hint_for_postgresql_everywhere() -> None:
    """Every message naming the PostgreSQL driver says the same thing: the package's extra."""
    root = Path(__file__).parents[2] / "autotune"
    hints = {
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if "psycopg[binary]" in path.read_text()
    }
    assert hints == set()


def test_missing_sqlite_directory_is_a_storage_error(tmp_path: Path) -> None:
    message = _open_error(f"sqlite:///{tmp_path / 'no' / 'such' / 'dir' / 'autotune.db'}")

    assert "unable to open database file" in message
    assert "directory of the database file exists" in message


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql+psycopg://u:p%40ss@db:5432/x", "postgresql+psycopg://u:***@db:5432/x"),
        ("postgresql+psycopg://u@db/x", "postgresql+psycopg://u@db/x"),
        ("sqlite:///autotune.db", "sqlite:///autotune.db"),
        ("not a url://u:secret@host", "not a url://u:***@host"),
        ("postgresql://u:secret@host:port/db", "postgresql://u:***@host:port/db"),
    ],
)
def test_redact_url_hides_passwords(url: str, expected: str) -> None:
    assert redact_url(url) == expected
