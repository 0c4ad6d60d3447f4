"""Signed best-config files: an HMAC over each entry (its config, its decision, the SHA-256 of
every artifact it ships), so that production can refuse a file nobody holding the key wrote.

Standard library only. ``$AUTOTUNE_SIGNING_KEY`` holds the key (at least 16 characters, the same
on the machines that write files and those that apply them). With it set, every best-config
file autotune writes (``search``, ``finalize``, ``merge``, ``cache export``) signs each of its
entries, and every file it reads has the entries signed with this key checked: one changed
after it was signed is refused. ``autotune.apply(..., require_signature=True)`` (or
``$AUTOTUNE_REQUIRE_SIGNATURE=1``) also refuses an unsigned entry. The artifacts' SHA-256 are
inside the signed entry, so a signed file vouches for its cache and its AOTInductor package.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Mapping
from typing import Any

from autotune.runtime._compile_config import ConfigError

KEY_ENV = "AUTOTUNE_SIGNING_KEY"
REQUIRE_ENV = "AUTOTUNE_REQUIRE_SIGNATURE"
ALG = "hmac-sha256"
KEYS = ("alg", "key_id", "value")
MIN_KEY_CHARS = 16


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
    """Whether a signature is required: ``explicit`` when given, else the environment."""
    if explicit is not None:
        return explicit
    return os.environ.get(REQUIRE_ENV, "").strip().lower() in ("1", "true", "yes")


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


def _canonical(entry: Mapping[str, Any]) -> bytes:
    content = {k: v for k, v in entry.items() if k != "signature"}
    return json.dumps(content, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
