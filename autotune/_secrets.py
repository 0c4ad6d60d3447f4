"""Secrets kept out of what autotune shows or stores: terminal lines, logs, reports, error
paragraphs and best-config files carry a storage URL only with its password masked.

Standard library only, and no function here raises: it runs on whatever text an error carries.

Example:
    >>> mask_url("postgresql+psycopg://bob:p@ss@db:5432/studies?sslpassword=x")
    'postgresql+psycopg://bob:***@db:5432/studies?sslpassword=***'
    >>> mask_text('connect failed for "host=db password=hunter2 user=bob"')
    'connect failed for "host=db password=*** user=bob"'
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple
from urllib.parse import unquote

MASK = "***"
# Query-string and DSN keys whose values are secrets: any key holding one of these words.
_SECRET_WORDS = ("password", "passwd", "pwd", "token", "secret", "apikey", "api_key", "credential")
_SECRET_KEYS = ("pass",)
# Each pattern starts only where its first part cannot continue a longer one: a long run of
# letters is then tried once, not once per letter (which would take quadratic time).
_URL = re.compile(r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]*://[^\s<>]*")
_TRAILING = ".,:;!?)]}'\""
# user:password@host written without a scheme (the password up to the last "@" of the word).
_BARE = re.compile(
    r"(?<![\w.%+:/@-])(?P<user>[\w.%+-]+):(?!//)(?P<password>\S*)@"
    r"(?P<host>[\w.-]+|\[[0-9A-Fa-f:.]+\])"
)
_QUERY_PAIR = re.compile(r"(?<=[?&;])(?P<key>[^&;=?#]+)=(?P<value>[^&;#]*)")
# key=value (a libpq DSN, a log line), 'key': 'value' and "key": "value" (a dict or JSON).
_PAIR = re.compile(
    r"""(?P<key>(?P<q>['"]?)(?<![A-Za-z0-9_.\-])[A-Za-z_][A-Za-z0-9_.\-]*(?P=q))"""
    r"""(?P<sep>\s*=\s*|(?<=['"])\s*:\s*)"""
    r"""(?P<value>'(?:[^'\\]|\\.)*'?|"(?:[^"\\]|\\.)*"?|[^\s'",;&)}\]]+)"""
)
# A URL's secrets shorter than this are masked only where they stand in a URL or a key=value
# pair: replacing every "ab" of a text would mask words, not secrets.
_MIN_LOOSE = 4


class _Parts(NamedTuple):
    head: str  # "scheme://" ("" without one)
    user: str  # the userinfo's user, with its "@"-less password cut off
    password: str | None  # None: the URL has no password
    rest: str  # from the "@" before the host on (or the whole rest), query secrets masked
    secrets: tuple[str, ...]  # the password and the secret query values, as written


def mask_url(url: object) -> str:
    """``url`` with the password of its userinfo and the values of its secret query keys
    (``password=``, ``sslpassword=``, ``token=``...) replaced by ``***``; the scheme, user,
    host, port, database and other parameters stay readable.

    A password holding an unencoded ``@`` is masked whole: the last ``@`` before the host
    ends the userinfo. Any value is accepted (a malformed URL is masked as far as it reads
    like one) and nothing is raised.
    """
    parts = _parse(_text(url))
    if parts.password is None:
        return parts.head + parts.user + parts.rest
    return f"{parts.head}{parts.user}:{MASK}{parts.rest}"


def mask_text(text: object, urls: Iterable[object] = ()) -> str:
    """``text`` with every URL in it (``user:password@host`` without a scheme too) masked
    as :func:`mask_url` masks it, every secret key/value pair (``password=...`` of a libpq
    DSN, ``'password': '...'``) masked, and the secrets of ``urls`` (the URLs the text may be
    about), as written or percent-decoded, masked wherever they appear. Nothing is raised.
    """
    out = _text(text)
    for secret in sorted(_secrets_of(urls), key=len, reverse=True):
        out = out.replace(secret, MASK)
    out = _URL.sub(_mask_url_in_text, out)
    out = _BARE.sub(lambda m: f"{m.group('user')}:{MASK}@{m.group('host')}", out)
    return _PAIR.sub(_mask_pair, out)


def _mask_url_in_text(match: re.Match[str]) -> str:
    # Punctuation that ends the URL's sentence ("... db/x: failed") is not part of it.
    url = match.group(0)
    tail = len(url) - len(url.rstrip(_TRAILING))
    return mask_url(url[: len(url) - tail]) + url[len(url) - tail :]


def _parse(text: str) -> _Parts:
    scheme, sep, rest = text.partition("://")
    head = scheme + sep if sep else ""
    rest = rest if sep else text
    query_at = rest.find("?")
    secrets: list[str] = []
    if query_at >= 0:
        rest = rest[:query_at] + _QUERY_PAIR.sub(
            lambda m: _mask_query_pair(m, secrets), rest[query_at:]
        )
    at = rest.rfind("@")  # the query's secret values (which may hold an "@") are masked now
    if (sep and rest.startswith("/")) or at < 0:  # no userinfo: sqlite:///path, host/db
        return _Parts(head, "", None, rest, tuple(secrets))
    user, colon, password = rest[:at].partition(":")
    if not colon:
        return _Parts(head, user, None, rest[at:], tuple(secrets))
    return _Parts(head, user, password, rest[at:], (password, *secrets))


def _mask_query_pair(match: re.Match[str], secrets: list[str]) -> str:
    if not _is_secret(match.group("key")):
        return match.group(0)
    secrets.append(match.group("value"))
    return f"{match.group('key')}={MASK}"


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    try:
        render = getattr(value, "render_as_string", None)  # a SQLAlchemy URL
        return str(render(hide_password=False) if callable(render) else value)
    except Exception:  # noqa: BLE001 - an object whose str() fails is shown by its type
        return f"<{type(value).__name__}>"


def _is_secret(key: str) -> bool:
    name = unquote(key).strip().strip("'\"").lower()
    return name in _SECRET_KEYS or any(word in name for word in _SECRET_WORDS)


def _mask_pair(match: re.Match[str]) -> str:
    value = match.group("value")
    if not _is_secret(match.group("key")) or value.startswith(MASK):  # masked in its URL
        return match.group(0)
    quote = value[0] if value[:1] in ("'", '"') else ""
    return f"{match.group('key')}{match.group('sep')}{quote}{MASK}{quote}"


def _secrets_of(urls: Iterable[object]) -> set[str]:
    """The secrets of ``urls``, as written and percent-decoded, and the pieces of a password
    between its unencoded ``@`` (a driver may show one as part of the host)."""
    found: set[str] = set()
    try:
        for url in urls:
            for secret in _parse(_text(url)).secrets:
                found |= {secret, unquote(secret), *secret.split("@")}
    except Exception:  # noqa: BLE001 - a bad iterable masks nothing more; it does not raise
        pass
    return {s for s in found if len(s) >= _MIN_LOOSE and s != MASK}
