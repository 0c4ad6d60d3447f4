"""autotune._secrets: a storage URL's secrets never show, whatever form the URL takes, and the
rest of it (scheme, user, host, port, database, other parameters) stays readable."""

from __future__ import annotations

import random

import pytest

from autotune._secrets import mask_text, mask_url
from autotune.records import redact_url

# (url, secrets that must not appear, parts that must stay readable)
URLS = [
    ("postgresql+psycopg://bob:hunter2@db.example.com:5432/studies", ["hunter2"],
     ["postgresql+psycopg://bob:", "@db.example.com:5432/studies"]),
    ("postgresql+psycopg://bob@host/x?password=hunter2", ["hunter2"],
     ["postgresql+psycopg://bob@host/x?password="]),
    ("postgresql+psycopg://bob:p@ss@host/db", ["p@ss", "ss@"], ["bob:", "@host/db"]),
    ("postgresql+psycopg://bob:p%40ss@host/db", ["p%40ss", "40ss"], ["bob:", "@host/db"]),
    ("postgresql://bob:pa%3Ass@host/db", ["pa%3Ass", "3Ass"], ["@host/db"]),
    ("postgresql://bob:pa:ss@host/db", ["pa:ss", ":ss"], ["postgresql://bob:", "@host/db"]),
    ("postgresql://bob:a/b?c@host:5432/db", ["a/b?c", "b?c"], ["@host:5432/db"]),
    ("postgresql://bob:a@b/c@host/db", ["a@b/c", "b/c"], ["@host/db"]),
    ("mysql+pymysql://root:s3cr3t@10.0.0.1:3306/db?charset=utf8mb4", ["s3cr3t"],
     ["mysql+pymysql://root:", "@10.0.0.1:3306/db?charset=utf8mb4"]),
    ("postgresql+psycopg://bob@host/db?sslmode=require&sslpassword=k3yk3y&application_name=at",
     ["k3yk3y"], ["bob@host/db?sslmode=require&sslpassword=", "&application_name=at"]),
    ("postgresql://bob:hunter2@[2001:db8::1]:5432/db", ["hunter2"], ["@[2001:db8::1]:5432/db"]),
    ("postgresql://[::1]:5432/db?PASSWORD=hunter2", ["hunter2"], ["postgresql://[::1]:5432/db"]),
    ("postgresql:///db?host=/var/run/postgresql&password=hunter2", ["hunter2"],
     ["postgresql:///db?host=/var/run/postgresql&"]),
    ("postgresql://u:p@ss@host/db?password=x@yz&token=t0k3n", ["p@ss", "x@yz", "t0k3n"],
     ["@host/db?password=", "&token="]),
    ("https://api.example.com/v1?api_key=abcd1234&pwd=zzzz&pass=qqqq",
     ["abcd1234", "zzzz", "qqqq"], ["https://api.example.com/v1?api_key="]),
    ("bob:hunter2@host/db", ["hunter2"], ["bob:", "@host/db"]),
    ("not a url://u:secret@host", ["secret"], ["not a url://u:", "@host"]),
]  # fmt: skip
# Nothing secret in them: they come back as they were.
PLAIN = [
    "sqlite:///autotune.db",
    "sqlite:////abs/path/with@at/and:colon.db",
    "sqlite://",
    "postgresql+psycopg://bob@host:5432/db?sslmode=require",
    "postgresql://[::1]:5432/db",
    "host/db",
    "",
]
GARBAGE = ["://", "@", ":@", "a:b@", "::::", "\x00", "%%%", "?password", "password=", "@@://@@"]


@pytest.mark.parametrize(("url", "secrets", "readable"), URLS)
def test_mask_url_hides_every_secret_and_keeps_the_rest(url, secrets, readable):
    masked = mask_url(url)

    assert "***" in masked
    for secret in secrets:
        assert secret not in masked
    for part in readable:
        assert part in masked


@pytest.mark.parametrize(("url", "secrets", "readable"), URLS)
def test_redact_url_and_mask_text_agree_with_mask_url(url, secrets, readable):
    in_text = f"cannot open {url}: refused."

    assert redact_url(url) == mask_url(url)
    assert mask_text(in_text) == f"cannot open {mask_url(url)}: refused."


@pytest.mark.parametrize("url", PLAIN)
def test_a_url_without_secrets_comes_back_unchanged(url):
    assert mask_url(url) == url
    assert mask_text(f"storage {url} here") == f"storage {url} here"


@pytest.mark.parametrize("text", GARBAGE)
def test_garbage_is_masked_without_raising(text):
    assert isinstance(mask_url(text), str)
    assert isinstance(mask_text(text), str)


def test_no_string_makes_them_raise():
    rng = random.Random(0)
    alphabet = "ab:@/?#&=%[]'\" \\\n*pwdPASS"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(40)))
        mask_url(text)
        mask_text(text, [text])


def test_objects_are_shown_masked_not_raised():
    import sqlalchemy as sa

    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("no")

    url = sa.make_url("postgresql+psycopg://bob:hunter2@host/db")
    assert mask_url(url) == "postgresql+psycopg://bob:***@host/db"
    assert mask_url(Unprintable()) == "<Unprintable>"
    assert mask_text(ValueError("dsn password=hunter2")) == "dsn password=***"


@pytest.mark.parametrize(
    ("text", "secret", "kept"),
    [
        ("host=db port=5432 user=bob password=hunter2 dbname=x", "hunter2",
         "host=db port=5432 user=bob password=*** dbname=x"),
        ("dsn: host=db password='hunter 2' user=bob", "hunter 2", "password='***' user=bob"),
        ('{"user": "bob", "password": "hunter2"}', "hunter2", '"password": "***"'),
        ("{'user': 'bob', 'sslpassword': 'hunter2'}", "hunter2", "'sslpassword': '***'"),
        ("failed (postgresql://bob:hunter2@h/db).", "hunter2", "(postgresql://bob:***@h/db)."),
        ("GET https://x/y?token=abcd1234, then", "abcd1234", "?token=***, then"),
    ],
)  # fmt: skip
def test_mask_text_masks_urls_and_secret_pairs_in_any_text(text, secret, kept):
    masked = mask_text(text)

    assert secret not in masked
    assert kept in masked


def test_mask_text_leaves_a_drivers_words_alone():
    text = (
        'connection to server at "127.0.0.1", port 5432 failed: FATAL:  password '
        'authentication failed for user "bob"'
    )
    assert mask_text(text) == text


def test_mask_text_masks_the_secrets_of_the_urls_it_is_told_of_wherever_they_appear():
    url = "postgresql+psycopg://bob:hunter%2142@host/db?sslpassword=k3yk3y"
    text = "auth failed with hunter!42 (encoded hunter%2142) and key k3yk3y"

    masked = mask_text(text, [url])

    assert "hunter" not in masked and "k3yk3y" not in masked
    assert masked == "auth failed with *** (encoded ***) and key ***"


def test_a_best_config_file_stores_the_storage_with_its_secrets_masked():
    from autotune.decide import best_config
    from autotune.settings import StudySettings

    settings = StudySettings(model_path="/m.py", device="cpu", space={}, space_hash="h",
                             torch_version="2.13.0")  # fmt: skip
    url = "postgresql+psycopg://bob:p@ss@db:5432/studies?sslpassword=k3yk3y"

    made = best_config([], settings, "s", url)

    assert made.source["storage"] == "postgresql+psycopg://bob:***@db:5432/studies?sslpassword=***"


def test_masking_a_long_text_takes_linear_time():
    """A pattern that backtracks over every start of a long run would take minutes here."""
    import time

    started = time.perf_counter()
    for text in ("x" * 200_000, "x." * 100_000, "a:" * 100_000, "?" + "k" * 200_000):
        mask_text(text, [text[:100]])
        mask_url(text)
    assert time.perf_counter() - started < 5
