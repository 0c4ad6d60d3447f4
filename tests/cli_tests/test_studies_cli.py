"""A storage URL's password never reaches the terminal: not in the query string, not with an
unencoded '@', not through a database error, and not in a --debug traceback."""

from __future__ import annotations

import pytest

from autotune.cli import main
from autotune.errors import UsageError

# (storage URL, the secrets that must appear nowhere); port 1 refuses at once.
URLS = [
    ("postgresql+psycopg://bob@127.0.0.1:1/x?password=hunter2", ["hunter2"]),
    ("postgresql+psycopg://bob:p@ss-w0rd@127.0.0.1:1/db", ["p@ss-w0rd", "ss-w0rd"]),
    ("postgresql+psycopg://bob:hunter2@127.0.0.1:1/db?sslpassword=k3yk3y", ["hunter2", "k3yk3y"]),
    ("postgresql+psycopg://bob:pa%40ss%3Aw0rd@127.0.0.1:1/db", ["pa%40ss", "ss%3Aw0rd", "w0rd"]),
    ("bob:hunter2@127.0.0.1/db", ["hunter2"]),
    ("nosuchdb://bob:hunter2@host/db?token=t0k3n", ["hunter2", "t0k3n"]),
    ("sqlite:///no/such/dir/autotune.db?password=hunter2", ["hunter2"]),
]


def _commands(tmp_path) -> list[list[str]]:
    return [
        ["studies"],
        ["report", "--study", "s"],
        ["export", "--study", "s", "--out", str(tmp_path / "t.csv")],
        ["finalize", "--study", "s", "--out", str(tmp_path / "best.json")],
    ]


@pytest.mark.parametrize(("url", "secrets"), URLS)
@pytest.mark.parametrize("debug", [[], ["--debug"]])
def test_no_command_prints_a_storage_password(tmp_path, capsys, monkeypatch, url, secrets, debug):
    pytest.importorskip("psycopg")
    for argv in _commands(tmp_path):
        assert main([*argv, "--storage", url, *debug]) == 2
    monkeypatch.setenv("AUTOTUNE_STORAGE", url)  # the way that keeps it out of `ps`
    assert main(["studies", *debug]) == 2

    out, err = capsys.readouterr()
    assert err.count("autotune: error:") == 5
    assert ("Traceback" in err) == bool(debug)
    for secret in secrets:
        assert secret not in out + err


def test_an_unencoded_at_in_the_password_is_refused_with_the_remedy(capsys):
    assert main(["studies", "--storage", "postgresql+psycopg://bob:p@ss@127.0.0.1:1/db"]) == 2

    err = capsys.readouterr().err
    assert "has an '@' in its user or password that is not percent-encoded" in err
    assert "as %40" in err and "postgresql+psycopg://bob:***@127.0.0.1:1/db" in err
    assert "ss@" not in err


@pytest.mark.parametrize("debug", [[], ["--debug"]])
def test_a_usage_error_carrying_a_secret_is_masked_as_it_is_printed(capsys, monkeypatch, debug):
    """The last line of defence: whatever a message carries, main() masks it, and with
    --debug the traceback too (its chained causes included)."""

    def leaky(storage: str) -> list[object]:
        try:
            raise RuntimeError("dsn 'host=db user=bob password=hunter2' refused")
        except RuntimeError as exc:
            raise UsageError(f"cannot list {storage} (postgresql://bob:s3cr3t@db/x)") from exc

    monkeypatch.setattr("autotune.reports.list_studies", leaky)
    url = "postgresql+psycopg://bob@db/x?password=k3yk3y"

    assert main(["studies", "--storage", url, *debug]) == 2

    err = capsys.readouterr().err
    assert "autotune: error: cannot list postgresql+psycopg://bob@db/x?password=***" in err
    assert ("RuntimeError" in err) == bool(debug)
    for secret in ("hunter2", "s3cr3t", "k3yk3y"):
        assert secret not in err
