"""Signed best-config files: an HMAC over each entry (its config, its decision, its metrics and
workload, the model it was tuned on, when it was made, the SHA-256 of every artifact it ships),
so that production can refuse a file nobody holding the key wrote.

Standard library only. ``$AUTOTUNE_SIGNING_KEY`` holds the key (at least 16 characters, the same
on the machines that write files and those that apply them).

What a signature means: *a machine holding the key produced this entry, or verified it with
that key.* A writer signs only such entries: ``search``, ``finalize`` and ``worker --out`` the
entry of the study they decided; ``cache export`` the entry whose artifacts it built, and only
when the entry it read verifies with this key (an unsigned entry, or one signed with another
key, is refused with the remedy: it would otherwise be laundered into this machine's);
``merge --resign`` every merged entry, because the operator says so. Every other entry keeps
the signature it was read with, or none.

What a reader does, given the key:

- an entry signed with it but changed since is refused when the file is read;
- ``autotune.apply(..., require_signature=True)`` (or ``$AUTOTUNE_REQUIRE_SIGNATURE`` set to
  ``1``, ``true``, ``yes`` or ``on``; ``0``, ``false``, ``no``, ``off`` or empty say no, any
  other value is a :class:`ConfigError`) refuses an unsigned entry and one signed with another
  key, and an entry bound to another model: one whose structure hash (``model.sha256``), or
  weights hash (``model.weights_sha256``, recorded by ``cache export --bind-weights``), is not
  the applied model's;
- without ``require_signature``, such an entry is applied with a :class:`SignatureWarning`,
  so that a stripped signature is never quieter than a broken one;
- ``autotune.apply(..., not_before=...)`` (or ``$AUTOTUNE_NOT_BEFORE``, an ISO 8601 time or
  date; one without an offset is UTC) refuses an entry whose ``created_at`` is older: a
  signed file restored from an earlier release (a rollback) still verifies, but its signed
  time says when it was made. The time is tamper-proof only where signatures are required.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import os
from collections.abc import Mapping
from typing import Any

from autotune.runtime._compile_config import ConfigError
from autotune.runtime._schema import parse_utc

KEY_ENV = "AUTOTUNE_SIGNING_KEY"
REQUIRE_ENV = "AUTOTUNE_REQUIRE_SIGNATURE"
NOT_BEFORE_ENV = "AUTOTUNE_NOT_BEFORE"
ALG = "hmac-sha256"
KEYS = ("alg", "key_id", "value")
MIN_KEY_CHARS = 16
YES = ("1", "true", "yes", "on")
NO = ("", "0", "false", "no", "off")
# What an entry without a readable time counts as: older than any other.
OLDEST = datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)


class SignatureWarning(UserWarning):
    """An entry applied although this process's key does not verify it (unsigned, or signed
    with another key), because no signature is required."""


def key() -> bytes | None:
    """The signing key from the environment, or None when it is not set.

    Raises:
        ConfigError: It is set but shorter than :data:`MIN_KEY_CHARS` characters.
    """
    text = os.environ.get(KEY_ENV)
    if not text:
        return None
    if len(text) < MIN_KEY_CHARS:
        raise ConfigError(
            f"${KEY_ENV} is {len(text)} characters long; a signing key has at least "
            f"{MIN_KEY_CHARS} (e.g. `python -c 'import secrets; print(secrets.token_hex(32))'`)"
        )
    return text.encode("utf-8")


def required(explicit: bool | None) -> bool:
    """Whether a signature is required: ``explicit`` when given, else
    ``$AUTOTUNE_REQUIRE_SIGNATURE`` read strictly (see the module's docstring).

    Raises:
        ConfigError: The variable holds anything else; a word meant to require a signature
            must never be read as "not required".
    """
    if explicit is not None:
        return explicit
    text = os.environ.get(REQUIRE_ENV, "")
    word = text.strip().lower()
    if word in YES or word in NO:
        return word in YES
    raise ConfigError(
        f"${REQUIRE_ENV} is {text!r}, which says neither yes nor no: set it to "
        f"{', '.join(YES)} (require a signature) or {', '.join(repr(w) for w in NO)} (do not)"
    )


def key_id(secret: bytes) -> str:
    """Names a key without revealing it: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(secret).hexdigest()[:16]


def sign(entry: Mapping[str, Any], secret: bytes) -> dict[str, str]:
    """The ``signature`` object of ``entry`` (its JSON form; a ``signature`` in it is left out)."""
    mac = hmac.new(secret, _canonical(entry), hashlib.sha256).hexdigest()
    return {"alg": ALG, "key_id": key_id(secret), "value": mac}


def problem(entry: Mapping[str, Any], secret: bytes) -> str | None:
    """Why ``entry`` is not signed by ``secret`` (unsigned, another key, changed since); None
    when it is."""
    signature = entry.get("signature")
    if not isinstance(signature, Mapping):
        return "it is not signed"
    if signature.get("key_id") != key_id(secret):
        return f"it is signed with another key ({signature.get('key_id')})"
    expected = sign(entry, secret)["value"]
    if not hmac.compare_digest(str(signature.get("value")), expected):
        return "its signature does not match its content: it was changed after it was signed"
    return None


def not_before(explicit: str | datetime.datetime | None) -> datetime.datetime | None:
    """The oldest ``created_at`` an applied entry may have: ``explicit`` when given, else
    ``$AUTOTUNE_NOT_BEFORE``; None when neither says.

    Raises:
        ConfigError: The value is not an ISO 8601 time or date.
    """
    if isinstance(explicit, datetime.datetime):
        utc = datetime.timezone.utc
        return explicit if explicit.tzinfo is not None else explicit.replace(tzinfo=utc)
    where, text = "not_before", explicit
    if text is None:
        where, text = f"${NOT_BEFORE_ENV}", os.environ.get(NOT_BEFORE_ENV, "")
        if not text.strip():
            return None
    when = parse_utc(text.strip())
    if when is None:
        raise ConfigError(
            f"{where} is {text!r}; it takes an ISO 8601 time like 2026-01-31T12:00:00+00:00 "
            "or a date like 2026-01-31 (without an offset, UTC): the oldest created_at of an "
            "entry this process may apply"
        )
    return when


def _canonical(entry: Mapping[str, Any]) -> bytes:
    content = {k: v for k, v in entry.items() if k != "signature"}
    return json.dumps(content, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
