"""Torch's own knobs as the installed torch declares them: which exist, the type each declares,
and whether a value fits it. One rule for both readers: :func:`autotune.apply` checks a
best-config file with it, and :mod:`autotune.space` a space file (torch and the standard
library only)."""

from __future__ import annotations

import difflib
from typing import Any

from autotune.runtime._safety import GEMM_BACKEND_LISTS, GEMM_BACKENDS, accepts, describe

__all__ = [
    "GEMM_BACKENDS", "GEMM_BACKEND_LISTS", "accepts", "declared_type", "describe", "known", "near",
    "torch_config", "wrong_type",
]  # fmt: skip


def torch_config(layer: str) -> Any:
    """``torch._inductor.config`` (layer ``"inductor"``) or ``torch._dynamo.config``."""
    if layer == "inductor":
        import torch._inductor.config as inductor_config

        return inductor_config
    import torch._dynamo.config as dynamo_config

    return dynamo_config


def known(layer: str) -> set[str]:
    """Every knob of ``layer`` the installed torch has (Inductor's ``list_options()``, and each
    config module's own table: a knob either lists is known)."""
    config = torch_config(layer)
    names = set(getattr(config, "_config", None) or {}) | set(config.get_config_copy())
    if layer == "inductor":
        from torch import _inductor

        names |= set(_inductor.list_options())
    return names


def declared_type(layer: str, name: str) -> Any:
    """The type torch declares for ``layer.name``; None when it declares none (or no knob)."""
    get_type = getattr(torch_config(layer), "get_type", None)
    try:
        return get_type(name) if get_type is not None else None
    except (AttributeError, KeyError):
        return None


def wrong_type(layer: str, name: str, value: Any) -> str | None:
    """The declared type ``value`` does not fit, described (e.g. ``"int | None"``); None when it
    fits, or when the type is too rich to judge."""
    declared = declared_type(layer, name)
    if declared is None or accepts(declared, value) is not False:
        return None
    return describe(declared)


def near(layer: str, name: str) -> str | None:
    """The known knob of ``layer`` closest to ``name``, if one is close."""
    found = difflib.get_close_matches(name, sorted(known(layer)), n=1)
    return found[0] if found else None
