"""What a best-config entry must show before :func:`autotune.apply` compiles it: the signature
the operator requires, an age no older than ``not_before``, and the model it was tuned on (see
:mod:`autotune.runtime.signing`). Standard library and torch only."""

from __future__ import annotations

import datetime
import warnings

import torch

from autotune._printable import printable
from autotune.runtime import signing
from autotune.runtime.config import BestConfig, ConfigError, created_time, entry_label
from autotune.runtime.fingerprint import model_mismatches


def vouched(
    best: BestConfig,
    required: bool | None,
    not_before: str | datetime.datetime | None = None,
) -> bool:
    """Refuses ``best`` when its signature is required and missing or not this key's, or when
    it is older than ``not_before``; warns when a key is set and does not verify it. Returns
    whether a signature is required."""
    must = signing.required(required)
    secret = signing.key()
    if must and secret is None:
        raise ConfigError(
            "autotune.apply(require_signature=True): a signature is required, but "
            f"${signing.KEY_ENV} is not set here; set it to the key the file was signed with."
        )
    why = None if secret is None else signing.problem(best.to_dict(), secret)
    if why is not None and must:
        raise ConfigError(printable(
            f"autotune.apply(require_signature=True): the entry for {entry_label(best)} is "
            f"refused: {why}. Write the file where ${signing.KEY_ENV} holds the key "
            "(autotune search, finalize, merge or cache export sign what they write)."
        ))  # fmt: skip
    if why is not None:
        warnings.warn(
            signing.SignatureWarning(printable(
                f"autotune.apply: the entry for {entry_label(best)} is applied although "
                f"${signing.KEY_ENV} does not verify it: {why}. Nothing vouches for it; "
                "require_signature=True (or $AUTOTUNE_REQUIRE_SIGNATURE=1) refuses such an "
                "entry."
            )),
            stacklevel=3,
        )  # fmt: skip
    _refuse_older(best, signing.not_before(not_before))
    return must


def _refuse_older(best: BestConfig, limit: datetime.datetime | None) -> None:
    if limit is None or created_time(best) >= limit:
        return
    raise ConfigError(printable(
        f"autotune.apply(not_before={limit.isoformat()}): the entry for {entry_label(best)} "
        f"was made at {best.created_at!r}, before that: an older file was put in place of "
        "the current one (a rollback), or this one was not updated. Ship the file of the "
        "current release, or lower not_before ($AUTOTUNE_NOT_BEFORE)."
    ))  # fmt: skip


def model_differences(
    model: torch.nn.Module, best: BestConfig, required: bool, check_environment: bool
) -> list[str]:
    """Refuses, where a signature is required, an entry bound to another model (structure or
    weights); otherwise returns the differences, for the warning of ``check_environment``."""
    if not (required or check_environment):
        return []
    lines = model_mismatches(best.model, model)
    if required and lines:
        details = "\n".join(f"  - {line}" for line in lines)
        raise ConfigError(printable(
            f"autotune.apply(require_signature=True): the entry for {entry_label(best)} is "
            f"refused: it is bound to another model than the one applied:\n{details}\nApply it "
            "to the model it was tuned on (with its weights loaded), or tune this one "
            "(autotune search)."
        ))  # fmt: skip
    return lines
